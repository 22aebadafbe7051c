// SPDX-License-Identifier: Apache-2.0
#include "kernels/dynamic_quantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace onebit {

namespace {

struct Range {
  float lo = 0.0f;  // min(0, min x)
  float hi = 0.0f;  // max(0, max x)
  bool nan = false;
};

// Min and max are exact whatever the order, so eight lanes give the scalar loop's result; NaNs
// are left out of both and flagged.
Range range_portable(const float* x, size_t count) {
  Range r;
  for (size_t i = 0; i < count; ++i) {
    const float v = x[i];
    r.nan = r.nan || v != v;
    r.lo = v < r.lo ? v : r.lo;
    r.hi = v > r.hi ? v : r.hi;
  }
  return r;
}

__attribute__((target("avx2"))) Range range_avx2(const float* x, size_t count) {
  __m256 lo = _mm256_setzero_ps();
  __m256 hi = _mm256_setzero_ps();
  __m256 unordered = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    lo = _mm256_min_ps(v, lo);  // a NaN in v yields lo (the second operand)
    hi = _mm256_max_ps(v, hi);
  }
  alignas(32) float lo_lanes[8], hi_lanes[8];
  _mm256_store_ps(lo_lanes, lo);
  _mm256_store_ps(hi_lanes, hi);
  Range r = range_portable(x + i, count - i);
  r.nan = r.nan || _mm256_movemask_ps(unordered) != 0;
  for (int lane = 0; lane < 8; ++lane) {
    r.lo = std::min(r.lo, lo_lanes[lane]);
    r.hi = std::max(r.hi, hi_lanes[lane]);
  }
  return r;
}

// The quantization loop, written once and compiled for the baseline ISA and for AVX2 (where GCC
// vectorises it with vdivps and vroundps: the same operations, so the same results).
[[gnu::always_inline]] inline void quantize(const float* x, size_t count, float scale, float zero_point, uint8_t* x_q) {
  for (size_t i = 0; i < count; ++i) {
    float q = std::nearbyint(x[i] / scale) + zero_point;  // nearbyint: half to even
    q = q < 0.0f ? 0.0f : q;
    q = q > 255.0f ? 255.0f : q;
    x_q[i] = q == q ? static_cast<uint8_t>(q) : 0;  // Inf/Inf is NaN: 0, as ORT's kernel
  }
}

void quantize_portable(const float* x, size_t count, float scale, float zero_point, uint8_t* x_q) {
  quantize(x, count, scale, zero_point, x_q);
}

__attribute__((target("avx2"))) void quantize_avx2(const float* x, size_t count, float scale, float zero_point,
                                                   uint8_t* x_q) {
  quantize(x, count, scale, zero_point, x_q);
}

}  // namespace

DynamicQuantization dynamic_quantize(const float* x, size_t count, uint8_t* x_q) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  const Range r = (avx2 ? range_avx2 : range_portable)(x, count);
  DynamicQuantization q;
  if (r.nan) {
    q.scale = std::numeric_limits<float>::quiet_NaN();
    q.zero_point = 255;
    std::fill(x_q, x_q + count, uint8_t{0});
    return q;
  }
  q.scale = r.hi == r.lo ? 1.0f : (r.hi - r.lo) / 255.0f;
  // The clamp's argument order keeps ORT's answer for -Inf (NaN here: 255).
  const float zero_point = std::nearbyint(std::max(0.0f, std::min(255.0f, 0.0f - r.lo / q.scale)));
  q.zero_point = static_cast<int32_t>(zero_point);
  (avx2 ? quantize_avx2 : quantize_portable)(x, count, q.scale, zero_point, x_q);
  return q;
}

}  // namespace onebit
