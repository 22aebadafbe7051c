// SPDX-License-Identifier: Apache-2.0
// AMX gemm_q8 (Intel Sapphire Rapids and later): many rows as 16 × 16 int32 tiles of TDPBUSD
// (uint8 activations × int8 weights, 64 k a step, four products a lane into int32, wrapping like
// vpdpbusd: exact while the true result fits, as the README's bound says). The VNNI packing is
// already the tile layout: 16 k quads of a block are 16 rows of 64 bytes, one B tile. Each
// result tile is folded and stored (or turned into the fused float output) by the zmm VNNI
// kernel's store_tile, row by row. Fewer than 16 rows (decode) run the zmm VNNI kernel.
// Compiled for these instructions only inside this file, run only where cpu_features() reports
// AMX-INT8 granted to the process.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/gemm_q8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8")

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // as in gemm_q8_avx512vnni.cpp

#include "kernels/amx_tile_config.h"
#include "kernels/gemm_q8_vnni.h"
#include "kernels/gemm_q8_zmm.h"

namespace onebit {

namespace {

constexpr int kTileRows = 16;                           // rows of a tile, and k quads a step
constexpr int64_t kStepBytes = 64;                      // k a step: one tile row of activations
constexpr int64_t kTileBytes = kTileRows * kQuadBytes;  // one B tile: 16 k quads of a block
constexpr int64_t kPrefetchSteps = 2;

// Tiles 0-3 the results (2 row tiles × 2 blocks), 4-5 activations, 6-7 weights: each 16 rows of
// 64 bytes.
void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = kStepBytes;
    config.rows[t] = kTileRows;
  }
  load_tile_config(config);
}

// MT row tiles × NT blocks over every k step: a from rows of `a_stride` bytes, b_step(j, s) the
// 16 × 64 bytes of block j at step s; the int32 results of row tile i and block j into c[i][j].
template <int MT, int NT, class BStep>
void dot_tiles(const uint8_t* a, int64_t a_stride, int64_t steps, BStep&& b_step, int32_t (&c)[2][2][kTileRows * 16]) {
  _tile_zero(0);
  if constexpr (NT > 1) _tile_zero(1);
  if constexpr (MT > 1) _tile_zero(2);
  if constexpr (MT > 1 && NT > 1) _tile_zero(3);
  for (int64_t s = 0; s < steps; ++s) {
    if (s + kPrefetchSteps < steps)  // the weights' first pass comes from memory: ask ahead
      for (int j = 0; j < NT; ++j)
        for (int64_t line = 0; line < kTileBytes; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(b_step(j, s + kPrefetchSteps)) + line, _MM_HINT_T0);
    _tile_loadd(4, a + s * kStepBytes, a_stride);
    if constexpr (MT > 1) _tile_loadd(5, a + kTileRows * a_stride + s * kStepBytes, a_stride);
    _tile_loadd(6, b_step(0, s), kQuadBytes);
    if constexpr (NT > 1) _tile_loadd(7, b_step(1, s), kQuadBytes);
    _tile_dpbusd(0, 4, 6);
    if constexpr (NT > 1) _tile_dpbusd(1, 4, 7);
    if constexpr (MT > 1) _tile_dpbusd(2, 5, 6);
    if constexpr (MT > 1 && NT > 1) _tile_dpbusd(3, 5, 7);
  }
  constexpr int64_t kStride = 16 * sizeof(int32_t);
  _tile_stored(0, c[0][0], kStride);
  if constexpr (NT > 1) _tile_stored(1, c[0][1], kStride);
  if constexpr (MT > 1) _tile_stored(2, c[1][0], kStride);
  if constexpr (MT > 1 && NT > 1) _tile_stored(3, c[1][1], kStride);
}

// Rows [m0, m0 + rows) of block b from their raw dots (16 a row), folded and stored by the zmm
// kernel's store_tile: a whole tile at once, the rows of a partial one one by one.
void store_rows(const PreparedActivation& x, const PackedWeights& w, int64_t m0, int64_t rows, int64_t b,
                const int32_t* dots, int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  if (rows == kTileRows) {
    Zmm::Reg sum[kTileRows][1];
    for (int r = 0; r < kTileRows; ++r) sum[r][0] = Zmm::load32(dots + r * 16);
    return store_tile<Zmm, kTileRows, 1>(sum, tile_out(x, w, m0, b, 1, acc, acc_stride, fused));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const Zmm::Reg sum[1][1] = {{Zmm::load32(dots + r * 16)}};
    store_tile<Zmm, 1, 1>(sum, tile_out(x, w, m0 + r, b, 1, acc, acc_stride, fused));
  }
}

}  // namespace

void gemm_q8_blocks_amx(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                        int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  if (x.M < kTileRows) return gemm_q8_blocks_avx512vnni(x, w, block_begin, block_end, acc, acc_stride, fused);
  const int64_t k_quads = w.k_padded() / 4;
  const int64_t steps = (k_quads + kTileRows - 1) / kTileRows, whole_steps = k_quads / kTileRows;
  const int64_t row_tiles = (x.M + kTileRows - 1) / kTileRows;
  // The activations as tile rows of whole 64-k steps and whole 16-row tiles: the prepared rows
  // themselves when they are (SmolLM2's K and a prompt of 16·n tokens), else a copy padded with
  // zeros, so no tile load reads past a row or the matrix; zero activations make the weights'
  // padding count for nothing.
  const bool direct = x.row_stride % kStepBytes == 0 && x.M % kTileRows == 0;
  const int64_t a_stride = direct ? x.row_stride : steps * kStepBytes;
  thread_local std::vector<uint8_t> padded;
  if (!direct) {
    padded.assign(static_cast<size_t>(row_tiles * kTileRows * a_stride), 0);
    // std::copy_n, not memcpy: with K = 0 both vectors are empty, their data() null (UBSan).
    for (int64_t m = 0; m < x.M; ++m)
      std::copy_n(x.quads.data() + m * x.row_stride, x.row_stride, padded.data() + m * a_stride);
  }
  const uint8_t* a = direct ? x.quads.data() : padded.data();
  // The last, partial step of each block's weights, padded with zeros: a tile load of it from the
  // packing would read past the block (past the matrix, for the last one).
  thread_local std::vector<int8_t> tails;
  const int64_t blocks = block_end - block_begin;
  const int64_t tail_quads = k_quads - whole_steps * kTileRows;
  if (tail_quads > 0) {
    tails.assign(static_cast<size_t>(blocks * kTileBytes), 0);
    for (int64_t j = 0; j < blocks; ++j)
      std::memcpy(tails.data() + j * kTileBytes,
                  w.blocks.data() + (block_begin + j) * w.block_bytes() + whole_steps * kTileBytes,
                  static_cast<size_t>(tail_quads * kQuadBytes));
  }
  const auto weights = [&](int64_t b, int64_t s) -> const int8_t* {
    if (s < whole_steps) return w.blocks.data() + b * w.block_bytes() + s * kTileBytes;
    return tails.data() + (b - block_begin) * kTileBytes;
  };
  configure_tiles();  // per call: other code on this thread (ORT's own AMX kernels) may load its own
  alignas(64) int32_t c[2][2][kTileRows * 16];
  for (int64_t b = block_begin; b < block_end; b += 2) {
    const bool two_blocks = b + 1 < block_end;
    for (int64_t t = 0; t < row_tiles; t += 2) {
      const bool two_row_tiles = t + 1 < row_tiles;
      const uint8_t* rows = a + t * kTileRows * a_stride;
      const auto step = [&](int j, int64_t s) { return weights(b + j, s); };
      if (two_row_tiles && two_blocks)
        dot_tiles<2, 2>(rows, a_stride, steps, step, c);
      else if (two_row_tiles)
        dot_tiles<2, 1>(rows, a_stride, steps, step, c);
      else if (two_blocks)
        dot_tiles<1, 2>(rows, a_stride, steps, step, c);
      else
        dot_tiles<1, 1>(rows, a_stride, steps, step, c);
      for (int i = 0; i < (two_row_tiles ? 2 : 1); ++i) {
        const int64_t m0 = (t + i) * kTileRows, rows_here = std::min<int64_t>(kTileRows, x.M - m0);
        for (int j = 0; j < (two_blocks ? 2 : 1); ++j) {
          store_rows(x, w, m0, rows_here, b + j, c[i][j], acc, acc_stride, fused);
        }
      }
    }
  }
  _tile_release();
  if (fused != nullptr && fused->stream) _mm_sfence();  // the streamed y visible before this task ends
}

}  // namespace onebit

#pragma GCC diagnostic pop
#pragma GCC pop_options
