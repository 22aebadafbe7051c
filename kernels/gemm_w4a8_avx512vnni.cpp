// SPDX-License-Identifier: Apache-2.0
// AVX-512 VNNI W4A8 kernel: the ymm kernel of gemm_w4a8_ymm.h with VnniDot's EVEX vpdpbusd (a
// tile is 8 columns, one ymm register of int32). Run only where cpu_features() reports it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_w4a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")

#include "kernels/gemm_w4a8_vnni_dot.h"
#include "kernels/gemm_w4a8_ymm.h"

namespace onebit {

void gemm_w4a8_tiles_avx512vnni(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin,
                                int64_t tile_end, const float* bias, float* y, int64_t y_stride) {
  gemm_w4a8_tiles_ymm<VnniDot</*kEvex=*/true>>(x, w, tile_begin, tile_end, bias, y, y_stride);
}

}  // namespace onebit

#pragma GCC pop_options
