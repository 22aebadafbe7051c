// SPDX-License-Identifier: Apache-2.0
// AMX W4A8 kernel (Intel Sapphire Rapids and later), for kAmxMinRows rows and more: each k-block's
// integer dot of 16 rows × 16 columns is one TDPBSSD (symmetric weights, unpacked as signed
// w − 2^(bits−1)) or TDPBSUD (zero points: unsigned weights, the term subtracted after); four
// products a lane into int32, exact (|dot| ≤ 256·127·255 < 2³¹); then the block's float steps in
// zmm registers, in the contract's order, lane by lane: the results equal the portable kernel's
// bit for bit. The weights of two packed tiles, unpacked as the zmm kernel does (4 bits:
// the nibbles of a 32-byte unit are two k quads of 8 columns each), are the B tile's rows as
// they are: row j holds k quad j of 16 columns. A range of tiles is unpacked once into a scratch
// that stays in L2 while every row tile reads it. Fewer rows run the AVX-512 VNNI kernel.
// The float steps, once a k-block for every output, bound it rather than the tiles: with the
// weights in cache it trails the zmm kernel below 31 rows (0.72-0.87x at 16-24), is level to 40
// and ahead from 47 (1.03-1.12x at 47-56, 1.05-1.28x at 63-160; K×N 576×1536 and 2048×8192).
// Compiled for these instructions only inside this file, run only where cpu_features() reports
// AMX-INT8 granted to the process.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/gemm_w4a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8")

#include "kernels/amx_tile_config.h"
#include "kernels/gemm_w4a8_zmm.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // as in gemm_q8_avx512vnni.cpp

namespace onebit {

namespace {

constexpr int kTileRows = 16;               // rows of activations (and of results) a tile
constexpr int64_t kAmxMinRows = 48;         // fewer: the AVX-512 kernel is as fast or faster
constexpr int64_t kMaxDepth = 64;           // k bytes of one tile row
constexpr int64_t kPairBytes = 64;          // one B row: a k quad of 16 columns
constexpr int64_t kRangeBytes = 256 << 10;  // unpacked weights a range: well inside L2

// Tiles 0, 3, 4, 5 results (16 × 16 int32: 2 row tiles × 2 pairs), 1 and 6 activations (16 rows ×
// depth bytes), 2 and 7 weights (depth / 4 k quads × 16 columns).
void configure_tiles(int64_t depth) {
  TileConfig config;
  for (int c : {0, 3, 4, 5}) {
    config.colsb[c] = 16 * sizeof(int32_t);
    config.rows[c] = kTileRows;
  }
  for (int a : {1, 6}) {
    config.colsb[a] = static_cast<uint16_t>(depth);
    config.rows[a] = kTileRows;
  }
  for (int b : {2, 7}) {
    config.colsb[b] = kPairBytes;
    config.rows[b] = static_cast<uint8_t>(depth / 4);
  }
  load_tile_config(config);
}

// Block b of tiles ta and tb as B rows (block_size / 4 of 64 bytes) at out: unsigned weights, or,
// without zero points, signed w − 2^(bits−1) (the symmetric zero point taken out here, once, so
// the dot needs no correction per row).
void unpack_pair_block(const PackedNBits& w, int64_t t_a, int64_t t_b, int64_t b, uint8_t* out) {
  const uint8_t* ta = w.data.data() + t_a * w.tile_stride() + b * w.block_stride();
  const uint8_t* tb = w.data.data() + t_b * w.tile_stride() + b * w.block_stride();
  const __m512i zero_point = _mm512_set1_epi8(w.has_zero_points ? 0 : static_cast<char>(1 << (w.bits - 1)));
  auto store = [&](int64_t row, __m512i v) {
    _mm512_storeu_si512(out + row * kPairBytes, _mm512_sub_epi8(v, zero_point));
  };
  if (w.bits == 4) {
    for (int64_t u = 0; u < w.block_size / 8; ++u) {  // a 32-byte unit: 8 k of 8 columns
      __m512i lo, hi;
      split_nibbles(load_pair(ta + 32 * u, tb + 32 * u), lo, hi);
      store(2 * u, lo);
      store(2 * u + 1, hi);
    }
  } else {
    for (int64_t u = 0; u < w.block_size / 4; ++u) store(u, load_pair(ta + 32 * u, tb + 32 * u));
  }
}

// The activations as tiles of 16 rows: x's own rows for each whole tile, and for a last partial
// one (M not a multiple of 16) a copy of its rows padded with zero rows, so no tile load reads
// past the matrix. Only those few rows are copied, not the matrix, once per call of the kernel
// (each of a call's tasks).
struct TileActivation {
  const int8_t* q;
  int64_t whole_rows;  // rows in whole tiles
  const int8_t* last;  // the partial tile: 16 rows, those past M zero

  const int8_t* row_tile(const BlockQuantizedActivation& x, int64_t m0) const {
    return m0 < whole_rows ? q + m0 * x.row_stride() : last;
  }
};

TileActivation tile_activation(const BlockQuantizedActivation& x) {
  thread_local std::vector<int8_t> last;
  const int64_t whole_rows = x.M / kTileRows * kTileRows;
  if (whole_rows != x.M) {
    last.assign(static_cast<size_t>(kTileRows * x.row_stride()), 0);
    std::copy(x.q.begin() + whole_rows * x.row_stride(), x.q.end(), last.begin());
  }
  return {x.q.data(), whole_rows, last.data()};
}

// Tiles t and t + 1 (or t twice, `single`), the tiles of the pair at `unpacked`.
struct Pair {
  int64_t t;
  bool single;
  uint8_t* unpacked;  // B rows, block after block
};

// Block b's integer dots of MT row tiles (activation tiles 1, 6) × NP pairs (weight tiles 2, 7)
// into result tiles 0, 3 (row tile 0) and 4, 5 (row tile 1): up to four independent TDPs in
// flight. (The tile intrinsics take literal tile numbers.)
template <bool kZeroPoints, int MT, int NP>
void block_dots(const int8_t* const (&rows)[MT], int64_t row_stride, const uint8_t* const (&unpacked)[NP], int64_t b,
                int64_t bs) {
  const int64_t depth = std::min(bs, kMaxDepth);
  _tile_zero(0);
  if constexpr (NP > 1) _tile_zero(3);
  if constexpr (MT > 1) _tile_zero(4);
  if constexpr (MT > 1 && NP > 1) _tile_zero(5);
  for (int64_t s = 0; s < bs; s += depth) {
    _tile_loadd(1, rows[0] + b * bs + s, row_stride);
    if constexpr (MT > 1) _tile_loadd(6, rows[MT - 1] + b * bs + s, row_stride);
    _tile_loadd(2, unpacked[0] + (b * bs + s) / 4 * kPairBytes, kPairBytes);
    if constexpr (NP > 1) _tile_loadd(7, unpacked[NP - 1] + (b * bs + s) / 4 * kPairBytes, kPairBytes);
    if constexpr (kZeroPoints) {  // unsigned weights
      _tile_dpbsud(0, 1, 2);
      if constexpr (NP > 1) _tile_dpbsud(3, 1, 7);
      if constexpr (MT > 1) _tile_dpbsud(4, 6, 2);
      if constexpr (MT > 1 && NP > 1) _tile_dpbsud(5, 6, 7);
    } else {  // signed weights, the zero point taken out
      _tile_dpbssd(0, 1, 2);
      if constexpr (NP > 1) _tile_dpbssd(3, 1, 7);
      if constexpr (MT > 1) _tile_dpbssd(4, 6, 2);
      if constexpr (MT > 1 && NP > 1) _tile_dpbssd(5, 6, 7);
    }
  }
}

// Rows [m0, m0 + 16·MT) × NP pairs' columns over every k-block, into y (+ bias): rows past M are
// in the tiles' dots (zeros) but take no float steps and are not stored, nor a single tile's
// second copy. Each result tile is stored and scaled while the others may still be computing.
template <bool kZeroPoints, int MT, int NP>
void row_tiles_pairs(const TileActivation& a, const BlockQuantizedActivation& x, const PackedNBits& w,
                     const Pair* const (&p)[NP], int64_t m0, const float* bias, float* y, int64_t y_stride) {
  const int64_t k_blocks = w.k_blocks(), bs = w.block_size;
  const int8_t* rows[MT];
  for (int i = 0; i < MT; ++i) rows[i] = a.row_tile(x, m0 + i * kTileRows);
  const uint8_t* unpacked[NP];
  for (int j = 0; j < NP; ++j) unpacked[j] = p[j]->unpacked;
  alignas(64) int32_t dots[kTileRows * 16];
  alignas(64) float acc[MT][NP][kTileRows * 16] = {};
  int64_t rows_here[MT];  // rows of each row tile inside M: the float steps skip the zero padding
  for (int i = 0; i < MT; ++i) rows_here[i] = std::min<int64_t>(kTileRows, x.M - m0 - i * kTileRows);
  // Block b's float steps for row tile i and pair j, from the result tile's dots.
  auto add_block = [&](int i, int j, int64_t b) {
    const uint8_t* tail_a = w.data.data() + p[j]->t * w.tile_stride() + b * w.block_stride() + w.weight_bytes();
    const uint8_t* tail_b = p[j]->single ? tail_a : tail_a + w.tile_stride();
    const __m512 w_scale = pair_scales(tail_a, tail_b);
    __m512i zp;
    if constexpr (kZeroPoints) zp = pair_zero_points(tail_a, tail_b);
    const int32_t* sum = x.sum.data() + (m0 + i * kTileRows) * k_blocks + b;  // row r at r · k_blocks
    const float* scale = x.scale.data() + (m0 + i * kTileRows) * k_blocks + b;
    float* out = acc[i][j];
    for (int64_t r = 0; r < rows_here[i]; ++r) {
      __m512i dot = _mm512_load_si512(dots + 16 * r);
      if constexpr (kZeroPoints)
        dot = _mm512_sub_epi32(dot, _mm512_mullo_epi32(zp, _mm512_set1_epi32(sum[r * k_blocks])));
      const __m512 term =
          _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(scale[r * k_blocks]), w_scale), _mm512_cvtepi32_ps(dot));
      _mm512_store_ps(out + 16 * r, _mm512_add_ps(_mm512_load_ps(out + 16 * r), term));
    }
  };
  constexpr int64_t kDotStride = 16 * sizeof(int32_t);
  for (int64_t b = 0; b < k_blocks; ++b) {
    block_dots<kZeroPoints, MT, NP>(rows, x.row_stride(), unpacked, b, bs);
    _tile_stored(0, dots, kDotStride);
    add_block(0, 0, b);
    if constexpr (NP > 1) {
      _tile_stored(3, dots, kDotStride);
      add_block(0, NP - 1, b);
    }
    if constexpr (MT > 1) {
      _tile_stored(4, dots, kDotStride);
      add_block(MT - 1, 0, b);
    }
    if constexpr (MT > 1 && NP > 1) {
      _tile_stored(5, dots, kDotStride);
      add_block(MT - 1, NP - 1, b);
    }
  }
  for (int j = 0; j < NP; ++j) {
    const int64_t n0 = p[j]->t * kW4A8TileN;
    const int64_t width = std::min<int64_t>((p[j]->single ? 1 : 2) * kW4A8TileN, w.N - n0);
    const __mmask16 columns = static_cast<__mmask16>((1u << width) - 1);
    const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(columns, bias + n0) : _mm512_setzero_ps();
    for (int i = 0; i < MT; ++i)
      for (int64_t r = 0; r < rows_here[i]; ++r) {
        __m512 v = _mm512_load_ps(acc[i][j] + 16 * r);
        if (bias != nullptr) v = _mm512_add_ps(v, b);
        _mm512_mask_storeu_ps(y + (m0 + i * kTileRows + r) * y_stride + n0, columns, v);
      }
  }
}

// Tiles [tile_begin, tile_end) in pairs (an odd last one paired with itself), a range of pairs
// unpacked at a time, every row tile over the range.
template <bool kZeroPoints>
void run_tiles(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
               const float* bias, float* y, int64_t y_stride) {
  const TileActivation a = tile_activation(x);
  const int64_t pair_bytes = w.k_blocks() * w.block_size / 4 * kPairBytes;  // one pair's B rows
  const int64_t range = std::max<int64_t>(2, kRangeBytes / pair_bytes * 2);
  thread_local std::vector<uint8_t> unpacked;
  configure_tiles(std::min(w.block_size, kMaxDepth));  // per call: other code on this thread may load its own
  for (int64_t r0 = tile_begin; r0 < tile_end; r0 += range) {
    const int64_t r1 = std::min(tile_end, r0 + range);
    std::vector<Pair> pairs;
    unpacked.resize(static_cast<size_t>((r1 - r0 + 1) / 2 * pair_bytes));
    for (int64_t t = r0; t < r1; t += 2) {
      const Pair p{t, t + 1 == r1, unpacked.data() + (t - r0) / 2 * pair_bytes};
      for (int64_t b = 0; b < w.k_blocks(); ++b)
        unpack_pair_block(w, t, p.single ? t : t + 1, b, p.unpacked + b * w.block_size / 4 * kPairBytes);
      pairs.push_back(p);
    }
    for (int64_t m0 = 0; m0 < x.M; m0 += 2 * kTileRows) {
      const bool two_row_tiles = m0 + kTileRows < x.M;
      for (size_t j = 0; j < pairs.size(); j += 2) {
        if (j + 1 < pairs.size()) {
          const Pair* const two[2] = {&pairs[j], &pairs[j + 1]};
          (two_row_tiles ? row_tiles_pairs<kZeroPoints, 2, 2> : row_tiles_pairs<kZeroPoints, 1, 2>)(a, x, w, two, m0,
                                                                                                    bias, y, y_stride);
        } else {
          const Pair* const one[1] = {&pairs[j]};
          (two_row_tiles ? row_tiles_pairs<kZeroPoints, 2, 1> : row_tiles_pairs<kZeroPoints, 1, 1>)(a, x, w, one, m0,
                                                                                                    bias, y, y_stride);
        }
      }
    }
  }
  _tile_release();
}

}  // namespace

void gemm_w4a8_tiles_amx(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
                         const float* bias, float* y, int64_t y_stride) {
  if (x.M < kAmxMinRows) return gemm_w4a8_tiles_avx512vnni(x, w, tile_begin, tile_end, bias, y, y_stride);
  (w.has_zero_points ? run_tiles<true> : run_tiles<false>)(x, w, tile_begin, tile_end, bias, y, y_stride);
}

void prepare_w4a8_rows_amx(BlockQuantizedActivation& x) {
  if (x.M < kAmxMinRows) prepare_w4a8_rows_avx512vnni(x);
}

}  // namespace onebit

#pragma GCC diagnostic pop
#pragma GCC pop_options
