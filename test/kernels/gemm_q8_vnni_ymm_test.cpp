// SPDX-License-Identifier: Apache-2.0
// The ymm width of the VNNI kernel template (gemm_q8_vnni.h) on CPUs without AVX-VNNI: the same
// template, tile sizes and register layout the AVX-VNNI kernel instantiates, with vpdpbusd in its
// EVEX encoding (AVX-512 VL + VNNI), which computes the same sums. Where the CPU has AVX-VNNI the
// kernel itself runs in gemm_q8_kernels_test; where it has neither this is skipped by name.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "fused_output_check.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm_q8_kernels.h"
#include "reference_gemm.h"
#include "test_operands.h"

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512vl,avx512vnni")

#include "kernels/gemm_q8_vnni.h"

namespace {

void gemm_q8_blocks_ymm_evex(const onebit::PreparedActivation& x, const onebit::PackedWeights& w, int64_t block_begin,
                             int64_t block_end, int32_t* acc, int64_t acc_stride,
                             const onebit::FusedFloatOutput* fused) {
  onebit::gemm_q8_blocks_vnni<onebit::Ymm</*kEvex=*/true>>(x, w, block_begin, block_end, acc, acc_stride, fused);
}

}  // namespace

#pragma GCC pop_options

namespace {

using onebit::QType;
using namespace onebit_test;

class VnniYmmTemplate : public ::testing::TestWithParam<std::tuple<QType, QType>> {
 protected:
  void SetUp() override {
    if (!onebit::cpu_features().avx512_vnni)
      GTEST_SKIP() << "kernel avxvnni's ymm template (EVEX): this CPU has no AVX-512 VNNI, not tested";
  }
};

// Random operands over the decode and prefill paths, the row and block tails, sub-ranges of
// blocks, and the worst-case values at K = kMaxK.
TEST_P(VnniYmmTemplate, MatchesReference) {
  const auto [xt, wt] = GetParam();
  std::mt19937 rng(46);
  auto check = [&](int64_t M, int64_t K, int64_t N, int64_t b0, int64_t b1, std::vector<int32_t> x, int32_t zx,
                   std::vector<int32_t> w, std::vector<int32_t> zw) {
    const auto x_bytes = encode(x, xt), w_bytes = encode(w, wt);
    const auto packed = onebit::pack_weights(w_bytes.data(), wt, K, N, false, zw.data(), N, onebit::KGroup::Quads);
    const auto prepared = onebit::prepare_activation({x_bytes.data(), xt, zx, M}, K, onebit::KGroup::Quads);
    std::vector<int32_t> acc(static_cast<size_t>(M * N), 0x5a5a5a5a);
    gemm_q8_blocks_ymm_evex(prepared, packed, b0, b1, acc.data(), N, nullptr);
    const auto want = reference_gemm(x, zx, w, zw, M, K, N);
    const int64_t n0 = b0 * onebit::kBlockN, n1 = std::min(b1 * onebit::kBlockN, N);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const auto i = static_cast<size_t>(m * N + n);
        ASSERT_EQ(acc[i], n >= n0 && n < n1 ? want[i] : 0x5a5a5a5a)
            << "M=" << M << " K=" << K << " N=" << N << " m=" << m << " n=" << n << " blocks [" << b0 << "," << b1
            << ")";
      }
  };
  for (int64_t M : {0, 1, 3, 4, 5, 7, 13, 33})
    for (int64_t K : {1, 5, 64, 257})
      for (int64_t N : {1, 17, 40}) {
        std::vector<int32_t> zw;
        for (int64_t n = 0; n < N; ++n) zw.push_back(random_value(rng, wt));
        const auto x = random_values(rng, size_t(M * K), xt);
        const auto w = random_values(rng, size_t(K * N), wt);
        const int32_t zx = random_value(rng, xt);
        const int64_t blocks = (N + 15) / 16;
        check(M, K, N, 0, blocks, x, zx, w, zw);
        if (blocks > 1) check(M, K, N, 1, blocks, x, zx, w, zw);
      }
  const QRange xr = range_of(xt), wr = range_of(wt);
  for (int64_t M : {2, 7}) {
    const int64_t K = onebit::kMaxK, N = 17;
    check(M, K, N, 0, 2, std::vector<int32_t>(size_t(M * K), xr.hi), xr.lo, std::vector<int32_t>(size_t(K * N), wr.lo),
          std::vector<int32_t>(size_t(N), wr.hi));
  }
}

TEST_P(VnniYmmTemplate, FusedFloatOutputEqualsTheEpilogue) {
  const auto [xt, wt] = GetParam();
  std::mt19937 rng(48);
  for (int64_t M : {0, 1, 4, 5, 6, 7, 13})
    for (int64_t N : {1, 8, 16, 33})
      for (int variant = 0; variant < 4; ++variant) {
        GemmCase c{xt,
                   wt,
                   M,
                   37,
                   N,
                   random_value(rng, xt),
                   random_values(rng, size_t(M * 37), xt),
                   random_values(rng, size_t(37 * N), wt),
                   {}};
        for (int64_t n = 0; n < N; ++n) c.zw.push_back(random_value(rng, wt));
        const int64_t blocks = (N + 15) / 16;
        check_fused_float_output(gemm_q8_blocks_ymm_evex, onebit::KGroup::Quads, c, 0, blocks, variant & 1,
                                 variant & 2);
        if (N % 16 == 0)
          check_fused_float_output(gemm_q8_blocks_ymm_evex, onebit::KGroup::Quads, c, 0, blocks, variant & 1,
                                   variant & 2, true);
      }
}

INSTANTIATE_TEST_SUITE_P(TypePairs, VnniYmmTemplate,
                         ::testing::Combine(::testing::Values(QType::Int8, QType::Uint8),
                                            ::testing::Values(QType::Int8, QType::Uint8)),
                         [](const auto& info) {
                           return std::string("x_") + name_of(std::get<0>(info.param)) + "_w_" +
                                  name_of(std::get<1>(info.param));
                         });

}  // namespace
