// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/gemm_q8.h"

namespace onebit {

namespace {

// One k group (`rows` ≤ G values from k0) of `columns` ≤ kBlockN columns from n0, shifted to int8,
// into group (kBlockN·G bytes: column j's values at j·G), adding each column's values to sum[j].
template <int G, bool kNK, typename S>
void pack_group(const S* w, int64_t K, int64_t N, int64_t k0, int64_t n0, int64_t rows, int64_t columns, int32_t shift,
                int8_t* group, int32_t* sum) {
  for (int64_t j = 0; j < columns; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      const S v = kNK ? w[(n0 + j) * K + k0 + i] : w[(k0 + i) * N + n0 + j];
      const auto value = static_cast<int8_t>(int32_t(v) - shift);
      group[j * G + i] = value;
      sum[j] += value;
    }
}

// One block of kBlockN columns from n0, as PackedWeights stores it (zero in the padding), into
// block (block_bytes() bytes) and the columns' sums into col_sum. Whole groups of whole blocks
// take the constant-size path, which the compiler unrolls and vectorises.
template <int G, bool kNK, typename S>
void pack_block(const S* w, int64_t K, int64_t N, int32_t shift, int64_t n0, int8_t* block, int32_t* col_sum) {
  const int64_t columns = std::min(kBlockN, N - n0);
  std::fill(block, block + (K + G - 1) / G * G * kBlockN, int8_t(0));
  int32_t sum[kBlockN] = {};
  for (int64_t k0 = 0; k0 < K; k0 += G) {
    int8_t* group = block + k0 * kBlockN;
    if (k0 + G <= K && columns == kBlockN)
      pack_group<G, kNK>(w, K, N, k0, n0, G, kBlockN, shift, group, sum);
    else
      pack_group<G, kNK>(w, K, N, k0, n0, std::min<int64_t>(G, K - k0), columns, shift, group, sum);
  }
  std::copy(sum, sum + columns, col_sum);
}

template <int G, typename S>
void pack_block(const S* w, int64_t K, int64_t N, bool w_is_nk, int32_t shift, int64_t n0, int8_t* block,
                int32_t* col_sum) {
  if (w_is_nk)
    pack_block<G, true>(w, K, N, shift, n0, block, col_sum);
  else
    pack_block<G, false>(w, K, N, shift, n0, block, col_sum);
}

// Block b of p's layout packed from w (K×N, or N×K when w_is_nk), into block and col_sum.
void pack_block(const PackedWeights& p, const void* w, QType type, bool w_is_nk, int64_t b, int8_t* block,
                int32_t* col_sum) {
  const int32_t shift = shift_for(type);
  const int64_t n0 = b * kBlockN;
  const auto* u = static_cast<const uint8_t*>(w);
  const auto* s = static_cast<const int8_t*>(w);
  if (p.group == KGroup::Quads)
    type == QType::Uint8 ? pack_block<4>(u, p.K, p.N, w_is_nk, shift, n0, block, col_sum)
                         : pack_block<4>(s, p.K, p.N, w_is_nk, shift, n0, block, col_sum);
  else
    type == QType::Uint8 ? pack_block<2>(u, p.K, p.N, w_is_nk, shift, n0, block, col_sum)
                         : pack_block<2>(s, p.K, p.N, w_is_nk, shift, n0, block, col_sum);
}

int32_t packed_zero_point(QType type, const int32_t* zero_points, int64_t zero_point_count, int64_t n) {
  const int32_t zp = zero_points == nullptr ? 0 : zero_point_count == 1 ? zero_points[0] : zero_points[n];
  return zp - shift_for(type);
}

}  // namespace

PackedWeights pack_weights(const void* w, QType type, int64_t K, int64_t N, bool w_is_nk, const int32_t* zero_points,
                           int64_t zero_point_count, KGroup group) {
  PackedWeights p;
  p.K = K;
  p.N = N;
  p.group = group;
  const auto block_bytes = static_cast<size_t>(p.block_bytes());
  PackedBytes<int8_t>::Owned blocks(p.n_blocks() * block_bytes);
  p.zero_point.assign(static_cast<size_t>(N), 0);
  p.col_sum.assign(static_cast<size_t>(p.n_blocks() * kBlockN), 0);
  for (int64_t b = 0; b < p.n_blocks(); ++b)
    pack_block(p, w, type, w_is_nk, b, blocks.data() + b * block_bytes, p.col_sum.data() + b * kBlockN);
  p.col_sum.resize(static_cast<size_t>(N));
  p.blocks = PackedBytes<int8_t>(std::move(blocks));
  for (int64_t n = 0; n < N; ++n)
    p.zero_point[static_cast<size_t>(n)] = packed_zero_point(type, zero_points, zero_point_count, n);
  return p;
}

bool packs_to(const PackedWeights& p, const void* w, QType type, int64_t K, int64_t N, bool w_is_nk,
              const int32_t* zero_points, int64_t zero_point_count) {
  if (p.K != K || p.N != N || p.blocks.size() != static_cast<size_t>(p.n_blocks() * p.block_bytes()) ||
      p.zero_point.size() != static_cast<size_t>(N) || p.col_sum.size() != static_cast<size_t>(N))
    return false;
  for (int64_t n = 0; n < N; ++n)
    if (p.zero_point[static_cast<size_t>(n)] != packed_zero_point(type, zero_points, zero_point_count, n)) return false;
  // Each block packed again into scratch and compared whole, padding included (packing writes
  // zeros there): a block at a time stays in L1, where a value-by-value walk of the layout did
  // not. The column sums are checked too: p may come from a file.
  const auto block_bytes = static_cast<size_t>(p.block_bytes());
  std::vector<int8_t> block(block_bytes);
  int32_t sums[kBlockN];
  const int8_t* packed = p.blocks.data();  // once: data() picks the owned or the mapped bytes
  for (int64_t b = 0; b < p.n_blocks(); ++b) {
    pack_block(p, w, type, w_is_nk, b, block.data(), sums);
    const int64_t columns = std::min(kBlockN, N - b * kBlockN);
    // std::equal, not memcmp: with K = 0 both ranges are empty and their pointers null.
    if (!std::equal(block.begin(), block.end(), packed + b * block_bytes) ||
        !std::equal(sums, sums + columns, p.col_sum.begin() + b * kBlockN))
      return false;
  }
  return true;
}

namespace {

// One row of x (stored as S) plus offset into row[0, K), zeros in the padding up to row_stride;
// returns its sum. Kept free of type tests so that the compiler vectorises it.
template <typename S, typename T>
int32_t store_row(const S* x, int64_t K, int64_t row_stride, int32_t offset, T* row) {
  int32_t sum = 0;
  for (int64_t k = 0; k < K; ++k) {
    const int32_t value = int32_t(x[k]) + offset;
    row[k] = static_cast<T>(value);
    sum += value;
  }
  std::fill(row + K, row + row_stride, T(0));
  return sum;
}

// What a prepared activation stores for a value v of type `type`: v + this.
int32_t prepared_value_offset(QType type, KGroup group) {
  // Quads hold uint8-range values: vpdpbusd multiplies unsigned activation bytes by signed weights.
  return (group == KGroup::Quads ? 128 : 0) - shift_for(type);
}

// Stores x + offset for every row of x into a's rows from `first_row`, and their row sums.
template <typename T>
void store_rows(const Activation& x, int64_t first_row, int32_t offset, std::vector<T>& values, PreparedActivation& a) {
  for (int64_t m = 0; m < x.M; ++m) {
    T* row = values.data() + (first_row + m) * a.row_stride;
    a.row_sum[static_cast<size_t>(first_row + m)] =
        x.type == QType::Uint8
            ? store_row(static_cast<const uint8_t*>(x.data) + m * a.K, a.K, a.row_stride, offset, row)
            : store_row(static_cast<const int8_t*>(x.data) + m * a.K, a.K, a.row_stride, offset, row);
  }
}

}  // namespace

void shape_prepared_activation(int64_t M, int64_t K, QType type, int32_t zero_point, KGroup group,
                               PreparedActivation& a) {
  a.group = group;
  a.M = M;
  a.K = K;
  const auto g = static_cast<int64_t>(group);
  a.row_stride = (K + g - 1) / g * g;
  a.zero_point = zero_point + prepared_value_offset(type, group);
  const auto values = static_cast<size_t>(M * a.row_stride);
  if (group == KGroup::Pairs) {
    a.quads.clear();
    a.pairs.resize(values);
  } else {
    a.pairs.clear();
    a.quads.resize(values);
  }
  a.row_sum.resize(static_cast<size_t>(M));
}

void store_prepared_rows(const Activation& rows, int64_t first_row, PreparedActivation& a) {
  const int32_t offset = prepared_value_offset(rows.type, a.group);
  if (a.group == KGroup::Pairs)
    store_rows(rows, first_row, offset, a.pairs, a);
  else
    store_rows(rows, first_row, offset, a.quads, a);
}

void prepare_activation(const Activation& x, int64_t K, KGroup group, PreparedActivation& a) {
  shape_prepared_activation(x.M, K, x.type, x.zero_point, group, a);
  store_prepared_rows(x, 0, a);
}

PreparedActivation prepare_activation(const Activation& x, int64_t K, KGroup group) {
  PreparedActivation a;
  prepare_activation(x, K, group, a);
  return a;
}

}  // namespace onebit
