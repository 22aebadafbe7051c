// SPDX-License-Identifier: Apache-2.0
// Portable gemm_q8: the reference every faster kernel must match bit for bit. It reads operands
// of either grouping element by element.
#include <algorithm>

#include "kernels/gemm_q8_kernels.h"

namespace onebit {

void gemm_q8_blocks_portable(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                             int64_t block_end, int32_t* acc, int64_t acc_stride, const FusedFloatOutput*) {
  const int64_t n_end = std::min(block_end * kBlockN, w.N);
  for (int64_t m = 0; m < x.M; ++m) {
    for (int64_t n = block_begin * kBlockN; n < n_end; ++n) {
      uint32_t dot = 0;  // wraps modulo 2^32 like the SIMD kernels' adds; the fold undoes nothing else
      for (int64_t k = 0; k < w.K; ++k) dot += uint32_t(x.at(m, k) * int32_t(w.at(k, n)));
      const auto col = static_cast<size_t>(n);
      acc[m * acc_stride + n] = fold_zero_points(int32_t(dot), w.zero_point[col], x.row_sum[static_cast<size_t>(m)],
                                                 x.zero_point, w.col_sum[col], w.K);
    }
  }
}

}  // namespace onebit
