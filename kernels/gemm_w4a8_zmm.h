// SPDX-License-Identifier: Apache-2.0
// The zmm register operations the AVX-512 and AMX W4A8 kernels share: two packed tiles' bytes side
// by side in one register, the split of weight bytes into their nibbles, and a block's scales and
// zero points of two tiles. Include only inside a `#pragma GCC target` region with AVX-512 F and BW.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/gemm_w4a8.h"

namespace onebit {
namespace {

// The same 32 bytes of two tiles, side by side: lanes 0-7 tile a's columns, 8-15 tile b's.
inline __m512i load_pair(const uint8_t* a, const uint8_t* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// A unit's bytes as their low and high nibbles (4-bit weights: two k quads of 16 columns; 8-bit:
// w = 16·hi + lo).
inline void split_nibbles(__m512i u, __m512i& lo, __m512i& hi) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  lo = _mm512_and_si512(u, low);
  hi = _mm512_and_si512(_mm512_srli_epi16(u, 4), low);
}

// The 16 float scales of a k-block of tiles a and b, from their tails (the bytes after the block's
// weights).
inline __m512 pair_scales(const uint8_t* tail_a, const uint8_t* tail_b) {
  return _mm512_castsi512_ps(load_pair(tail_a, tail_b));
}

// The 16 uint8 zero points of the same block as int32 (after the scales in each tail).
inline __m512i pair_zero_points(const uint8_t* tail_a, const uint8_t* tail_b) {
  int64_t za, zb;
  std::memcpy(&za, tail_a + kW4A8TileN * sizeof(float), sizeof(za));
  std::memcpy(&zb, tail_b + kW4A8TileN * sizeof(float), sizeof(zb));
  return _mm512_cvtepu8_epi32(_mm_set_epi64x(zb, za));
}

}  // namespace
}  // namespace onebit
