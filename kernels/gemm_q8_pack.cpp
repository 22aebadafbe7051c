// SPDX-License-Identifier: Apache-2.0
#include "kernels/gemm_q8.h"

namespace onebit {

PackedWeights pack_weights(const void* w, QType type, int64_t K, int64_t N, bool w_is_nk,
                           const int32_t* zero_points, int64_t zero_point_count) {
  PackedWeights p;
  p.K = K;
  p.N = N;
  p.blocks.assign(static_cast<size_t>(p.n_blocks() * p.k_pairs() * 2 * kBlockN), 0);
  p.zero_point.assign(static_cast<size_t>(N), 0);
  p.col_sum.assign(static_cast<size_t>(N), 0);
  const int32_t shift = shift_for(type);
  const auto* w8 = static_cast<const uint8_t*>(w);
  for (int64_t n = 0; n < N; ++n) {
    int32_t sum = 0;
    int8_t* column = p.blocks.data() + (n / kBlockN) * p.k_pairs() * 2 * kBlockN + (n % kBlockN) * 2;
    for (int64_t k = 0; k < K; ++k) {
      const size_t src = static_cast<size_t>(w_is_nk ? n * K + k : k * N + n);
      const int32_t value = type == QType::Uint8 ? int32_t(w8[src]) : int32_t(int8_t(w8[src]));
      const auto shifted = static_cast<int8_t>(value - shift);
      column[(k / 2) * 2 * kBlockN + k % 2] = shifted;
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

PreparedActivation prepare_activation(const Activation& x, int64_t K) {
  PreparedActivation a;
  a.M = x.M;
  a.K = K;
  a.row_stride = (K + 1) / 2 * 2;
  const int32_t shift = shift_for(x.type);
  a.zero_point = x.zero_point - shift;
  a.values.assign(static_cast<size_t>(a.M * a.row_stride), 0);
  a.row_sum.assign(static_cast<size_t>(a.M), 0);
  const auto* x8 = static_cast<const uint8_t*>(x.data);
  for (int64_t m = 0; m < a.M; ++m) {
    int16_t* row = a.values.data() + m * a.row_stride;
    int32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t raw = x8[m * K + k];
      row[k] = static_cast<int16_t>(x.type == QType::Uint8 ? int32_t(raw) - 128 : int32_t(int8_t(raw)));
      sum += row[k];
    }
    a.row_sum[static_cast<size_t>(m)] = sum;
  }
  return a;
}

}  // namespace onebit
