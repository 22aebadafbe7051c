// SPDX-License-Identifier: Apache-2.0
// Every gemm_q8 kernel (portable reference, AVX2 where the CPU has it) against the int64
// reference loop, called directly on sub-ranges of column blocks, with values chosen where
// a 16-bit pair sum would saturate (vpmaddubsw's trap: 2 · 255 · 128 > 32767).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "kernels/gemm_q8_kernels.h"
#include "reference_gemm.h"
#include "test_operands.h"

namespace {

using onebit::QType;
using namespace onebit_test;

struct Kernel {
  const char* name;
  onebit::GemmBlocksKernel fn;
};

std::vector<Kernel> kernels() {
  std::vector<Kernel> list{{"portable", onebit::gemm_q8_blocks_portable}};
  if (onebit::avx2_available()) list.push_back({"avx2", onebit::gemm_q8_blocks_avx2});
  return list;
}

struct Case {
  QType x_type, w_type;
  int64_t M, K, N;
  int32_t zx;
  std::vector<int32_t> x, w, zw;
};

// Runs `kernel` over column blocks [b0, b1) and checks those columns against the reference;
// columns outside the range must stay untouched.
void check_kernel(const Kernel& kernel, const Case& c, int64_t b0, int64_t b1) {
  const auto x_bytes = encode(c.x, c.x_type);
  const auto w_bytes = encode(c.w, c.w_type);
  const onebit::PackedWeights packed =
      onebit::pack_weights(w_bytes.data(), c.w_type, c.K, c.N, false, c.zw.data(), c.N);
  const onebit::PreparedActivation prepared =
      onebit::prepare_activation({x_bytes.data(), c.x_type, c.zx, c.M}, c.K);
  constexpr int32_t kSentinel = 0x5a5a5a5a;
  std::vector<int32_t> acc(static_cast<size_t>(c.M * c.N), kSentinel);
  kernel.fn(prepared, packed, b0, b1, acc.data(), c.N);
  const std::vector<int64_t> want = reference_gemm(c.x, c.zx, c.w, c.zw, c.M, c.K, c.N);
  const int64_t n0 = b0 * onebit::kBlockN, n1 = std::min(b1 * onebit::kBlockN, c.N);
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      const auto i = static_cast<size_t>(m * c.N + n);
      const int64_t expected = (n >= n0 && n < n1) ? want[i] : kSentinel;
      ASSERT_EQ(acc[i], expected) << kernel.name << " M=" << c.M << " K=" << c.K << " N=" << c.N << " m=" << m
                                  << " n=" << n << " blocks [" << b0 << "," << b1 << ")";
    }
}

Case random_case(std::mt19937& rng, QType xt, QType wt, int64_t M, int64_t K, int64_t N) {
  Case c{xt, wt, M, K, N, 0, {}, {}, {}};
  c.x = random_values(rng, static_cast<size_t>(M * K), xt);
  c.w = random_values(rng, static_cast<size_t>(K * N), wt);
  c.zx = random_value(rng, xt);
  for (int64_t n = 0; n < N; ++n) c.zw.push_back(random_value(rng, wt));
  return c;
}

// Every activation and weight at the end of its range that makes |x - zx| and |w - zw| largest,
// with the signs chosen so pair products add up instead of cancelling.
Case extreme_case(QType xt, QType wt, int64_t M, int64_t K, int64_t N, bool same_sign) {
  const QRange xr = range_of(xt), wr = range_of(wt);
  Case c{xt, wt, M, K, N, xr.hi, {}, {}, {}};
  c.x.assign(static_cast<size_t>(M * K), xr.lo);          // x - zx = lo - hi: -255 or -255
  c.w.assign(static_cast<size_t>(K * N), same_sign ? wr.lo : wr.hi);
  c.zw.assign(static_cast<size_t>(N), same_sign ? wr.hi : wr.lo);
  return c;
}

class GemmKernels : public ::testing::TestWithParam<std::tuple<QType, QType>> {};

TEST_P(GemmKernels, RandomShapesMatchReference) {
  const auto [xt, wt] = GetParam();
  std::mt19937 rng(42);
  for (int64_t M : {1, 2, 5, 6, 7, 13, 36, 37})
    for (int64_t K : {1, 2, 3, 31, 64, 257})
      for (int64_t N : {1, 15, 16, 17, 40}) {
        const Case c = random_case(rng, xt, wt, M, K, N);
        for (const Kernel& k : kernels()) check_kernel(k, c, 0, (N + 15) / 16);
      }
}

TEST_P(GemmKernels, SubRangesOfBlocks) {
  const auto [xt, wt] = GetParam();
  std::mt19937 rng(43);
  for (int64_t M : {1, 9}) {
    const Case c = random_case(rng, xt, wt, M, 70, 75);  // 5 blocks, the last one partial
    for (const Kernel& k : kernels())
      for (int64_t b0 = 0; b0 <= 5; ++b0)
        for (int64_t b1 = b0; b1 <= 5; ++b1) check_kernel(k, c, b0, b1);
  }
}

TEST_P(GemmKernels, ValuesThatSaturateSixteenBitPairSums) {
  const auto [xt, wt] = GetParam();
  for (bool same_sign : {true, false})
    for (int64_t K : {2, 33, 1024}) {
      const Case c = extreme_case(xt, wt, 7, K, 19, same_sign);
      for (const Kernel& k : kernels()) check_kernel(k, c, 0, 2);
    }
}

TEST_P(GemmKernels, AccumulatorsAtTheInt32LimitDoNotOverflow) {
  const auto [xt, wt] = GetParam();
  const Case c = extreme_case(xt, wt, 2, onebit::kMaxK, 3, true);
  for (const Kernel& k : kernels()) check_kernel(k, c, 0, 1);
}

INSTANTIATE_TEST_SUITE_P(TypePairs, GemmKernels,
                         ::testing::Combine(::testing::Values(QType::Int8, QType::Uint8),
                                            ::testing::Values(QType::Int8, QType::Uint8)),
                         [](const auto& info) {
                           return std::string("x_") + name_of(std::get<0>(info.param)) + "_w_" +
                                  name_of(std::get<1>(info.param));
                         });

TEST(GemmKernelSelection, NamesTheKernelInUse) {
  const char* forced = std::getenv("ONEBIT_KERNEL");
  const bool portable = !onebit::avx2_available() || (forced && std::string(forced) == "portable");
  EXPECT_EQ(std::string(onebit::selected_kernel_name()), portable ? "portable" : "avx2");
}

}  // namespace
