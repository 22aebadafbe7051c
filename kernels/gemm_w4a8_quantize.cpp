// SPDX-License-Identifier: Apache-2.0
// The W4A8 activation quantizer: per row and k-block, symmetric int8 with scale max|x|/127, the
// rule of ORT's MatMulNBits CompInt8 path (so the integers it feeds the block dots match ORT's).
// An AVX2 form where the CPU has it: without SSE4.1 every nearbyint is a libm call, which cost
// as much as the kernel's weight stream at one row.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu_features.h"
#include "kernels/gemm_w4a8_kernels.h"

namespace onebit {

namespace {

// 127/amax, not 1/scale: the factor ORT's quantizer multiplies by (1/scale differs in the last
// bit for some amax, and then so do a few of the integers; seen against ORT). Where it is not
// finite (amax 0, or below 127/FLT_MAX ~ 3.7e-37) the block quantizes to zeros: multiplied by an
// infinite factor every value would saturate and a 0 would become NaN.
float inverse_scale(float amax) {
  const float inverse = 127.0f / amax;
  return std::isfinite(inverse) ? inverse : 0.0f;
}

// Values [from, count) of one block; returns their Σq. nearbyint rounds half to even in the
// default rounding mode; |x·inverse| <= 127 up to one rounding, so the clamp only guards that ulp.
int32_t quantize_tail(const float* in, int64_t from, int64_t count, float inverse, int8_t* out) {
  int32_t sum = 0;
  for (int64_t i = from; i < count; ++i) {
    const float q = std::nearbyint(in[i] * inverse);
    out[i] = q == q ? static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)) : 0;  // NaN input: no cast of NaN
    sum += out[i];
  }
  return sum;
}

void shape(int64_t M, int64_t K, int64_t block_size, BlockQuantizedActivation& a) {
  a.M = M;
  a.K = K;
  a.block_size = block_size;
  a.q.assign(static_cast<size_t>(M * a.row_stride()), 0);
  a.scale.resize(static_cast<size_t>(M * a.k_blocks()));
  a.sum.resize(static_cast<size_t>(M * a.k_blocks()));
  a.row_groups.clear();
}

__attribute__((target("avx2"))) void quantize_avx2(const float* x, int64_t M, int64_t K, int64_t block_size,
                                                   BlockQuantizedActivation& a) {
  shape(M, K, block_size, a);
  const int64_t k_blocks = a.k_blocks();
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t b = 0; b < k_blocks; ++b) {
      const float* in = x + m * K + b * block_size;
      const int64_t count = std::min(block_size, K - b * block_size), whole = count / 8 * 8;
      __m256 vmax = _mm256_setzero_ps();
      for (int64_t i = 0; i < whole; i += 8)
        vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(in + i), magnitude));
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, vmax);
      float amax = *std::max_element(lanes, lanes + 8);
      for (int64_t i = whole; i < count; ++i) amax = std::max(amax, std::fabs(in[i]));
      const float inverse = inverse_scale(amax);
      const __m256 vinverse = _mm256_set1_ps(inverse);
      int8_t* out = a.q.data() + m * a.row_stride() + b * block_size;
      __m256i vsum = _mm256_setzero_si256();
      for (int64_t i = 0; i < whole; i += 8) {
        // vcvtps2dq rounds as MXCSR says: half to even by default, as nearbyint.
        const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(in + i), vinverse));
        vsum = _mm256_add_epi32(vsum, q);
        const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_packs_epi16(words, words));
      }
      alignas(32) int32_t sums[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(sums), vsum);
      int32_t sum = 0;
      for (int32_t s : sums) sum += s;
      a.scale[static_cast<size_t>(m * k_blocks + b)] = amax / 127.0f;
      a.sum[static_cast<size_t>(m * k_blocks + b)] = sum + quantize_tail(in, whole, count, inverse, out);
    }
  }
}

}  // namespace

void quantize_activation_blocks_portable(const float* x, int64_t M, int64_t K, int64_t block_size,
                                         BlockQuantizedActivation& a) {
  shape(M, K, block_size, a);
  const int64_t k_blocks = a.k_blocks();
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t b = 0; b < k_blocks; ++b) {
      const float* in = x + m * K + b * block_size;
      const int64_t count = std::min(block_size, K - b * block_size);
      float amax = 0.0f;
      for (int64_t i = 0; i < count; ++i) amax = std::max(amax, std::fabs(in[i]));
      int8_t* out = a.q.data() + m * a.row_stride() + b * block_size;
      a.scale[static_cast<size_t>(m * k_blocks + b)] = amax / 127.0f;
      a.sum[static_cast<size_t>(m * k_blocks + b)] = quantize_tail(in, 0, count, inverse_scale(amax), out);
    }
  }
}

void quantize_activation_blocks(const float* x, int64_t M, int64_t K, int64_t block_size, BlockQuantizedActivation& a) {
  (cpu_features().avx2 ? quantize_avx2 : quantize_activation_blocks_portable)(x, M, K, block_size, a);
}

}  // namespace onebit
