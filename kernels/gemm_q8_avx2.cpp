// SPDX-License-Identifier: Apache-2.0
// AVX2 gemm_q8 on operands grouped in k pairs. Each k pair of an activation row is broadcast as two int16 and
// multiplied with 8 columns × the same k pair of the weights by vpmaddwd, which sums the two int16 products into int32
// exactly — unlike vpmaddubsw, whose 16-bit pair sums saturate. A register block is up to 6 rows × 16 columns (12
// accumulators); the weight block (K × 16 bytes) stays in cache while the row blocks pass over it. One row (decode)
// reads four column blocks side by side: four streams from memory in flight instead of one. Built with target
// attributes, not -mavx2, so no AVX2 code can leak into functions shared with the portable path.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_q8_kernels.h"

#define ONEBIT_AVX2 __attribute__((target("avx2")))

namespace onebit {

namespace {

constexpr int kMaxRows = 6;
// The first pass over a weight block reads it from memory: prefetch this far ahead of the
// hardware prefetcher (faster at one row with the weights cold, in interleaved runs: BENCHMARKS.md).
constexpr int64_t kPrefetchBytes = 2048;

// x[r] · (8 columns × one k pair) for one row, added into acc (vpmaddwd: exact int32 pair sums).
ONEBIT_AVX2 inline __m256i madd_pair(__m256i acc, const int16_t* x_pair, __m256i w) {
  int32_t pair;
  std::memcpy(&pair, x_pair, sizeof(pair));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_set1_epi32(pair), w));
}

ONEBIT_AVX2 inline __m256i load_widened(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Adds one k pair of MR rows × the 16 columns at `pair` (32 bytes) into acc.
template <int MR>
ONEBIT_AVX2 inline void madd_block_pair(__m256i (&acc)[MR][2], const int16_t* x, int64_t x_stride, int64_t p,
                                        const int8_t* pair) {
  const __m256i w_lo = load_widened(pair), w_hi = load_widened(pair + 16);
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = madd_pair(acc[r][0], x + r * x_stride + 2 * p, w_lo);
    acc[r][1] = madd_pair(acc[r][1], x + r * x_stride + 2 * p, w_hi);
  }
}

// Raw dot products of MR rows (x, stride in int16) with one weight block over all k pairs.
// One row would leave the core waiting on one chain of adds per accumulator, so it takes
// two k pairs per step into two accumulator sets (BENCHMARKS.md); more rows have enough chains,
// and registers for one set only.
template <int MR, bool kFirstPass>
ONEBIT_AVX2 inline void dot_block(const int16_t* x, int64_t x_stride, const int8_t* block, int64_t k_pairs,
                                  int32_t (&dots)[kMaxRows][kBlockN]) {
  constexpr int kStep = MR == 1 ? 2 : 1;  // k pairs per step, one accumulator set each
  __m256i acc[kStep][MR][2];
  for (auto& set : acc)
    for (auto& row : set) row[0] = row[1] = _mm256_setzero_si256();
  int64_t p = 0;
  for (; p + kStep <= k_pairs; p += kStep) {
    // Every step, though a line holds two pairs: with a parity test here the compiler unrolled
    // the loop and spilled accumulators to the stack.
    if (kFirstPass) _mm_prefetch(reinterpret_cast<const char*>(block + p * 32 + kPrefetchBytes), _MM_HINT_T0);
    for (int s = 0; s < kStep; ++s) madd_block_pair<MR>(acc[s], x, x_stride, p + s, block + (p + s) * 32);
  }
  if (p < k_pairs) madd_block_pair<MR>(acc[0], x, x_stride, p, block + p * 32);
  for (int r = 0; r < MR; ++r) {
    __m256i lo = acc[0][r][0], hi = acc[0][r][1];
    for (int s = 1; s < kStep; ++s) {
      lo = _mm256_add_epi32(lo, acc[s][r][0]);
      hi = _mm256_add_epi32(hi, acc[s][r][1]);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dots[r]), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dots[r] + 8), hi);
  }
}

template <bool kFirstPass>
ONEBIT_AVX2 void dot_rows(int rows, const int16_t* x, int64_t x_stride, const int8_t* block, int64_t k_pairs,
                          int32_t (&dots)[kMaxRows][kBlockN]) {
  switch (rows) {
    case 1:
      dot_block<1, kFirstPass>(x, x_stride, block, k_pairs, dots);
      break;
    case 2:
      dot_block<2, kFirstPass>(x, x_stride, block, k_pairs, dots);
      break;
    case 3:
      dot_block<3, kFirstPass>(x, x_stride, block, k_pairs, dots);
      break;
    case 4:
      dot_block<4, kFirstPass>(x, x_stride, block, k_pairs, dots);
      break;
    case 5:
      dot_block<5, kFirstPass>(x, x_stride, block, k_pairs, dots);
      break;
    default:
      dot_block<6, kFirstPass>(x, x_stride, block, k_pairs, dots);
      break;
  }
}

// One row against kStreams weight blocks at once: that many streams from memory in flight
// instead of one. A single sequential stream stayed well below the read bandwidth at one row
// (BENCHMARKS.md).
constexpr int kStreams = 4;
ONEBIT_AVX2 void dot_row_blocks(const int16_t* x, const int8_t* const (&blocks)[kStreams], int64_t k_pairs,
                                int32_t (&dots)[kMaxRows][kBlockN]) {
  __m256i acc[kStreams][2];  // [block][column half]
  for (auto& b : acc) b[0] = b[1] = _mm256_setzero_si256();
  for (int64_t p = 0; p < k_pairs; ++p) {
    for (int b = 0; b < kStreams; ++b) {
      _mm_prefetch(reinterpret_cast<const char*>(blocks[b] + p * 32 + kPrefetchBytes), _MM_HINT_T0);
      const int8_t* pair = blocks[b] + p * 32;
      acc[b][0] = madd_pair(acc[b][0], x + 2 * p, load_widened(pair));
      acc[b][1] = madd_pair(acc[b][1], x + 2 * p, load_widened(pair + 16));
    }
  }
  for (int b = 0; b < kStreams; ++b) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dots[b]), acc[b][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dots[b] + 8), acc[b][1]);
  }
}

// One row's dot products with the block at column n0 into out (acc's row from n0), the zero-point
// terms folded in; a partial last block stops at N.
inline void fold_block_row(const int32_t (&dots)[kBlockN], int32_t row_sum, const PreparedActivation& x,
                           const PackedWeights& w, int64_t n0, int32_t* out) {
  const int64_t columns = std::min(kBlockN, w.N - n0);
  for (int64_t j = 0; j < columns; ++j) {
    const auto n = static_cast<size_t>(n0 + j);
    out[j] = fold_zero_points(dots[j], w.zero_point[n], row_sum, x.zero_point, w.col_sum[n], w.K);
  }
}

}  // namespace

ONEBIT_AVX2 void gemm_q8_blocks_avx2(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                                     int64_t block_end, int32_t* acc, int64_t acc_stride, const FusedFloatOutput*) {
  const int64_t k_pairs = w.k_padded() / 2;
  int32_t dots[kMaxRows][kBlockN];
  if (x.M == 1) {
    // The blocks in kStreams parts read side by side. What is left over goes to the loop below.
    const int64_t part = (block_end - block_begin) / kStreams;
    for (int64_t b = block_begin; b < block_begin + part; ++b) {
      const int8_t* blocks[kStreams];
      for (int i = 0; i < kStreams; ++i) blocks[i] = w.blocks.data() + (b + i * part) * w.block_bytes();
      dot_row_blocks(x.pairs.data(), blocks, k_pairs, dots);
      for (int i = 0; i < kStreams; ++i) {
        const int64_t n0 = (b + i * part) * kBlockN;
        fold_block_row(dots[i], x.row_sum[0], x, w, n0, acc + n0);
      }
    }
    block_begin += kStreams * part;
  }
  for (int64_t b = block_begin; b < block_end; ++b) {
    const int8_t* block = w.blocks.data() + b * w.block_bytes();
    const int64_t n0 = b * kBlockN;
    for (int64_t m0 = 0; m0 < x.M; m0 += kMaxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, x.M - m0));
      const int16_t* rows_x = x.pairs.data() + m0 * x.row_stride;
      if (m0 == 0)
        dot_rows<true>(rows, rows_x, x.row_stride, block, k_pairs, dots);
      else
        dot_rows<false>(rows, rows_x, x.row_stride, block, k_pairs, dots);
      for (int r = 0; r < rows; ++r)
        fold_block_row(dots[r], x.row_sum[static_cast<size_t>(m0 + r)], x, w, n0, acc + (m0 + r) * acc_stride + n0);
    }
  }
}

}  // namespace onebit
