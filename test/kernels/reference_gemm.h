// SPDX-License-Identifier: Apache-2.0
// Obviously-correct references for the kernel tests. They work on the raw integer values as
// they appear in the model (no shifting, no packing) and call nothing from onebit.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace onebit_test {

// acc[m][n] = sum_k (x[m][k] - zx) * (w[k][n] - zw[n]), in int64 so it cannot overflow.
// x is M×K row-major, w is K×N row-major, zw holds N values.
inline std::vector<int64_t> reference_gemm(const std::vector<int32_t>& x, int32_t zx, const std::vector<int32_t>& w,
                                           const std::vector<int32_t>& zw, int64_t M, int64_t K, int64_t N) {
  std::vector<int64_t> acc(static_cast<size_t>(M * N), 0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      int64_t sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t xv = int64_t(x[static_cast<size_t>(m * K + k)]) - zx;
        const int64_t wv = int64_t(w[static_cast<size_t>(k * N + n)]) - zw[static_cast<size_t>(n)];
        sum += xv * wv;
      }
      acc[static_cast<size_t>(m * N + n)] = sum;
    }
  }
  return acc;
}

// The epilogue in double, in the order epilogue.h documents:
//   v = acc * scale[n] (+ bias[n]);  float: float(v);  quantized: clamp(nearbyint(v / y_scale) + y_zero_point).
struct ReferenceEpilogue {
  std::vector<double> scale;  // 1 or N values
  std::vector<double> bias;   // empty or N values
  double y_scale = 1.0;
  int32_t y_zero_point = 0;

  double value(int64_t acc, int64_t n) const {
    const double s = scale.size() == 1 ? scale[0] : scale[static_cast<size_t>(n)];
    // The product is rounded to double before the bias is added (the test target is built
    // with -ffp-contract=off so this stays two roundings, as documented).
    double v = double(acc) * s;
    if (!bias.empty()) v = v + bias[static_cast<size_t>(n)];
    return v;
  }

  float to_float(int64_t acc, int64_t n) const { return static_cast<float>(value(acc, n)); }

  // lo/hi are the output type's range, e.g. -128/127 or 0/255.
  int32_t to_quantized(int64_t acc, int64_t n, int32_t lo, int32_t hi) const {
    const double q = std::nearbyint(value(acc, n) / y_scale) + double(y_zero_point);
    return static_cast<int32_t>(std::clamp(q, double(lo), double(hi)));
  }
};

}  // namespace onebit_test
