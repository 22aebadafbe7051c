// SPDX-License-Identifier: Apache-2.0
// AVX-VNNI gemm_q8 (VEX vpdpbusd, Alder Lake and Zen 5 clients): the VNNI kernel of
// gemm_q8_vnni.h on ymm registers (8 columns per register, two per block; 16 registers).
// Compiled for these instructions only inside this file, and run only where cpu_features()
// reports them.
// Everything shared with other files is included before the target region, so that shared
// inline code keeps the default target (a copy built for this one could be the one the linker
// keeps).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_q8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avxvnni")

#include "kernels/gemm_q8_vnni.h"

namespace onebit {

void gemm_q8_blocks_avxvnni(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                            int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  gemm_q8_blocks_vnni<Ymm</*kEvex=*/false>>(x, w, block_begin, block_end, acc, acc_stride, fused);
}

}  // namespace onebit

#pragma GCC pop_options
