// SPDX-License-Identifier: Apache-2.0
// AVX-VNNI W4A8 kernel (Alder Lake and Zen 5 clients): the ymm kernel of gemm_w4a8_ymm.h with
// VnniDot's VEX vpdpbusd. Run only where cpu_features() reports it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_w4a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avxvnni")

#include "kernels/gemm_w4a8_vnni_dot.h"
#include "kernels/gemm_w4a8_ymm.h"

namespace onebit {

void gemm_w4a8_tiles_avxvnni(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin,
                             int64_t tile_end, const float* bias, float* y, int64_t y_stride) {
  gemm_w4a8_tiles_ymm<VnniDot</*kEvex=*/false>>(x, w, tile_begin, tile_end, bias, y, y_stride);
}

}  // namespace onebit

#pragma GCC pop_options
