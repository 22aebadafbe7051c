// SPDX-License-Identifier: Apache-2.0
#include "kernels/skip_rms_norm.h"

#include <cmath>

namespace onebit {

void skip_rms_norm(const SkipNormCall& call, size_t first, size_t end) {
  const size_t hidden = call.hidden;
  for (size_t r = first; r < end; ++r) {
    const float* input = call.input + r * hidden;
    const float* skip = call.skip + (r % call.skip_rows) * hidden;
    float* out = call.out + r * hidden;
    float* sum = call.sum ? call.sum + r * hidden : out;  // the sum kept where it is read, else in out
    float squares = 0;  // in order, as ORT's kernel sums: another order rounds otherwise
    for (size_t h = 0; h < hidden; ++h) {
      float value = input[h] + skip[h];
      if (call.bias) value += call.bias[h];
      sum[h] = value;
      squares += value * value;
    }
    const float denom = std::sqrt(squares / static_cast<float>(hidden) + call.epsilon);
    for (size_t h = 0; h < hidden; ++h) out[h] = sum[h] / denom * call.gamma[h];
  }
}

}  // namespace onebit
