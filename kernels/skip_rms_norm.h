// SPDX-License-Identifier: Apache-2.0
// com.microsoft SkipSimplifiedLayerNormalization, float32, as ORT's CPU kernel rounds it (ORT 1.20.1
// to 1.32, checked bit for bit in test/python/test_skip_norm.py): per row, sum = (input + skip) + bias,
// the squares summed in order in float, denom = sqrt(Σ sum² / hidden + epsilon), out = (sum / denom)
// · gamma. The in-order sum is what makes it equal to ORT's; about half a µs a row of 576.
#pragma once
#include <cstddef>

namespace onebit {

struct SkipNormCall {
  const float* input = nullptr;  // [rows, hidden]
  const float* skip = nullptr;   // [skip_rows, hidden]: row r adds skip row r % skip_rows (ORT's broadcast)
  const float* bias = nullptr;   // [hidden] or null
  const float* gamma = nullptr;  // [hidden]
  float epsilon = 0;
  size_t hidden = 0;
  size_t skip_rows = 0;
  float* sum = nullptr;  // [rows, hidden] input + skip + bias, or null when nothing reads it
  float* out = nullptr;  // [rows, hidden]
};

// Rows [first, end) of the call.
void skip_rms_norm(const SkipNormCall& call, size_t first, size_t end);

}  // namespace onebit
