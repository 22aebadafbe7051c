// SPDX-License-Identifier: Apache-2.0
#include "kernels/skip_rms_norm.h"

#include <cmath>

namespace onebit {

namespace {

// kRows rows from `first`: each row's squares summed in order (ORT's rounding), the rows' sums
// interleaved so that their additions overlap instead of waiting on one another.
template <size_t kRows>
void rows_of(const SkipNormCall& call, size_t first) {
  const size_t hidden = call.hidden;
  const float* input[kRows];
  const float* skip[kRows];
  float* sum[kRows];
  float* out[kRows];
  float squares[kRows] = {};
  for (size_t i = 0; i < kRows; ++i) {
    const size_t r = first + i;
    input[i] = call.input + r * hidden;
    skip[i] = call.skip + (r % call.skip_rows) * hidden;
    out[i] = call.out + r * hidden;
    sum[i] = call.sum ? call.sum + r * hidden : out[i];  // the sum kept where it is read, else in out
  }
  for (size_t h = 0; h < hidden; ++h)
    for (size_t i = 0; i < kRows; ++i) {
      float value = input[i][h] + skip[i][h];
      if (call.bias) value += call.bias[h];
      sum[i][h] = value;
      squares[i] += value * value;
    }
  for (size_t i = 0; i < kRows; ++i) {
    const float denom = std::sqrt(squares[i] / static_cast<float>(hidden) + call.epsilon);
    for (size_t h = 0; h < hidden; ++h) out[i][h] = sum[i][h] / denom * call.gamma[h];
  }
}

}  // namespace

void skip_rms_norm(const SkipNormCall& call, size_t first, size_t end) {
  size_t r = first;
  for (; r + 4 <= end; r += 4) rows_of<4>(call, r);
  for (; r < end; ++r) rows_of<1>(call, r);
}

}  // namespace onebit
