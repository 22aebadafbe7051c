// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/gemm_q8.h"

namespace onebit {

namespace {

// Where w[k][n] goes in p's blocks: shifts, not divisions, in the per-element index (g is 2 or 4).
struct BlockIndex {
  explicit BlockIndex(const PackedWeights& p)
      : g(p.group_size()), g_bits(g == 4 ? 2 : 1), block_bytes(p.block_bytes()) {}
  size_t operator()(int64_t k, int64_t n) const {
    return static_cast<size_t>((n / kBlockN) * block_bytes + ((k >> g_bits) << g_bits) * kBlockN + (n % kBlockN) * g +
                               (k & (g - 1)));
  }
  int64_t g;
  int g_bits;
  int64_t block_bytes;
};

// visit(k, n, w[k][n] shifted by -shift to int8) for every value of w. A K×N source is walked row
// by row so that its reads are sequential (packing a non-constant B happens per call); an N×K
// source column by column for the same reason.
template <typename S, typename Visit>
void for_each_value(const S* w, int64_t K, int64_t N, bool w_is_nk, int32_t shift, Visit&& visit) {
  if (w_is_nk) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) visit(k, n, static_cast<int8_t>(int32_t(w[n * K + k]) - shift));
  } else {
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) visit(k, n, static_cast<int8_t>(int32_t(w[k * N + n]) - shift));
  }
}

template <typename Visit>
void for_each_value(const void* w, QType type, int64_t K, int64_t N, bool w_is_nk, Visit&& visit) {
  const int32_t shift = shift_for(type);
  if (type == QType::Uint8)
    for_each_value(static_cast<const uint8_t*>(w), K, N, w_is_nk, shift, visit);
  else
    for_each_value(static_cast<const int8_t*>(w), K, N, w_is_nk, shift, visit);
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
  PackedBytes<int8_t>::Owned blocks(static_cast<size_t>(p.n_blocks() * p.block_bytes()), 0);
  p.zero_point.assign(static_cast<size_t>(N), 0);
  p.col_sum.assign(static_cast<size_t>(N), 0);
  const BlockIndex index(p);
  for_each_value(w, type, K, N, w_is_nk, [&](int64_t k, int64_t n, int8_t value) {
    blocks[index(k, n)] = value;
    p.col_sum[static_cast<size_t>(n)] += value;
  });
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
  const BlockIndex index(p);
  bool same = true;  // the padding is never read against a nonzero value: only the values count
  std::vector<int32_t> col_sum(static_cast<size_t>(N), 0);  // checked too: p may come from a file
  const int8_t* blocks = p.blocks.data();                   // once: data() picks the owned or the mapped bytes
  for_each_value(w, type, K, N, w_is_nk, [&](int64_t k, int64_t n, int8_t value) {
    same &= blocks[index(k, n)] == value;
    col_sum[static_cast<size_t>(n)] += value;
  });
  return same && col_sum == p.col_sum;
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
