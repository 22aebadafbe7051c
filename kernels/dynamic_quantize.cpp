// SPDX-License-Identifier: Apache-2.0
#include "kernels/dynamic_quantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu_features.h"

namespace onebit {

namespace {

// Min and max are exact whatever the order, so eight lanes give the scalar loop's result; NaNs
// are left out of both and flagged.
FloatRange range_portable(const float* x, size_t count) {
  FloatRange r;
  for (size_t i = 0; i < count; ++i) {
    const float v = x[i];
    r.nan = r.nan || v != v;
    r.lo = v < r.lo ? v : r.lo;
    r.hi = v > r.hi ? v : r.hi;
  }
  return r;
}

__attribute__((target("avx2"))) FloatRange range_avx2(const float* x, size_t count) {
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
  FloatRange r = range_portable(x + i, count - i);
  r.nan = r.nan || _mm256_movemask_ps(unordered) != 0;
  for (int lane = 0; lane < 8; ++lane) {
    r.lo = std::min(r.lo, lo_lanes[lane]);
    r.hi = std::max(r.hi, hi_lanes[lane]);
  }
  return r;
}

// GCC 12's AVX-512 float intrinsics (min, max, roundscale) pass an undefined vector as their
// unused merge operand, which -Wmaybe-uninitialized reports in the two functions that use them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Four accumulators per bound, so that the loop is not one chain of dependent vminps/vmaxps.
__attribute__((target("avx512f"))) FloatRange range_avx512(const float* x, size_t count) {
  constexpr int kChains = 4;
  __m512 lo[kChains], hi[kChains];
  for (int c = 0; c < kChains; ++c) lo[c] = hi[c] = _mm512_setzero_ps();
  __mmask16 unordered = 0;
  size_t i = 0;
  for (; i + 16 * kChains <= count; i += 16 * kChains) {
    for (int c = 0; c < kChains; ++c) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * c);
      unordered |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      lo[c] = _mm512_min_ps(v, lo[c]);  // a NaN in v yields lo[c] (the second operand)
      hi[c] = _mm512_max_ps(v, hi[c]);
    }
  }
  FloatRange r = range_avx2(x + i, count - i);
  r.nan = r.nan || unordered != 0;
  alignas(64) float lanes[2][16];
  for (int c = 0; c < kChains; ++c) {
    _mm512_store_ps(lanes[0], lo[c]);
    _mm512_store_ps(lanes[1], hi[c]);
    for (int lane = 0; lane < 16; ++lane) {
      r.lo = std::min(r.lo, lanes[0][lane]);
      r.hi = std::max(r.hi, lanes[1][lane]);
    }
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

// The same operations as quantize() on 16 lanes, as int32 lanes: vdivps, round to nearest even,
// + zero point; max(q, 0) turns NaN into 0 (vmaxps returns its second operand for NaN), as the
// scalar code's final test does.
__attribute__((target("avx512f"), always_inline)) inline __m512i quantize16(__m512 x, __m512 scale, __m512 zero_point) {
  const __m512 q = _mm512_add_ps(
      _mm512_roundscale_ps(_mm512_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zero_point);
  return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(q, _mm512_setzero_ps()), _mm512_set1_ps(255.0f)));
}

// quantize16 over x; the clamped integral values narrow to bytes with vpmovusdb.
__attribute__((target("avx512f"))) void quantize_avx512(const float* x, size_t count, float scale, float zero_point,
                                                        uint8_t* x_q) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512 zp = _mm512_set1_ps(zero_point);
  size_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(x_q + i),
                     _mm512_cvtusepi32_epi8(quantize16(_mm512_loadu_ps(x + i), s, zp)));
  quantize(x + i, count - i, scale, zero_point, x_q + i);
}

// quantize16 on one row of K values, stored as bytes into `row` (and x_q when
// not null) with the row's sum; the tail in masked lanes, whose values stay out of the sum.
__attribute__((target("avx512f,avx512bw,avx512vl"))) int32_t quantize_row_avx512(const float* x, int64_t K, float scale,
                                                                                 float zero_point, uint8_t* row,
                                                                                 uint8_t* x_q) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512 zp = _mm512_set1_ps(zero_point);
  __m512i sum = _mm512_setzero_si512();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m512i value = quantize16(_mm512_loadu_ps(x + k), s, zp);
    sum = _mm512_add_epi32(sum, value);
    const __m128i bytes = _mm512_cvtusepi32_epi8(value);  // narrowed in registers: a store of it is cheap
    _mm_storeu_si128(reinterpret_cast<__m128i*>(row + k), bytes);
    if (x_q != nullptr) _mm_storeu_si128(reinterpret_cast<__m128i*>(x_q + k), bytes);
  }
  if (k < K) {
    const auto lanes = static_cast<__mmask16>((1u << (K - k)) - 1);
    const __m512i value = quantize16(_mm512_maskz_loadu_ps(lanes, x + k), s, zp);
    sum = _mm512_mask_add_epi32(sum, lanes, sum, value);
    const __m128i bytes = _mm512_cvtusepi32_epi8(value);
    _mm_mask_storeu_epi8(row + k, lanes, bytes);
    if (x_q != nullptr) _mm_mask_storeu_epi8(x_q + k, lanes, bytes);
  }
  return _mm512_reduce_add_epi32(sum);
}
#pragma GCC diagnostic pop

// quantize() on 8 lanes as int32: the same vdivps, round to nearest even, + zero point, max(q, 0)
// (NaN -> 0: vmaxps returns its second operand), min 255.
__attribute__((target("avx2"), always_inline)) inline __m256i quantize8_avx2(const float* x, __m256 scale,
                                                                             __m256 zero_point) {
  const __m256 q = _mm256_add_ps(
      _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x), scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
      zero_point);
  return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(q, _mm256_setzero_ps()), _mm256_set1_ps(255.0f)));
}

// 16 values as int16 in order; vpackssdw packs within 128-bit lanes (x0-3 x8-11 x4-7 x12-15),
// vpermq puts them back.
__attribute__((target("avx2"), always_inline)) inline __m256i quantize16_avx2(const float* x, __m256 scale,
                                                                              __m256 zero_point) {
  return _mm256_permute4x64_epi64(
      _mm256_packs_epi32(quantize8_avx2(x, scale, zero_point), quantize8_avx2(x + 8, scale, zero_point)), 0xD8);
}

// One row of K values quantized into `row` in a's grouping (Pairs: int16 values minus 128; Quads:
// the uint8 values) and into x_q when not null; returns the row sum of what `row` holds. The last
// K % 16 values go through quantize(), whose results are the same.
template <typename T>
__attribute__((target("avx2"))) int32_t quantize_row_avx2(const float* x, int64_t K, float scale, float zero_point,
                                                          T* row, uint8_t* x_q) {
  constexpr bool kPairs = std::is_same_v<T, int16_t>;
  const __m256 s = _mm256_set1_ps(scale);
  const __m256 zp = _mm256_set1_ps(zero_point);
  __m256i sum = _mm256_setzero_si256();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m256i value = quantize16_avx2(x + k, s, zp);
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(value, _mm256_set1_epi16(1)));
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(value), _mm256_extracti128_si256(value, 1));
    if constexpr (kPairs)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + k), _mm256_sub_epi16(value, _mm256_set1_epi16(128)));
    else
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + k), bytes);
    if (x_q != nullptr) _mm_storeu_si128(reinterpret_cast<__m128i*>(x_q + k), bytes);
  }
  const __m128i halves = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  const __m128i pairs = _mm_add_epi32(halves, _mm_shuffle_epi32(halves, 0x4E));
  int32_t total = _mm_cvtsi128_si32(_mm_add_epi32(pairs, _mm_shuffle_epi32(pairs, 0xB1)));
  uint8_t tail[16];
  quantize(x + k, static_cast<size_t>(K - k), scale, zero_point, tail);
  for (int64_t t = 0; t < K - k; ++t) {
    total += tail[t];
    row[k + t] = static_cast<T>(kPairs ? tail[t] - 128 : tail[t]);
    if (x_q != nullptr) x_q[k + t] = tail[t];
  }
  return kPairs ? total - 128 * static_cast<int32_t>(K) : total;
}

// Either grouping on an AVX2 CPU (AVX-VNNI CPUs store quads here): one pass, no scratch row.
// `values` is a.pairs or a.quads, as a's grouping says.
template <typename T>
__attribute__((target("avx2"))) void quantize_rows_avx2(const float* x, int64_t m_begin, int64_t m_end, float scale,
                                                        int32_t zero_point, PreparedActivation& a, T* values,
                                                        uint8_t* x_q) {
  for (int64_t m = m_begin; m < m_end; ++m) {
    T* row = values + m * a.row_stride;
    a.row_sum[static_cast<size_t>(m)] = quantize_row_avx2(x + m * a.K, a.K, scale, static_cast<float>(zero_point), row,
                                                          x_q != nullptr ? x_q + m * a.K : nullptr);
    std::fill(row + a.K, row + a.row_stride, T{0});
  }
}

// Any grouping on any CPU: each row quantized into x_q's row (or a scratch row), then stored as
// prepare_activation stores it.
void quantize_rows_in_two_passes(const float* x, int64_t m_begin, int64_t m_end, float scale, int32_t zero_point,
                                 PreparedActivation& a, uint8_t* x_q) {
  std::vector<uint8_t> scratch(x_q == nullptr ? static_cast<size_t>(a.K) : 0);
  for (int64_t m = m_begin; m < m_end; ++m) {
    uint8_t* row = x_q != nullptr ? x_q + m * a.K : scratch.data();
    quantize_linear(x + m * a.K, static_cast<size_t>(a.K), scale, zero_point, row);
    store_prepared_rows({row, QType::Uint8, 0, 1}, m, a);
  }
}

// Quads on an AVX-512 CPU, where uint8 values are stored as they are: one pass.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void quantize_rows_avx512(const float* x, int64_t m_begin,
                                                                               int64_t m_end, float scale,
                                                                               int32_t zero_point,
                                                                               PreparedActivation& a, uint8_t* x_q) {
  for (int64_t m = m_begin; m < m_end; ++m) {
    uint8_t* row = a.quads.data() + m * a.row_stride;
    a.row_sum[static_cast<size_t>(m)] = quantize_row_avx512(x + m * a.K, a.K, scale, static_cast<float>(zero_point),
                                                            row, x_q != nullptr ? x_q + m * a.K : nullptr);
    std::fill(row + a.K, row + a.row_stride, uint8_t{0});
  }
}

}  // namespace

void quantize_linear(const float* x, size_t count, float scale, int32_t zero_point, uint8_t* x_q) {
  static const auto run = cpu_features().avx512 ? quantize_avx512
                          : cpu_features().avx2 ? quantize_avx2
                                                : quantize_portable;
  run(x, count, scale, static_cast<float>(zero_point), x_q);
}

void FloatRange::merge(const FloatRange& other) {
  lo = std::min(lo, other.lo);
  hi = std::max(hi, other.hi);
  nan = nan || other.nan;
}

FloatRange float_range(const float* x, size_t count) {
  static const auto range = cpu_features().avx512 ? range_avx512 : cpu_features().avx2 ? range_avx2 : range_portable;
  return range(x, count);
}

DynamicQuantization dynamic_quantization_for(const FloatRange& r) {
  DynamicQuantization q;
  if (r.nan) {
    q.scale = std::numeric_limits<float>::quiet_NaN();
    q.zero_point = 255;
    return q;
  }
  q.scale = r.hi == r.lo ? 1.0f : (r.hi - r.lo) / 255.0f;
  // The clamp's argument order keeps ORT's answer for -Inf (NaN here: 255).
  const float zero_point = std::nearbyint(std::max(0.0f, std::min(255.0f, 0.0f - r.lo / q.scale)));
  q.zero_point = static_cast<int32_t>(zero_point);
  return q;
}

DynamicQuantization dynamic_quantize(const float* x, size_t count, uint8_t* x_q) {
  const DynamicQuantization q = dynamic_quantization_for(float_range(x, count));
  // A NaN scale quantizes every value to 0 (x / NaN is NaN).
  quantize_linear(x, count, q.scale, q.zero_point, x_q);
  return q;
}

void quantize_rows_prepared(const float* x, int64_t m_begin, int64_t m_end, float scale, int32_t zero_point,
                            PreparedActivation& a, uint8_t* x_q) {
  if (a.group == KGroup::Quads && cpu_features().avx512)
    quantize_rows_avx512(x, m_begin, m_end, scale, zero_point, a, x_q);
  else if (a.group == KGroup::Quads && cpu_features().avx2)
    quantize_rows_avx2(x, m_begin, m_end, scale, zero_point, a, a.quads.data(), x_q);
  else if (cpu_features().avx2)
    quantize_rows_avx2(x, m_begin, m_end, scale, zero_point, a, a.pairs.data(), x_q);
  else
    quantize_rows_in_two_passes(x, m_begin, m_end, scale, zero_point, a, x_q);
}

}  // namespace onebit
