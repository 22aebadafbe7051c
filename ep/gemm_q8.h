// SPDX-License-Identifier: Apache-2.0
// gemm_q8: exact int32 accumulators acc[M,N] = (x_q - zp_x) · (W_q - zp_w[n]).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant_types.h"

namespace onebit {

// Largest K for which every accumulator fits in int32 (|x - zx|, |w - zw| <= 255).
constexpr int64_t kMaxK = INT32_MAX / (255 * 255);

// Weights packed once at compile time: N rows of K int8 (column n of W is row n here,
// uint8 shifted by -128), with the per-column zero points (shifted alike) and column sums
// that fold the zero-point terms out of the inner loop.
struct PackedWeights {
  int64_t K = 0;
  int64_t N = 0;
  std::vector<int8_t> w_nk;
  std::vector<int32_t> zero_point;  // per column
  std::vector<int32_t> col_sum;     // sum over k of w_nk[n][k]
};

// w points at K×N (or N×K when w_is_nk) values of type `type`. zero_points holds 1 value
// (per tensor) or N values (per output column); null means zero.
PackedWeights pack_weights(const void* w, QType type, int64_t K, int64_t N, bool w_is_nk,
                           const int32_t* zero_points, int64_t zero_point_count);

struct Activation {
  const void* data = nullptr;  // M×K row-major
  QType type = QType::Int8;
  int32_t zero_point = 0;      // unshifted, as in the model
  int64_t M = 0;
};

// Portable reference kernel: acc must hold M×N int32.
void gemm_q8_host(const Activation& x, const PackedWeights& w, int32_t* acc);

}  // namespace onebit
