// SPDX-License-Identifier: Apache-2.0
// pack_weights + gemm_q8_host against the int64 reference over shapes, types, zero points,
// weight layouts and worst-case values.
#include "kernels/gemm_q8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "reference_gemm.h"
#include "test_operands.h"

namespace onebit_test {
namespace {

using onebit::Activation;
using onebit::PackedWeights;
using onebit::QType;

constexpr int32_t kSentinel = 0x5A5A5A5A;
constexpr size_t kGuard = 16;  // int32 slots after M×N that must stay untouched

enum class ZpMode { None, PerTensor, PerTensorLow, PerTensorHigh, PerColumn, PerColumnExtremes };

const char* zp_name(ZpMode z) {
  switch (z) {
    case ZpMode::None:
      return "zp_null";
    case ZpMode::PerTensor:
      return "zp_tensor";
    case ZpMode::PerTensorLow:
      return "zp_tensor_min";
    case ZpMode::PerTensorHigh:
      return "zp_tensor_max";
    case ZpMode::PerColumn:
      return "zp_column";
    case ZpMode::PerColumnExtremes:
      return "zp_column_extremes";
  }
  return "?";
}

// The middle of a type's range that is not an extreme: 0 for int8, 128 for uint8.
int32_t middle_of(QType t) { return t == QType::Uint8 ? 128 : 0; }

// Weight zero points as the model stores them (pointer + count) and as the reference uses them.
struct WeightZeroPoints {
  std::vector<int32_t> stored;
  int64_t count = 0;
  std::vector<int32_t> per_column;  // N values
  const int32_t* pointer() const { return stored.empty() ? nullptr : stored.data(); }
};

WeightZeroPoints make_zero_points(ZpMode mode, QType t, int64_t N, std::mt19937& rng) {
  const QRange r = range_of(t);
  WeightZeroPoints z;
  auto per_tensor = [&](int32_t v) {
    z.stored = {v};
    z.count = 1;
    z.per_column.assign(static_cast<size_t>(N), v);
  };
  switch (mode) {
    case ZpMode::None:
      z.per_column.assign(static_cast<size_t>(N), 0);
      break;
    case ZpMode::PerTensor:
      per_tensor(random_value(rng, t));
      break;
    case ZpMode::PerTensorLow:
      per_tensor(r.lo);
      break;
    case ZpMode::PerTensorHigh:
      per_tensor(r.hi);
      break;
    case ZpMode::PerColumn:
      z.stored = random_values(rng, static_cast<size_t>(N), t);
      z.count = N;
      z.per_column = z.stored;
      break;
    case ZpMode::PerColumnExtremes: {
      const int32_t cycle[3] = {r.lo, r.hi, middle_of(t)};
      z.stored.resize(static_cast<size_t>(N));
      for (int64_t n = 0; n < N; ++n)
        z.stored[static_cast<size_t>(n)] = n % 4 == 3 ? random_value(rng, t) : cycle[n % 4];
      z.count = N;
      z.per_column = z.stored;
      break;
    }
  }
  return z;
}

// Activation zero point cycling through both extremes, the middle and a random value.
int32_t activation_zero_point(size_t case_index, QType t, std::mt19937& rng) {
  const QRange r = range_of(t);
  switch (case_index % 4) {
    case 0:
      return r.lo;
    case 1:
      return r.hi;
    case 2:
      return middle_of(t);
    default:
      return random_value(rng, t);
  }
}

struct GemmOperands {
  QType x_type = QType::Int8;
  QType w_type = QType::Int8;
  int64_t M = 0, K = 0, N = 0;
  bool w_is_nk = false;
  std::vector<int32_t> x;  // M×K raw
  int32_t zx = 0;
  std::vector<int32_t> w;  // K×N raw
  WeightZeroPoints zw;
};

std::string describe(const GemmOperands& o) {
  std::ostringstream s;
  s << "x " << name_of(o.x_type) << " zx=" << o.zx << ", w " << name_of(o.w_type) << (o.w_is_nk ? " N×K" : " K×N")
    << " zp_count=" << o.zw.count << ", M=" << o.M << " K=" << o.K << " N=" << o.N;
  return s.str();
}

// Packs, runs gemm_q8_host into a guarded buffer and compares every accumulator with the reference.
::testing::AssertionResult gemm_matches_reference(const GemmOperands& o) {
  const std::vector<uint8_t> w_bytes = encode(o.w_is_nk ? transpose(o.w, o.K, o.N) : o.w, o.w_type);
  const std::vector<uint8_t> x_bytes = encode(o.x, o.x_type);
  const PackedWeights packed =
      onebit::pack_weights(w_bytes.data(), o.w_type, o.K, o.N, o.w_is_nk, o.zw.pointer(), o.zw.count);

  Activation act;
  act.data = x_bytes.data();
  act.type = o.x_type;
  act.zero_point = o.zx;
  act.M = o.M;
  const size_t cells = static_cast<size_t>(o.M * o.N);
  std::vector<int32_t> acc(cells + kGuard, kSentinel);
  onebit::gemm_q8_host(act, packed, acc.data());

  const std::vector<int64_t> want = reference_gemm(o.x, o.zx, o.w, o.zw.per_column, o.M, o.K, o.N);
  for (size_t i = 0; i < cells; ++i) {
    if (int64_t(acc[i]) != want[i]) {
      return ::testing::AssertionFailure()
             << describe(o) << ": acc[" << i / o.N << "][" << i % o.N << "] = " << acc[i] << ", reference " << want[i];
    }
  }
  for (size_t i = cells; i < acc.size(); ++i) {
    if (acc[i] != kSentinel) {
      return ::testing::AssertionFailure() << describe(o) << ": wrote past M×N at slot " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------------------------
// The sweep: every (activation type, weight type, layout, zero-point mode) over all shapes.

using SweepParam = std::tuple<QType, QType, bool, ZpMode>;

class GemmQ8Sweep : public ::testing::TestWithParam<SweepParam> {};

TEST_P(GemmQ8Sweep, MatchesInt64Reference) {
  const auto [x_type, w_type, w_is_nk, zp_mode] = GetParam();
  // One seed per parameter combination, so a failure reproduces on its own.
  std::mt19937 rng(1000u * unsigned(zp_mode) + 100u * unsigned(x_type) + 10u * unsigned(w_type) + unsigned(w_is_nk));
  const int64_t Ks[] = {1, 3, 17, 64, 100, 1023};
  const int64_t Ns[] = {1, 5, 31, 64, 129};
  const int64_t Ms[] = {0, 1, 7, 36, 100};
  size_t case_index = 0;
  for (int64_t K : Ks) {
    for (int64_t N : Ns) {
      // Weights and their zero points are shared by every M, as in a session.
      GemmOperands o;
      o.x_type = x_type;
      o.w_type = w_type;
      o.K = K;
      o.N = N;
      o.w_is_nk = w_is_nk;
      o.w = random_values(rng, static_cast<size_t>(K * N), w_type);
      o.zw = make_zero_points(zp_mode, w_type, N, rng);
      for (int64_t M : Ms) {
        o.M = M;
        o.x = random_values(rng, static_cast<size_t>(M * K), x_type);
        o.zx = activation_zero_point(case_index++, x_type, rng);
        ASSERT_TRUE(gemm_matches_reference(o));
      }
    }
  }
}

std::string sweep_name(const ::testing::TestParamInfo<SweepParam>& info) {
  const auto [x_type, w_type, w_is_nk, zp_mode] = info.param;
  return std::string("x_") + name_of(x_type) + "_w_" + name_of(w_type) + (w_is_nk ? "_nk_" : "_kn_") + zp_name(zp_mode);
}

INSTANTIATE_TEST_SUITE_P(AllCombinations, GemmQ8Sweep,
                         ::testing::Combine(::testing::Values(QType::Int8, QType::Uint8),
                                            ::testing::Values(QType::Int8, QType::Uint8), ::testing::Bool(),
                                            ::testing::Values(ZpMode::None, ZpMode::PerTensor, ZpMode::PerTensorLow,
                                                              ZpMode::PerTensorHigh, ZpMode::PerColumn,
                                                              ZpMode::PerColumnExtremes)),
                         sweep_name);

// ---------------------------------------------------------------------------------------------
// Packing: the layout gemm_q8.h documents, and independence from the source layout.

class PackWeights : public ::testing::TestWithParam<QType> {};

TEST_P(PackWeights, HoldsDocumentedLayout) {
  const QType t = GetParam();
  const int32_t shift = t == QType::Uint8 ? 128 : 0;  // uint8 is stored shifted by -128
  std::mt19937 rng(7);
  const int64_t K = 17, N = 21;
  const std::vector<int32_t> w = random_values(rng, static_cast<size_t>(K * N), t);
  const WeightZeroPoints zw = make_zero_points(ZpMode::PerColumnExtremes, t, N, rng);
  const std::vector<uint8_t> bytes = encode(w, t);
  for (const onebit::KGroup group : {onebit::KGroup::Pairs, onebit::KGroup::Quads}) {
    const int64_t g = static_cast<int64_t>(group), k_padded = (K + g - 1) / g * g;
    const PackedWeights p = onebit::pack_weights(bytes.data(), t, K, N, false, zw.pointer(), zw.count, group);
    ASSERT_EQ(p.K, K);
    ASSERT_EQ(p.N, N);
    ASSERT_EQ(p.group, group);
    ASSERT_EQ(p.blocks.size(), size_t(2 * k_padded * onebit::kBlockN));  // 2 blocks of 16 columns
    ASSERT_EQ(p.zero_point.size(), size_t(N));
    ASSERT_EQ(p.col_sum.size(), size_t(N));
    // Block n/16, k group k/g, column n%16 within the group, k%g within the column: padding is zero.
    for (int64_t n = 0; n < 2 * onebit::kBlockN; ++n)
      for (int64_t k = 0; k < k_padded; ++k) {
        const auto at = size_t((n / 16) * k_padded * 16 + (k / g) * g * 16 + (n % 16) * g + k % g);
        const int32_t want = n < N && k < K ? w[size_t(k * N + n)] - shift : 0;
        EXPECT_EQ(int32_t(p.blocks[at]), want) << "g=" << g << " n=" << n << " k=" << k;
        if (n < N && k < K) {
          EXPECT_EQ(int32_t(p.at(k, n)), want) << "g=" << g << " n=" << n << " k=" << k;
        }
      }
    for (int64_t n = 0; n < N; ++n) {
      int32_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += w[size_t(k * N + n)] - shift;
      EXPECT_EQ(p.col_sum[size_t(n)], sum) << "n=" << n;
      EXPECT_EQ(p.zero_point[size_t(n)], zw.per_column[size_t(n)] - shift) << "n=" << n;
    }
  }
}

TEST_P(PackWeights, NullZeroPointsMeanZero) {
  const QType t = GetParam();
  const int32_t shift = t == QType::Uint8 ? 128 : 0;
  std::mt19937 rng(8);
  const int64_t K = 3, N = 4;
  const std::vector<uint8_t> bytes = encode(random_values(rng, size_t(K * N), t), t);
  const PackedWeights p = onebit::pack_weights(bytes.data(), t, K, N, false, nullptr, 0);
  ASSERT_EQ(p.zero_point.size(), size_t(N));
  for (int64_t n = 0; n < N; ++n) EXPECT_EQ(p.zero_point[size_t(n)], -shift) << "n=" << n;
}

TEST_P(PackWeights, SameResultFromBothLayouts) {
  const QType t = GetParam();
  std::mt19937 rng(9);
  const int64_t K = 100, N = 31;
  const std::vector<int32_t> w = random_values(rng, size_t(K * N), t);
  const WeightZeroPoints zw = make_zero_points(ZpMode::PerColumn, t, N, rng);
  const std::vector<uint8_t> kn = encode(w, t);
  const std::vector<uint8_t> nk = encode(transpose(w, K, N), t);
  const PackedWeights a = onebit::pack_weights(kn.data(), t, K, N, false, zw.pointer(), zw.count);
  const PackedWeights b = onebit::pack_weights(nk.data(), t, K, N, true, zw.pointer(), zw.count);
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.zero_point, b.zero_point);
  EXPECT_EQ(a.col_sum, b.col_sum);
}

TEST_P(PackWeights, PerTensorZeroPointEqualsRepeatedPerColumn) {
  const QType t = GetParam();
  std::mt19937 rng(10);
  const int64_t K = 17, N = 5;
  const std::vector<uint8_t> bytes = encode(random_values(rng, size_t(K * N), t), t);
  const int32_t one = range_of(t).hi;
  const std::vector<int32_t> repeated(size_t(N), one);
  const PackedWeights a = onebit::pack_weights(bytes.data(), t, K, N, false, &one, 1);
  const PackedWeights b = onebit::pack_weights(bytes.data(), t, K, N, false, repeated.data(), N);
  EXPECT_EQ(a.zero_point, b.zero_point);
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.col_sum, b.col_sum);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, PackWeights, ::testing::Values(QType::Int8, QType::Uint8),
                         [](const ::testing::TestParamInfo<QType>& info) { return std::string(name_of(info.param)); });

// ---------------------------------------------------------------------------------------------
// Edge cases and worst-case values, for all four type combinations.

using TypePair = std::tuple<QType, QType>;

class GemmQ8Edges : public ::testing::TestWithParam<TypePair> {};

TEST_P(GemmQ8Edges, ZeroRowsWritesNothing) {
  const auto [x_type, w_type] = GetParam();
  std::mt19937 rng(11);
  const int64_t K = 17, N = 5;
  const std::vector<uint8_t> w = encode(random_values(rng, size_t(K * N), w_type), w_type);
  const int32_t zw = random_value(rng, w_type);
  const PackedWeights packed = onebit::pack_weights(w.data(), w_type, K, N, false, &zw, 1);
  const std::vector<uint8_t> x(size_t(K), 0x7F);  // a valid buffer, never read for M = 0
  Activation act;
  act.data = x.data();
  act.type = x_type;
  act.zero_point = random_value(rng, x_type);
  act.M = 0;
  std::vector<int32_t> acc(64, kSentinel);
  onebit::gemm_q8_host(act, packed, acc.data());
  for (size_t i = 0; i < acc.size(); ++i) EXPECT_EQ(acc[i], kSentinel) << "slot " << i;
}

// Operands whose every product is at the extreme: x - zx = -255 everywhere, and columns with
// w - zw = -255 (acc = +65025·K), +255 (acc = -65025·K), 0, and random.
GemmOperands worst_case(QType x_type, QType w_type, int64_t M, int64_t K, int64_t N, std::mt19937& rng) {
  const QRange xr = range_of(x_type);
  const QRange wr = range_of(w_type);
  GemmOperands o;
  o.x_type = x_type;
  o.w_type = w_type;
  o.M = M;
  o.K = K;
  o.N = N;
  o.x.assign(size_t(M * K), xr.lo);  // -128 for int8, 0 for uint8
  o.zx = xr.hi;                      // 127 for int8, 255 for uint8
  o.w.resize(size_t(K * N));
  o.zw.stored.resize(size_t(N));
  for (int64_t n = 0; n < N; ++n) {
    int32_t w_value = 0, zp = 0;
    switch (n % 4) {
      case 0:
        w_value = wr.lo;
        zp = wr.hi;
        break;  // w - zw = -255
      case 1:
        w_value = wr.hi;
        zp = wr.lo;
        break;  // w - zw = +255
      case 2:
        w_value = wr.lo;
        zp = wr.lo;
        break;  // w - zw = 0
      default:
        w_value = wr.lo;
        zp = random_value(rng, w_type);
        break;
    }
    for (int64_t k = 0; k < K; ++k) o.w[size_t(k * N + n)] = n % 4 == 3 ? random_value(rng, w_type) : w_value;
    o.zw.stored[size_t(n)] = zp;
  }
  o.zw.count = N;
  o.zw.per_column = o.zw.stored;
  return o;
}

// Runs the worst-case operands and also checks the closed-form values of columns 0..2.
void check_worst_case(QType x_type, QType w_type, int64_t M, int64_t K, int64_t N, bool w_is_nk) {
  std::mt19937 rng(12);
  GemmOperands o = worst_case(x_type, w_type, M, K, N, rng);
  o.w_is_nk = w_is_nk;
  ASSERT_TRUE(gemm_matches_reference(o));

  const std::vector<uint8_t> w_bytes = encode(w_is_nk ? transpose(o.w, K, N) : o.w, w_type);
  const std::vector<uint8_t> x_bytes = encode(o.x, x_type);
  const PackedWeights packed = onebit::pack_weights(w_bytes.data(), w_type, K, N, w_is_nk, o.zw.pointer(), o.zw.count);
  Activation act;
  act.data = x_bytes.data();
  act.type = x_type;
  act.zero_point = o.zx;
  act.M = M;
  std::vector<int32_t> acc(size_t(M * N));
  onebit::gemm_q8_host(act, packed, acc.data());
  const int64_t extreme = 255 * 255 * K;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < std::min<int64_t>(N, 3); ++n) {
      const int64_t want = n == 0 ? extreme : n == 1 ? -extreme : 0;
      EXPECT_EQ(int64_t(acc[size_t(m * N + n)]), want) << "m=" << m << " n=" << n << " K=" << K;
    }
  }
}

TEST_P(GemmQ8Edges, LargeKWorstCaseAccumulators) {
  const auto [x_type, w_type] = GetParam();
  check_worst_case(x_type, w_type, 3, 4096, 6, false);
  check_worst_case(x_type, w_type, 3, 4096, 6, true);
}

TEST_P(GemmQ8Edges, MaxKWorstCaseDoesNotOverflow) {
  static_assert(int64_t{255} * 255 * onebit::kMaxK <= INT32_MAX, "kMaxK must keep acc in int32");
  static_assert(int64_t{255} * 255 * (onebit::kMaxK + 1) > INT32_MAX, "kMaxK is the largest such K");
  const auto [x_type, w_type] = GetParam();
  check_worst_case(x_type, w_type, 1, onebit::kMaxK, 2, false);
  check_worst_case(x_type, w_type, 1, onebit::kMaxK, 2, true);
}

TEST_P(GemmQ8Edges, MaxKRandomMatchesReference) {
  const auto [x_type, w_type] = GetParam();
  std::mt19937 rng(13);
  GemmOperands o;
  o.x_type = x_type;
  o.w_type = w_type;
  o.M = 2;
  o.K = onebit::kMaxK;
  o.N = 3;
  o.x = random_values(rng, size_t(o.M * o.K), x_type);
  o.zx = range_of(x_type).hi;
  o.w = random_values(rng, size_t(o.K * o.N), w_type);
  o.zw = make_zero_points(ZpMode::PerColumnExtremes, w_type, o.N, rng);
  ASSERT_TRUE(gemm_matches_reference(o));
}

TEST_P(GemmQ8Edges, SmallHandComputedCase) {
  // x = [[1, 2, 3]] (zx 1), W = [[1, 0], [0, 1], [2, 2]] (zw 0 and 1); values valid in both types.
  const auto [x_type, w_type] = GetParam();
  GemmOperands o;
  o.x_type = x_type;
  o.w_type = w_type;
  o.M = 1;
  o.K = 3;
  o.N = 2;
  o.x = {1, 2, 3};
  o.zx = 1;
  o.w = {1, 0, 0, 1, 2, 2};
  o.zw.stored = {0, 1};
  o.zw.count = 2;
  o.zw.per_column = o.zw.stored;
  ASSERT_TRUE(gemm_matches_reference(o));
  // Column 0: 0·1 + 1·0 + 2·2 = 4.  Column 1: 0·(-1) + 1·0 + 2·1 = 2.
  const std::vector<int64_t> want = reference_gemm(o.x, o.zx, o.w, o.zw.per_column, 1, 3, 2);
  EXPECT_EQ(want, (std::vector<int64_t>{4, 2}));
}

std::string pair_name(const ::testing::TestParamInfo<TypePair>& info) {
  return std::string("x_") + name_of(std::get<0>(info.param)) + "_w_" + name_of(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(TypePairs, GemmQ8Edges,
                         ::testing::Combine(::testing::Values(QType::Int8, QType::Uint8),
                                            ::testing::Values(QType::Int8, QType::Uint8)),
                         pair_name);

}  // namespace
}  // namespace onebit_test
