// SPDX-License-Identifier: Apache-2.0
// The kernel family behind gemm_q8_blocks, each with the same contract. The portable kernel is
// the reference every other one must match bit for bit; the tests run them all.
#pragma once
#include "kernels/gemm_q8.h"

namespace onebit {

using GemmBlocksKernel = void (*)(const PreparedActivation&, const PackedWeights&, int64_t block_begin,
                                  int64_t block_end, int32_t* acc, int64_t acc_stride);

void gemm_q8_blocks_portable(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                             int64_t block_end, int32_t* acc, int64_t acc_stride);

// AVX2 (vpmaddwd on int16 pairs: exact, no pair-sum saturation). Only call where avx2_available().
void gemm_q8_blocks_avx2(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                         int64_t block_end, int32_t* acc, int64_t acc_stride);

bool avx2_available();

// The kernel gemm_q8_blocks uses: AVX2 where the CPU has it, unless ONEBIT_KERNEL=portable.
GemmBlocksKernel selected_kernel();
const char* selected_kernel_name();

// Writes the zero-point-folded accumulators of one block of columns from raw dot products:
// acc = dot - zw[n]·rowsum[m] - zx·colsum[n] + K·zx·zw[n], in wrapping int32 (the true result fits).
inline int32_t fold_zero_points(int32_t dot, int32_t zw, int32_t row_sum, int32_t zx, int32_t col_sum, int64_t K) {
  const uint32_t total = uint32_t(dot) - uint32_t(zw) * uint32_t(row_sum) - uint32_t(zx) * uint32_t(col_sum) +
                         uint32_t(K) * uint32_t(zx) * uint32_t(zw);
  return static_cast<int32_t>(total);
}

}  // namespace onebit
