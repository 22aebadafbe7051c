// SPDX-License-Identifier: Apache-2.0
#include "gemm_q8.h"

namespace onebit {

PackedWeights pack_weights(const void* w, QType type, int64_t K, int64_t N, bool w_is_nk,
                           const int32_t* zero_points, int64_t zero_point_count) {
  PackedWeights p;
  p.K = K;
  p.N = N;
  p.w_nk.resize(static_cast<size_t>(K * N));
  p.zero_point.assign(static_cast<size_t>(N), 0);
  p.col_sum.assign(static_cast<size_t>(N), 0);
  const int32_t shift = shift_for(type);
  const auto* w8 = static_cast<const uint8_t*>(w);
  for (int64_t n = 0; n < N; ++n) {
    int32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const size_t src = static_cast<size_t>(w_is_nk ? n * K + k : k * N + n);
      const int32_t value = type == QType::Uint8 ? int32_t(w8[src]) : int32_t(int8_t(w8[src]));
      const auto shifted = static_cast<int8_t>(value - shift);
      p.w_nk[static_cast<size_t>(n * K + k)] = shifted;
      sum += shifted;
    }
    p.col_sum[static_cast<size_t>(n)] = sum;
    const int32_t zp = zero_points == nullptr ? 0
                       : zero_point_count == 1 ? zero_points[0]
                                               : zero_points[n];
    p.zero_point[static_cast<size_t>(n)] = zp - shift;
  }
  return p;
}

}  // namespace onebit
