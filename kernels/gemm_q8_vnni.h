// SPDX-License-Identifier: Apache-2.0
// The VNNI gemm_q8 written once over a register type, for the zmm (AVX-512 VNNI) and the ymm
// (AVX-VNNI) kernel. Operands are grouped in k quads: each quad of an activation row (4 uint8)
// is broadcast and vpdpbusd multiplies it with 16 columns × the same quad of the weights (int8),
// adding the four products of each column into its int32 lane — exact, with no 16-bit
// intermediate. The non-saturating form is used on purpose (vpdpbusds would clamp where the
// fold expects wrapping). A tile is MR rows × NB blocks of 16 columns; its weights (NB × K × 16
// bytes) stay in cache while the row tiles pass over them.
//
// Include only inside a `#pragma GCC target` region, after the headers below: every function
// here is then compiled for that file's instruction set, and nothing else is. The anonymous
// namespace gives each file its own copy, so the linker never merges a zmm build of a helper
// into the ymm kernel or the other way round.
//
// A register type V provides: Reg; kLanes (int32 lanes per register); zero();
// load(const int8_t*) (kLanes × 4 weight bytes); broadcast(const uint8_t*) (one activation quad
// into every lane); dpbusd(acc, x, w); add(a, b); store(int32_t*, Reg); and for the zero-point
// fold, wrapping int32 lanes: load32(const int32_t*), set1(int32_t), sub(a, b), mullo(a, b).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_q8_kernels.h"

namespace onebit {
namespace {

constexpr int64_t kQuadBytes = 4 * kBlockN;  // one k quad of a block: one 64-byte line
// No software prefetch: with the packed weights on huge pages the hardware prefetchers keep up,
// and a prefetch 2 KiB ahead (the AVX2 kernel's distance) made one-row calls slower; 8 rows and
// more were unchanged (BENCHMARKS.md).

// The ymm register type. kEvex picks vpdpbusd's encoding: VEX (AVX-VNNI, the avxvnni kernel, no
// AVX-512 needed) or EVEX (AVX-512 VL + VNNI: lets the tests run the ymm kernel on AVX-512 CPUs,
// which lack AVX-VNNI). vpdpbusd is written out as the zmm kernel's is (GCC 12 copies the
// accumulator around the intrinsic).
template <bool kEvex>
struct Ymm {
  using Reg = __m256i;
  static constexpr int kLanes = 8;
  static Reg zero() { return _mm256_setzero_si256(); }
  static Reg load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static Reg broadcast(const uint8_t* p) {
    int32_t quad;
    std::memcpy(&quad, p, sizeof(quad));
    return _mm256_set1_epi32(quad);
  }
  static Reg dpbusd(Reg acc, Reg x, Reg w) {
    if constexpr (kEvex)
      __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "vm"(w));
    else
      __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(x), "xm"(w));
    return acc;
  }
  static Reg add(Reg a, Reg b) { return _mm256_add_epi32(a, b); }
  static void store(int32_t* p, Reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static Reg load32(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static Reg set1(int32_t v) { return _mm256_set1_epi32(v); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_epi32(a, b); }
  static Reg mullo(Reg a, Reg b) { return _mm256_mullo_epi32(a, b); }
  using FReg = __m256;
  static FReg to_float(Reg v) { return _mm256_cvtepi32_ps(v); }
  static FReg fload(const float* p) { return _mm256_loadu_ps(p); }
  static FReg fset1(float v) { return _mm256_set1_ps(v); }
  static FReg fmul(FReg a, FReg b) { return _mm256_mul_ps(a, b); }
  static FReg fadd(FReg a, FReg b) { return _mm256_add_ps(a, b); }
  static void fstore(float* p, FReg v) { _mm256_storeu_ps(p, v); }
  static void fstream(float* p, FReg v) { _mm256_stream_ps(p, v); }  // p 32-byte aligned
};

// Tile sizes per register width. zmm (32 registers): 8 rows × 2 blocks (other tiles measured no
// faster, some slower: BENCHMARKS.md); ymm (16 registers,
// two per block): 6 rows × 1 block, 12 accumulators beside two weight registers and a broadcast
// (not measured: no AVX-VNNI CPU here).
template <int kLanes>
struct VnniTiles;
template <>
struct VnniTiles<16> {
  static constexpr int kAccumulators = 24, kGemvRows = 4, kGemmRows = 8, kGemmBlocks = 2;
};
template <>
struct VnniTiles<8> {
  static constexpr int kAccumulators = 12, kGemvRows = 4, kGemmRows = 6, kGemmBlocks = 1;
};

template <class V>
constexpr int kRegsPerBlock = static_cast<int>(kBlockN) / V::kLanes;

// Few accumulators would leave the core waiting on vpdpbusd's dependency chains, so a small
// tile takes several quads per step into separate accumulator sets, as registers allow.
template <class V, int MR, int NB>
constexpr int kSets = std::clamp(VnniTiles<V::kLanes>::kAccumulators / (MR * NB * kRegsPerBlock<V>), 1, 4);

// Adds quad q of MR rows × NB blocks into acc[r][j·R + i].
template <class V, int MR, int NB>
inline void dpbusd_quad(typename V::Reg (&acc)[MR][NB * kRegsPerBlock<V>], const uint8_t* x, int64_t x_stride,
                        const int8_t* w, int64_t block_bytes, int64_t q) {
  constexpr int R = kRegsPerBlock<V>;
  typename V::Reg wq[NB * R];
  for (int j = 0; j < NB; ++j)
    for (int i = 0; i < R; ++i) wq[j * R + i] = V::load(w + j * block_bytes + q * kQuadBytes + i * V::kLanes * 4);
  for (int r = 0; r < MR; ++r) {
    const typename V::Reg xq = V::broadcast(x + r * x_stride + 4 * q);
    for (int c = 0; c < NB * R; ++c) acc[r][c] = V::dpbusd(acc[r][c], xq, wq[c]);
  }
}

// Where a tile's accumulators go, and what folds the zero points out of its raw dot products:
// acc = dot - zw[n]·rowsum[m] - (zx·colsum[n] - K·zx·zw[n]), in wrapping int32 lanes.
struct TileOut {
  int32_t* acc;  // at the tile's first row and column
  int64_t acc_stride;
  // With a fused float output: y, and the scale and bias, at the tile's first row and column
  // (scale at its first value when per tensor); y null: acc is written instead.
  float* y;
  const float* scale;
  bool per_column;
  const float* bias;
  const int32_t* row_sum;  // at the tile's first row
  const int32_t* zw;       // at its first column
  const int32_t* col_sum;  // at its first column
  int32_t zx;
  int64_t K;
  int64_t columns;      // of the tile inside the matrix (fewer than NB blocks at its right edge)
  bool stream = false;  // y with streaming stores (FusedFloatOutput::stream)
};

// Folds and stores the accumulators of MR rows × NB blocks (or, with out.y, the float output they
// give, as Epilogue::float32_steps computes it). A whole tile is folded in the
// registers; one at the matrix's right edge (its column data end inside it) goes through memory.
template <class V, int MR, int NB>
inline void store_tile(const typename V::Reg (&sum)[MR][NB * kRegsPerBlock<V>], const TileOut& out) {
  constexpr int C = NB * kRegsPerBlock<V>;
  if (out.columns == C * V::kLanes) {
    typename V::Reg zw[C], col_term[C];
    for (int c = 0; c < C; ++c) {
      zw[c] = V::load32(out.zw + c * V::kLanes);
      col_term[c] = V::sub(V::mullo(V::set1(out.zx), V::load32(out.col_sum + c * V::kLanes)),
                           V::mullo(V::set1(static_cast<int32_t>(uint32_t(out.K) * uint32_t(out.zx))), zw[c]));
    }
    if (out.y != nullptr) {
      // Epilogue::float32_steps: float(acc) * scale, then + bias, each rounded (no FMA).
      typename V::FReg scale[C], bias[C];
      for (int c = 0; c < C; ++c) {
        scale[c] = out.per_column ? V::fload(out.scale + c * V::kLanes) : V::fset1(out.scale[0]);
        bias[c] = out.bias != nullptr ? V::fload(out.bias + c * V::kLanes) : V::fset1(0.0f);  // added only with a bias
      }
      for (int r = 0; r < MR; ++r) {
        const typename V::Reg row_sum = V::set1(out.row_sum[r]);
        for (int c = 0; c < C; ++c) {
          const typename V::Reg acc = V::sub(V::sub(sum[r][c], V::mullo(row_sum, zw[c])), col_term[c]);
          typename V::FReg y = V::fmul(V::to_float(acc), scale[c]);
          if (out.bias != nullptr) y = V::fadd(y, bias[c]);
          float* at = out.y + r * out.acc_stride + c * V::kLanes;
          if (out.stream)
            V::fstream(at, y);
          else
            V::fstore(at, y);
        }
      }
      return;
    }
    for (int r = 0; r < MR; ++r) {
      const typename V::Reg row_sum = V::set1(out.row_sum[r]);
      for (int c = 0; c < C; ++c)
        V::store(out.acc + r * out.acc_stride + c * V::kLanes,
                 V::sub(V::sub(sum[r][c], V::mullo(row_sum, zw[c])), col_term[c]));
    }
    return;
  }
  alignas(64) int32_t dots[MR * C * V::kLanes];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < C; ++c) V::store(dots + (r * C + c) * V::kLanes, sum[r][c]);
  for (int r = 0; r < MR; ++r)
    for (int64_t j = 0; j < out.columns; ++j) {
      const int32_t acc =
          fold_zero_points(dots[r * C * V::kLanes + j], out.zw[j], out.row_sum[r], out.zx, out.col_sum[j], out.K);
      if (out.y == nullptr) {
        out.acc[r * out.acc_stride + j] = acc;
        continue;
      }
      float y = static_cast<float>(acc) * out.scale[out.per_column ? j : 0];
      if (out.bias != nullptr) y += out.bias[j];
      out.y[r * out.acc_stride + j] = y;
    }
}

// Asks for the cache lines a tile's float output goes to before its dot products, which then hide
// the misses of an output buffer that is not in the caches.
template <class V, int MR, int NB>
inline void prefetch_tile_output(const TileOut& out) {
  constexpr int64_t kBytes = NB * kRegsPerBlock<V> * V::kLanes * sizeof(float);
  for (int r = 0; r < MR; ++r) {
    const char* row = reinterpret_cast<const char*>(out.y + r * out.acc_stride);
    for (int64_t at = 0; at < kBytes; at += 64) _mm_prefetch(row + at, _MM_HINT_T0);
    _mm_prefetch(row + kBytes - 1, _MM_HINT_T0);  // the line a row that is not 64-byte aligned ends in
  }
}

// MR rows (uint8) × NB blocks over all quads, folded and stored.
template <class V, int MR, int NB>
inline void dot_tile(const uint8_t* x, int64_t x_stride, const int8_t* w, int64_t block_bytes, int64_t k_quads,
                     const TileOut& out) {
  constexpr int C = NB * kRegsPerBlock<V>;
  constexpr int S = kSets<V, MR, NB>;
  if (out.y != nullptr && !out.stream) prefetch_tile_output<V, MR, NB>(out);
  typename V::Reg acc[S][MR][C];
  for (auto& set : acc)
    for (auto& row : set)
      for (auto& a : row) a = V::zero();
  int64_t q = 0;
  for (; q + S <= k_quads; q += S)
    for (int s = 0; s < S; ++s) dpbusd_quad<V, MR, NB>(acc[s], x, x_stride, w, block_bytes, q + s);
  for (; q < k_quads; ++q) dpbusd_quad<V, MR, NB>(acc[0], x, x_stride, w, block_bytes, q);
  for (int s = 1; s < S; ++s)
    for (int r = 0; r < MR; ++r)
      for (int c = 0; c < C; ++c) acc[0][r][c] = V::add(acc[0][r][c], acc[s][r][c]);
  store_tile<V, MR, NB>(acc[0], out);
}

// dot_tile for `rows` ≤ MR rows.
template <class V, int MR, int NB>
inline void dot_rows(int rows, const uint8_t* x, int64_t x_stride, const int8_t* w, int64_t block_bytes,
                     int64_t k_quads, const TileOut& out) {
  if constexpr (MR > 1) {
    if (rows < MR) return dot_rows<V, MR - 1, NB>(rows, x, x_stride, w, block_bytes, k_quads, out);
  }
  dot_tile<V, MR, NB>(x, x_stride, w, block_bytes, k_quads, out);
}

// The TileOut of `blocks` blocks from block b at row m (fewer columns at the matrix's right edge):
// where its accumulators or fused float output go and what folds them. The AMX kernel's too.
inline TileOut tile_out(const PreparedActivation& x, const PackedWeights& w, int64_t m, int64_t b, int64_t blocks,
                        int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  const int64_t n0 = b * kBlockN;
  TileOut out{acc + m * acc_stride + n0,
              acc_stride,
              nullptr,
              nullptr,
              false,
              nullptr,
              x.row_sum.data() + m,
              w.zero_point.data() + n0,
              w.col_sum.data() + n0,
              x.zero_point,
              w.K,
              std::min(blocks * kBlockN, w.N - n0)};
  if (fused != nullptr) {
    out.y = fused->y + m * acc_stride + n0;
    out.scale = fused->scale + (fused->per_column ? n0 : 0);
    out.per_column = fused->per_column;
    out.bias = fused->bias == nullptr ? nullptr : fused->bias + n0;
    out.stream = fused->stream;
  }
  return out;
}

// Rows [m0, m0 + rows) × `nb` blocks from block b into acc.
template <class V, int MR, int NB>
inline void gemm_tile(const PreparedActivation& x, const PackedWeights& w, int64_t m0, int rows, int64_t b,
                      int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  const uint8_t* x_rows = x.quads.data() + m0 * x.row_stride;
  const int8_t* block = w.blocks.data() + b * w.block_bytes();
  const int64_t k_quads = w.k_padded() / 4;
  const TileOut out = tile_out(x, w, m0, b, NB, acc, acc_stride, fused);
  dot_rows<V, MR, NB>(rows, x_rows, x.row_stride, block, w.block_bytes(), k_quads, out);
}

// Decode (M ≤ kGemvRows): every row in one pass over the weights, a block at a time (one
// sequential stream). Prefill: tiles of kGemmRows rows × kGemmBlocks blocks.
template <class V>
void gemm_q8_blocks_vnni(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                         int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  constexpr int kGemvRows = VnniTiles<V::kLanes>::kGemvRows;
  constexpr int kGemmRows = VnniTiles<V::kLanes>::kGemmRows;
  constexpr int kGemmBlocks = VnniTiles<V::kLanes>::kGemmBlocks;
  if (x.M == 0) return;
  if (x.M <= kGemvRows) {
    for (int64_t b = block_begin; b < block_end; ++b)
      gemm_tile<V, kGemvRows, 1>(x, w, 0, static_cast<int>(x.M), b, acc, acc_stride, fused);
    return;
  }
  for (int64_t b = block_begin; b < block_end; b += kGemmBlocks) {
    const bool whole_tile = b + kGemmBlocks <= block_end;
    for (int64_t m0 = 0; m0 < x.M; m0 += kGemmRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kGemmRows, x.M - m0));
      if (whole_tile) {
        gemm_tile<V, kGemmRows, kGemmBlocks>(x, w, m0, rows, b, acc, acc_stride, fused);
      } else {
        for (int64_t tail = b; tail < block_end; ++tail)
          gemm_tile<V, kGemmRows, 1>(x, w, m0, rows, tail, acc, acc_stride, fused);
      }
    }
  }
  if (fused != nullptr && fused->stream) _mm_sfence();  // the streamed y visible before this task ends
}

}  // namespace
}  // namespace onebit
