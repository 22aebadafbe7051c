// SPDX-License-Identifier: Apache-2.0
// AVX-512 VNNI gemm_q8: the VNNI kernel of gemm_q8_vnni.h on zmm registers (16 columns, one
// block, per register; 32 registers). Compiled for these instructions only inside this file,
// and run only where cpu_features() reports them.
// Everything shared with other files is included before the target region, so that shared
// inline code keeps the default target (a copy built for this one could be the one the linker
// keeps).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_q8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")

// GCC 12's _mm512_cvtepi32_ps passes an undefined vector as its unused merge operand, which
// -Wmaybe-uninitialized reports wherever the kernel inlines it (the fused float output).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/gemm_q8_vnni.h"
#include "kernels/gemm_q8_zmm.h"

namespace onebit {

void gemm_q8_blocks_avx512vnni(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                               int64_t block_end, int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  gemm_q8_blocks_vnni<Zmm>(x, w, block_begin, block_end, acc, acc_stride, fused);
}

}  // namespace onebit

#pragma GCC diagnostic pop
#pragma GCC pop_options
