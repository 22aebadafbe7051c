// SPDX-License-Identifier: Apache-2.0
// AVX-512 VNNI W4A8 kernel. One row (decode, bound by memory) runs the ymm kernel of
// gemm_w4a8_ymm.h with VnniDot's EVEX vpdpbusd. More rows (prefill, bound by the multiplies) run
// two tiles side by side in zmm registers: each vpdpbusd then does 16 columns' work, and each
// activation quad broadcast, zero-point correction and float step serves both tiles, for up to 8
// rows at a time. The float steps are the contract's, in its order, lane by lane: the results
// equal the portable kernel's bit for bit. Run only where cpu_features() reports it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/gemm_w4a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")

// GCC 12's zmm intrinsics pass an undefined vector as their unused merge operand, which
// -Wmaybe-uninitialized reports wherever they inline (as in gemm_q8_avx512vnni.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/gemm_w4a8_vnni_dot.h"
#include "kernels/gemm_w4a8_ymm.h"
#include "kernels/gemm_w4a8_zmm.h"

namespace onebit {

namespace {

using Ymm = VnniDot</*kEvex=*/true>;

// Rows a zmm pass keeps in registers: 8 int32 block dots and 8 float sums with 4 weight registers
// fit the 32 zmm registers (measured: 6 rows, or 4 rows over four tiles, ran slower).
constexpr int kZmmRows = 8;

// Written out for the reason VnniDot's is (GCC copies the accumulator around the intrinsic).
inline __m512i dpbusd(__m512i acc, __m512i u, __m512i s) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "vm"(s));
  return acc;
}

// acc + the four quad products of w[j] and x[j], in one chain: the 8 rows' chains are
// independent of each other, enough to hide vpdpbusd's latency.
inline __m512i dot4(__m512i acc, const __m512i (&w)[4], const __m512i (&x)[4]) {
  return dpbusd(dpbusd(dpbusd(dpbusd(acc, w[0], x[0]), w[1], x[1]), w[2], x[2]), w[3], x[3]);
}

// The activations of one group of kZmmRows rows, laid out for the zmm pass so that one base
// pointer and fixed offsets address every row: each k quad's rows side by side, and per k-block
// the rows' −Σq (the zero-point term's factor) and scales. Rows past M are zeros.
struct RowGroup {
  const int32_t* quads;      // row_stride / 4 × kZmmRows
  const int32_t* minus_sum;  // k_blocks × kZmmRows
  const float* scales;       // k_blocks × kZmmRows
};

// Every row group of one call's activations, in one buffer.
class RowGroups {
 public:
  explicit RowGroups(const BlockQuantizedActivation& x)
      : M_(x.M),
        quads_(x.row_stride() / 4),
        k_blocks_(x.k_blocks()),
        group_size_((quads_ + 2 * k_blocks_) * kZmmRows) {}

  int64_t count() const { return (M_ + kZmmRows - 1) / kZmmRows; }
  int64_t values() const { return count() * group_size_; }

  // Lays x out in `storage` (values() of them).
  void build(const BlockQuantizedActivation& x, int32_t* storage) const {
    std::fill(storage, storage + values(), 0);
    for (int64_t m = 0; m < M_; ++m) {
      int32_t* base = storage + m / kZmmRows * group_size_;
      const int64_t r = m % kZmmRows;
      const int8_t* row = x.q.data() + m * x.row_stride();
      for (int64_t k = 0; k < quads_; ++k) std::memcpy(&base[k * kZmmRows + r], row + 4 * k, sizeof(int32_t));
      int32_t* minus_sum = base + quads_ * kZmmRows;
      float* scales = reinterpret_cast<float*>(minus_sum + k_blocks_ * kZmmRows);
      for (int64_t b = 0; b < k_blocks_; ++b) {
        minus_sum[b * kZmmRows + r] = -x.sum[static_cast<size_t>(m * k_blocks_ + b)];
        scales[b * kZmmRows + r] = x.scale[static_cast<size_t>(m * k_blocks_ + b)];
      }
    }
  }

  // Group i of a layout at storage.
  RowGroup group(const int32_t* storage, int64_t i) const {
    const int32_t* base = storage + i * group_size_;
    const int32_t* minus_sum = base + quads_ * kZmmRows;
    return {base, minus_sum, reinterpret_cast<const float*>(minus_sum + k_blocks_ * kZmmRows)};
  }

 private:
  int64_t M_, quads_, k_blocks_, group_size_;
};

// x's row groups: the layout prepare_w4a8_rows stored in x, else one this thread builds (kept from
// call to call unless it grew past 16 MiB).
const int32_t* row_groups(const BlockQuantizedActivation& x, const RowGroups& groups) {
  if (static_cast<int64_t>(x.row_groups.size()) == groups.values()) return x.row_groups.data();
  thread_local std::vector<int32_t> storage;
  if (storage.capacity() * sizeof(int32_t) > (size_t(16) << 20)) storage = {};
  storage.resize(static_cast<size_t>(groups.values()));
  groups.build(x, storage.data());
  return storage.data();
}

// 16 k of two tiles (their weight bytes at a and b) against MR rows (their quads at x, 16 k
// on): adds the int32 dots to dot[r].
template <int kBits, int MR>
inline void chunk_pair(const uint8_t* a, const uint8_t* b, const int32_t* x, __m512i (&dot)[MR]) {
  auto quads = [&](int r, __m512i(&xq)[4]) {
    for (int j = 0; j < 4; ++j) xq[j] = _mm512_set1_epi32(x[j * kZmmRows + r]);
  };
  if constexpr (kBits == 4) {
    __m512i q[4];
    split_nibbles(load_pair(a, b), q[0], q[1]);
    split_nibbles(load_pair(a + 32, b + 32), q[2], q[3]);
    for (int r = 0; r < MR; ++r) {
      __m512i xq[4];
      quads(r, xq);
      dot[r] = dot4(dot[r], q, xq);
    }
  } else {
    __m512i lo[4], hi[4];
    for (int j = 0; j < 4; ++j) split_nibbles(load_pair(a + 32 * j, b + 32 * j), lo[j], hi[j]);
    for (int r = 0; r < MR; ++r) {
      __m512i xq[4];
      quads(r, xq);
      const __m512i zero = _mm512_setzero_si512();
      const __m512i sum = _mm512_add_epi32(dot4(zero, lo, xq), _mm512_slli_epi32(dot4(zero, hi, xq), 4));
      dot[r] = _mm512_add_epi32(dot[r], sum);
    }
  }
}

// The MR rows of group g (from row m0) × tiles t and t + 1 over all k-blocks, into y (+ bias).
template <int kBits, bool kZeroPoints, int MR>
void pair_rows(const RowGroup& g, const PackedNBits& w, int64_t t, int64_t m0, const float* bias, float* y,
               int64_t y_stride) {
  const int64_t k_blocks = w.k_blocks(), bs = w.block_size, stride = w.block_stride();
  const int64_t weight_bytes = w.weight_bytes(), chunk_bytes = 16 * kW4A8TileN * kBits / 8;
  const uint8_t* ta = w.data.data() + t * w.tile_stride();
  const uint8_t* tb = ta + w.tile_stride();
  __m512 acc[MR];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t b = 0; b < k_blocks; ++b) {
    const uint8_t* tail_a = ta + b * stride + weight_bytes;
    const uint8_t* tail_b = tb + b * stride + weight_bytes;
    const int32_t* minus_sum = g.minus_sum + b * kZmmRows;
    // Each row's dot starts at minus its zero-point term: the same integer as subtracting it after.
    __m512i dot[MR];
    if constexpr (kZeroPoints) {
      const __m512i zp = pair_zero_points(tail_a, tail_b);
      for (int r = 0; r < MR; ++r) dot[r] = _mm512_mullo_epi32(zp, _mm512_set1_epi32(minus_sum[r]));
    } else {
      for (int r = 0; r < MR; ++r) dot[r] = _mm512_set1_epi32(minus_sum[r] * (1 << (kBits - 1)));
    }
    const int32_t* x = g.quads + b * bs / 4 * kZmmRows;
    for (int64_t c = 0; c < bs / 16; ++c)
      chunk_pair<kBits, MR>(ta + b * stride + c * chunk_bytes, tb + b * stride + c * chunk_bytes, x + c * 4 * kZmmRows,
                            dot);
    const __m512 w_scale = pair_scales(tail_a, tail_b);
    for (int r = 0; r < MR; ++r) {
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(g.scales[b * kZmmRows + r]), w_scale);
      acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(scale, _mm512_cvtepi32_ps(dot[r])));
    }
  }
  const int64_t n0 = t * kW4A8TileN;
  const __mmask16 columns = static_cast<__mmask16>((1u << std::min<int64_t>(2 * kW4A8TileN, w.N - n0)) - 1);
  for (int r = 0; r < MR; ++r) {
    __m512 v = acc[r];
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(columns, bias + n0));
    _mm512_mask_storeu_ps(y + (m0 + r) * y_stride + n0, columns, v);
  }
}

// The first `rows` rows (fewer than MR: MR − 1 at most) of group g, over the pair at t.
template <int kBits, bool kZeroPoints, int MR = kZmmRows>
void pair_rest(const RowGroup& g, const PackedNBits& w, int64_t t, int64_t m0, int64_t rows, const float* bias,
               float* y, int64_t y_stride) {
  if constexpr (MR > 1) {
    if (rows == MR - 1) return pair_rows<kBits, kZeroPoints, MR - 1>(g, w, t, m0, bias, y, y_stride);
    pair_rest<kBits, kZeroPoints, MR - 1>(g, w, t, m0, rows, bias, y, y_stride);
  }
}

// Asks for tiles [t0, t1) into L2 at once, ahead of several row groups reading them: the first
// group's two tile streams alone fetched them at a fraction of the read bandwidth (M = 128,
// weights cold; docs/benchmarks-log.md, session 15).
inline void prefetch_to_l2(const PackedNBits& w, int64_t t0, int64_t t1) {
  const uint8_t* first = w.data.data() + t0 * w.tile_stride();
  for (int64_t line = 0; line < (t1 - t0) * w.tile_stride(); line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(first + line), _MM_HINT_T1);
}

// Row groups over ranges of tile pairs whose weights stay in L2 (as the ymm kernel's rows); an
// odd last tile runs on the ymm kernel.
template <int kBits, bool kZeroPoints>
void run_pairs(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
               const float* bias, float* y, int64_t y_stride) {
  const RowGroups groups(x);
  const int32_t* storage = row_groups(x, groups);
  const int64_t pair_end = tile_begin + (tile_end - tile_begin) / 2 * 2;
  const int64_t range = std::max<int64_t>(2, kL2RangeBytes / w.tile_stride() / 2 * 2);
  for (int64_t r0 = tile_begin; r0 < pair_end; r0 += range) {
    const int64_t r1 = std::min(pair_end, r0 + range);
    if (groups.count() > 1) prefetch_to_l2(w, r0, r1);
    for (int64_t i = 0; i < groups.count(); ++i) {
      const int64_t m0 = i * kZmmRows, rows = std::min<int64_t>(kZmmRows, x.M - m0);
      for (int64_t t = r0; t < r1; t += 2) {
        if (rows == kZmmRows)
          pair_rows<kBits, kZeroPoints, kZmmRows>(groups.group(storage, i), w, t, m0, bias, y, y_stride);
        else
          pair_rest<kBits, kZeroPoints>(groups.group(storage, i), w, t, m0, rows, bias, y, y_stride);
      }
    }
  }
  if (pair_end < tile_end) run<Ymm, kBits, kZeroPoints>(x, w, pair_end, tile_end, bias, y, y_stride);
}

}  // namespace

void prepare_w4a8_rows_avx512vnni(BlockQuantizedActivation& x) {
  if (x.M < 2) return;
  const RowGroups groups(x);
  x.row_groups.resize(static_cast<size_t>(groups.values()));
  groups.build(x, x.row_groups.data());
}

void gemm_w4a8_tiles_avx512vnni(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin,
                                int64_t tile_end, const float* bias, float* y, int64_t y_stride) {
  if (x.M == 1) return gemm_w4a8_tiles_ymm<Ymm>(x, w, tile_begin, tile_end, bias, y, y_stride);
  if (w.bits == 4)
    (w.has_zero_points ? run_pairs<4, true> : run_pairs<4, false>)(x, w, tile_begin, tile_end, bias, y, y_stride);
  else
    (w.has_zero_points ? run_pairs<8, true> : run_pairs<8, false>)(x, w, tile_begin, tile_end, bias, y, y_stride);
}

}  // namespace onebit

#pragma GCC diagnostic pop
#pragma GCC pop_options
