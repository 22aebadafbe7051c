// SPDX-License-Identifier: Apache-2.0
#include "epilogue.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onebit {

namespace {

template <typename T>
void requantize(const Epilogue& e, const int32_t* acc, int64_t M, int64_t N, T* out) {
  constexpr double lo = double(std::numeric_limits<T>::min());
  constexpr double hi = double(std::numeric_limits<T>::max());
  const bool per_column = e.scale.size() > 1;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double v = double(acc[m * N + n]) * e.scale[per_column ? n : 0];
      if (!e.bias.empty()) v += e.bias[static_cast<size_t>(n)];
      // nearbyint rounds half to even in the default rounding mode, as ONNX requires.
      const double q = std::nearbyint(v / e.y_scale) + e.y_zero_point;
      out[m * N + n] = static_cast<T>(std::clamp(q, lo, hi));
    }
  }
}

void dequantize(const Epilogue& e, const int32_t* acc, int64_t M, int64_t N, float* out) {
  const bool per_column = e.scale.size() > 1;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double v = double(acc[m * N + n]) * e.scale[per_column ? n : 0];
      if (!e.bias.empty()) v += e.bias[static_cast<size_t>(n)];
      out[m * N + n] = static_cast<float>(v);
    }
  }
}

}  // namespace

size_t output_element_size(OutputKind kind) {
  switch (kind) {
    case OutputKind::Float32:
    case OutputKind::Int32: return 4;
    case OutputKind::Int8:
    case OutputKind::Uint8: return 1;
  }
  return 0;
}

void Epilogue::apply(const int32_t* acc, int64_t M, int64_t N, void* out) const {
  switch (kind) {
    case OutputKind::Float32: dequantize(*this, acc, M, N, static_cast<float*>(out)); break;
    case OutputKind::Int8: requantize(*this, acc, M, N, static_cast<int8_t*>(out)); break;
    case OutputKind::Uint8: requantize(*this, acc, M, N, static_cast<uint8_t*>(out)); break;
    case OutputKind::Int32: std::copy(acc, acc + M * N, static_cast<int32_t*>(out)); break;
  }
}

}  // namespace onebit
