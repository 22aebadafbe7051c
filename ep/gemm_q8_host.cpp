// SPDX-License-Identifier: Apache-2.0
// Portable gemm_q8: the reference every faster kernel must match bit for bit.
#include <vector>

#include "gemm_q8.h"

namespace onebit {

void gemm_q8_host(const Activation& x, const PackedWeights& w, int32_t* acc) {
  const int64_t K = w.K;
  const int64_t N = w.N;
  const int32_t shift = shift_for(x.type);
  const int64_t zx = x.zero_point - shift;
  const auto* x8 = static_cast<const uint8_t*>(x.data);
  std::vector<int8_t> row(static_cast<size_t>(K));
  for (int64_t m = 0; m < x.M; ++m) {
    int32_t row_sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t raw = x8[m * K + k];
      const int32_t value = x.type == QType::Uint8 ? int32_t(raw) : int32_t(int8_t(raw));
      row[static_cast<size_t>(k)] = static_cast<int8_t>(value - shift);
      row_sum += row[static_cast<size_t>(k)];
    }
    for (int64_t n = 0; n < N; ++n) {
      const int8_t* wn = w.w_nk.data() + n * K;
      int32_t dot = 0;
      for (int64_t k = 0; k < K; ++k) dot += int32_t(row[static_cast<size_t>(k)]) * int32_t(wn[k]);
      // (x - zx)·(w - zw) = x·w - zw·Σx - zx·Σw + K·zx·zw; the total fits int32 (K <= kMaxK).
      const int64_t zw = w.zero_point[static_cast<size_t>(n)];
      const int64_t total = int64_t(dot) - zw * row_sum - zx * w.col_sum[static_cast<size_t>(n)] + K * zx * zw;
      acc[m * N + n] = static_cast<int32_t>(total);
    }
  }
}

}  // namespace onebit
