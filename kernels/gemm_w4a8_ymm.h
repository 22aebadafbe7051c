// SPDX-License-Identifier: Apache-2.0
// The W4A8 kernel on ymm registers, written once over the instruction that multiplies weights by
// activations (a Dot type): AVX2 (vpmaddubsw + vpmaddwd), AVX-VNNI and AVX-512 VNNI (vpdpbusd).
// A 32-byte unit of a tile's k-block unpacks (and, shift) into ymm registers of 8 columns × one
// k quad of unsigned weights; Dot::dot4 adds four such quads times four broadcast quads of int8
// activations into int32 lanes. 8-bit weights are split into their two nibbles the same way
// (w = 16·hi + lo). Every product is at most 15·127, so each Dot's int32 is exact and equal.
// The block's zero-point term (zp · Σq) and float scaling follow the contract's order exactly,
// so the results equal the portable kernel's bit for bit.
// Decode (one row) streams four tiles at once, far apart; more rows share each unpacked unit across
// up to four rows, with the tile (a few KiB) staying in L1 between row groups.
//
// Include only inside a `#pragma GCC target` region, after the headers below: every function here
// is then compiled for that file's instruction set. The anonymous namespace gives each file its
// own copy, so the linker never keeps a VNNI build of a helper for the AVX2 kernel.
//
// A Dot type provides dot4(acc, w, x): acc + the four quad products of w[j] (unsigned nibbles) and
// x[j] (int8), j = 0..3, per int32 lane.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_w4a8_kernels.h"

namespace onebit {

namespace {

// Ahead of the hardware prefetcher on the cold decode stream, one line per 16-k chunk.
constexpr int64_t kPrefetchBytes = 1024;

inline __m256i broadcast_quad(const int8_t* x) {
  int32_t quad;
  std::memcpy(&quad, x, sizeof(quad));
  return _mm256_set1_epi32(quad);
}

inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 16 k of one tile (its weight bytes at w) against MR rows: adds the int32 dots into acc[r].
template <class Dot, int kBits, int MR>
inline void chunk(const uint8_t* w, const int8_t* const (&x)[MR], int64_t k, __m256i (&acc)[MR]) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  if constexpr (kBits == 4) {
    const __m256i u0 = load(w), u1 = load(w + 32);
    const __m256i q[4] = {_mm256_and_si256(u0, low), _mm256_and_si256(_mm256_srli_epi16(u0, 4), low),
                          _mm256_and_si256(u1, low), _mm256_and_si256(_mm256_srli_epi16(u1, 4), low)};
    for (int r = 0; r < MR; ++r) {
      const int8_t* xr = x[r] + k;
      const __m256i xq[4] = {broadcast_quad(xr), broadcast_quad(xr + 4), broadcast_quad(xr + 8),
                             broadcast_quad(xr + 12)};
      acc[r] = Dot::dot4(acc[r], q, xq);
    }
  } else {
    __m256i lo[4], hi[4];
    for (int j = 0; j < 4; ++j) {
      const __m256i u = load(w + 32 * j);
      lo[j] = _mm256_and_si256(u, low);
      hi[j] = _mm256_and_si256(_mm256_srli_epi16(u, 4), low);
    }
    for (int r = 0; r < MR; ++r) {
      const int8_t* xr = x[r] + k;
      const __m256i xq[4] = {broadcast_quad(xr), broadcast_quad(xr + 4), broadcast_quad(xr + 8),
                             broadcast_quad(xr + 12)};
      const __m256i zero = _mm256_setzero_si256();
      const __m256i dot = _mm256_add_epi32(Dot::dot4(zero, lo, xq), _mm256_slli_epi32(Dot::dot4(zero, hi, xq), 4));
      acc[r] = _mm256_add_epi32(acc[r], dot);
    }
  }
}

// MR rows (from m0) × the NT tiles `tile_index` over all k-blocks, into y (+ bias).
template <class Dot, int kBits, bool kZeroPoints, int MR, int NT>
void tiles_rows(const BlockQuantizedActivation& x, const PackedNBits& w, const int64_t (&tile_index)[NT], int64_t m0,
                const float* bias, float* y, int64_t y_stride) {
  const int64_t k_blocks = w.k_blocks(), bs = w.block_size, stride = w.block_stride();
  const int64_t weight_bytes = w.weight_bytes(), chunk_bytes = 16 * kW4A8TileN * kBits / 8;
  const uint8_t* tile[NT];
  for (int t = 0; t < NT; ++t) tile[t] = w.data.data() + tile_index[t] * w.tile_stride();
  const int8_t* rows[MR];
  for (int r = 0; r < MR; ++r) rows[r] = x.q.data() + (m0 + r) * x.row_stride();
  __m256 acc[MR][NT];
  for (auto& row : acc)
    for (auto& a : row) a = _mm256_setzero_ps();
  for (int64_t b = 0; b < k_blocks; ++b) {
    __m256i dot[NT][MR];
    for (auto& t : dot)
      for (auto& d : t) d = _mm256_setzero_si256();
    for (int64_t c = 0; c < bs / 16; ++c) {
      for (int t = 0; t < NT; ++t) {
        const uint8_t* unit = tile[t] + b * stride + c * chunk_bytes;
        if constexpr (MR == 1) _mm_prefetch(reinterpret_cast<const char*>(unit + kPrefetchBytes), _MM_HINT_T0);
        chunk<Dot, kBits, MR>(unit, rows, b * bs + c * 16, dot[t]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      const uint8_t* tail = tile[t] + b * stride + weight_bytes;
      const __m256 w_scale = _mm256_loadu_ps(reinterpret_cast<const float*>(tail));
      __m256i zp;
      if constexpr (kZeroPoints) {
        int64_t bytes;
        std::memcpy(&bytes, tail + kW4A8TileN * sizeof(float), sizeof(bytes));
        zp = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
      }
      for (int r = 0; r < MR; ++r) {
        const int32_t sum = x.sum[static_cast<size_t>((m0 + r) * k_blocks + b)];
        const __m256i correction =
            kZeroPoints ? _mm256_mullo_epi32(zp, _mm256_set1_epi32(sum)) : _mm256_set1_epi32(sum * (1 << (kBits - 1)));
        const __m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[t][r], correction));
        const __m256 scale =
            _mm256_mul_ps(_mm256_set1_ps(x.scale[static_cast<size_t>((m0 + r) * k_blocks + b)]), w_scale);
        acc[r][t] = _mm256_add_ps(acc[r][t], _mm256_mul_ps(scale, d));
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    const int64_t n0 = tile_index[t] * kW4A8TileN, count = std::min(kW4A8TileN, w.N - n0);
    for (int r = 0; r < MR; ++r) {
      __m256 v = acc[r][t];
      float* out = y + (m0 + r) * y_stride + n0;
      if (count == kW4A8TileN) {
        if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + n0));
        _mm256_storeu_ps(out, v);
      } else {
        alignas(32) float lanes[kW4A8TileN];
        _mm256_store_ps(lanes, v);
        for (int64_t i = 0; i < count; ++i) out[i] = bias != nullptr ? lanes[i] + bias[n0 + i] : lanes[i];
      }
    }
  }
}

// Decode reads kDecodeStreams tiles at once, a share of the range apart: that many memory streams
// in flight, where neighbouring tiles would be one (as gemm_q8's one-row path measured). More rows
// go in groups of up to 4 rows per tile.
constexpr int kDecodeStreams = 4;
constexpr int kRowGroup = 4;
constexpr int64_t kL2RangeBytes = 128 << 10;

template <class Dot, int kBits, bool kZeroPoints>
void run(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
         const float* bias, float* y, int64_t y_stride) {
  if (x.M == 1) {
    const int64_t share = (tile_end - tile_begin) / kDecodeStreams;
    for (int64_t i = 0; i < share; ++i) {
      int64_t streams[kDecodeStreams];
      for (int s = 0; s < kDecodeStreams; ++s) streams[s] = tile_begin + s * share + i;
      tiles_rows<Dot, kBits, kZeroPoints, 1, kDecodeStreams>(x, w, streams, 0, bias, y, y_stride);
    }
    for (int64_t t = tile_begin + kDecodeStreams * share; t < tile_end; ++t)
      tiles_rows<Dot, kBits, kZeroPoints, 1, 1>(x, w, {t}, 0, bias, y, y_stride);
    return;
  }
  // Rows in groups over a range of tiles whose weights stay in L2, so each row group writes whole
  // runs of its output rows (one tile's 8 columns per row at N floats' stride touched a new page
  // per row: 576x49152 at 32 rows ran at half the small shapes' rate).
  const int64_t range = std::max<int64_t>(1, kL2RangeBytes / w.tile_stride());
  for (int64_t r0 = tile_begin; r0 < tile_end; r0 += range) {
    const int64_t r1 = std::min(tile_end, r0 + range);
    int64_t m = 0;
    for (; m + kRowGroup <= x.M; m += kRowGroup)
      for (int64_t t = r0; t < r1; ++t)
        tiles_rows<Dot, kBits, kZeroPoints, kRowGroup, 1>(x, w, {t}, m, bias, y, y_stride);
    for (int64_t t = r0; t < r1; ++t) {
      switch (x.M - m) {
        case 3:
          tiles_rows<Dot, kBits, kZeroPoints, 3, 1>(x, w, {t}, m, bias, y, y_stride);
          break;
        case 2:
          tiles_rows<Dot, kBits, kZeroPoints, 2, 1>(x, w, {t}, m, bias, y, y_stride);
          break;
        case 1:
          tiles_rows<Dot, kBits, kZeroPoints, 1, 1>(x, w, {t}, m, bias, y, y_stride);
          break;
        default:
          break;
      }
    }
  }
}

// The kernel for one Dot: its bit width and zero-point form chosen per call.
template <class Dot>
void gemm_w4a8_tiles_ymm(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
                         const float* bias, float* y, int64_t y_stride) {
  if (w.bits == 4)
    (w.has_zero_points ? run<Dot, 4, true> : run<Dot, 4, false>)(x, w, tile_begin, tile_end, bias, y, y_stride);
  else
    (w.has_zero_points ? run<Dot, 8, true> : run<Dot, 8, false>)(x, w, tile_begin, tile_end, bias, y, y_stride);
}

}  // namespace
}  // namespace onebit
