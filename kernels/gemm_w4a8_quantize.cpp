// SPDX-License-Identifier: Apache-2.0
// The W4A8 activation quantizer: per row and k-block, symmetric int8 with scale max|x|/127, the
// rule of ORT's MatMulNBits CompInt8 path (so the integers it feeds the block dots match ORT's).
#include <algorithm>
#include <cmath>

#include "kernels/gemm_w4a8.h"

namespace onebit {

void quantize_activation_blocks(const float* x, int64_t M, int64_t K, int64_t block_size,
                                BlockQuantizedActivation& a) {
  a.M = M;
  a.K = K;
  a.block_size = block_size;
  const int64_t k_blocks = a.k_blocks(), stride = a.row_stride();
  a.q.assign(static_cast<size_t>(M * stride), 0);
  a.scale.resize(static_cast<size_t>(M * k_blocks));
  a.sum.resize(static_cast<size_t>(M * k_blocks));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t b = 0; b < k_blocks; ++b) {
      const float* in = x + m * K + b * block_size;
      const int64_t count = std::min(block_size, K - b * block_size);
      float amax = 0.0f;
      for (int64_t i = 0; i < count; ++i) amax = std::max(amax, std::fabs(in[i]));
      const float scale = amax / 127.0f;
      // 127/amax, not 1/scale: the factor ORT's quantizer multiplies by (1/scale differs in the
      // last bit for some amax, and then so do a few of the integers; seen against ORT).
      const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
      int8_t* out = a.q.data() + m * stride + b * block_size;
      int32_t sum = 0;
      for (int64_t i = 0; i < count; ++i) {
        // nearbyint rounds half to even in the default rounding mode; |x·inverse| <= 127 up to
        // one rounding, so the clamp only guards that last ulp.
        const float v = std::clamp(std::nearbyint(in[i] * inverse), -127.0f, 127.0f);
        out[i] = static_cast<int8_t>(v);
        sum += out[i];
      }
      a.scale[static_cast<size_t>(m * k_blocks + b)] = scale;
      a.sum[static_cast<size_t>(m * k_blocks + b)] = sum;
    }
  }
}

}  // namespace onebit
