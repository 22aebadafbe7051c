// SPDX-License-Identifier: Apache-2.0
// Every gemm_q8 kernel (portable reference, AVX2, AVX-VNNI, AVX-512 VNNI) against the int64
// reference loop, with operands packed and prepared in the kernel's own grouping, called
// directly on sub-ranges of column blocks, with values chosen where a 16-bit pair sum would
// saturate (vpmaddubsw's trap: 2 · 255 · 128 > 32767) and at the int32 bound. A kernel this CPU
// cannot run is skipped by name, so the log shows what was not covered.
#include "kernels/gemm_q8_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "fused_output_check.h"
#include "kernels/cpu_features.h"
#include "reference_gemm.h"
#include "test_operands.h"

namespace {

using onebit::HostKernel;
using onebit::QType;
using namespace onebit_test;

using Case = GemmCase;

// What the reference value may be compared with: itself, or (past the int32 bound) the same
// value modulo 2^32, which is what a kernel that never saturates produces.
enum class Expect { Exact, Modulo2To32 };

// Runs `kernel` over column blocks [b0, b1) and checks those columns against the reference;
// columns outside the range must stay untouched.
void check_kernel(const HostKernel& kernel, const Case& c, int64_t b0, int64_t b1, Expect expect = Expect::Exact) {
  const auto x_bytes = encode(c.x, c.x_type);
  const auto w_bytes = encode(c.w, c.w_type);
  const onebit::PackedWeights packed =
      onebit::pack_weights(w_bytes.data(), c.w_type, c.K, c.N, false, c.zw.data(), c.N, kernel.group);
  const onebit::PreparedActivation prepared =
      onebit::prepare_activation({x_bytes.data(), c.x_type, c.zx, c.M}, c.K, kernel.group);
  constexpr int32_t kSentinel = 0x5a5a5a5a;
  std::vector<int32_t> acc(static_cast<size_t>(c.M * c.N), kSentinel);
  kernel.run(prepared, packed, b0, b1, acc.data(), c.N, nullptr);
  const std::vector<int64_t> want = reference_gemm(c.x, c.zx, c.w, c.zw, c.M, c.K, c.N);
  const int64_t n0 = b0 * onebit::kBlockN, n1 = std::min(b1 * onebit::kBlockN, c.N);
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      const auto i = static_cast<size_t>(m * c.N + n);
      if (expect == Expect::Exact) {
        ASSERT_TRUE(want[i] >= INT32_MIN && want[i] <= INT32_MAX) << "test case out of int32: " << want[i];
      }
      const int64_t expected =
          (n >= n0 && n < n1) ? int64_t(static_cast<int32_t>(uint32_t(uint64_t(want[i])))) : kSentinel;
      ASSERT_EQ(acc[i], expected) << kernel.name << " M=" << c.M << " K=" << c.K << " N=" << c.N << " m=" << m
                                  << " n=" << n << " blocks [" << b0 << "," << b1 << ")";
    }
}

void check_all_columns(const HostKernel& kernel, const Case& c, Expect expect = Expect::Exact) {
  check_kernel(kernel, c, 0, (c.N + onebit::kBlockN - 1) / onebit::kBlockN, expect);
}

// How the weight zero points are drawn: none, one for the tensor, one per column.
enum class ZeroPoints { None, PerTensor, PerColumn };

Case random_case(std::mt19937& rng, QType xt, QType wt, int64_t M, int64_t K, int64_t N,
                 ZeroPoints zps = ZeroPoints::PerColumn) {
  Case c{xt, wt, M, K, N, 0, {}, {}, {}};
  c.x = random_values(rng, static_cast<size_t>(M * K), xt);
  c.w = random_values(rng, static_cast<size_t>(K * N), wt);
  c.zx = random_value(rng, xt);
  const int32_t per_tensor = zps == ZeroPoints::None ? 0 : random_value(rng, wt);
  for (int64_t n = 0; n < N; ++n) c.zw.push_back(zps == ZeroPoints::PerColumn ? random_value(rng, wt) : per_tensor);
  return c;
}

// Every activation and weight at the end of its range that makes |x - zx| and |w - zw| largest,
// with the signs chosen so products add up (same_sign) or not. x_high puts x at the top of its
// range (the largest raw vpdpbusd products, 255 · -128) instead of the bottom.
Case extreme_case(QType xt, QType wt, int64_t M, int64_t K, int64_t N, bool same_sign, bool x_high = false) {
  const QRange xr = range_of(xt), wr = range_of(wt);
  Case c{xt, wt, M, K, N, x_high ? xr.lo : xr.hi, {}, {}, {}};
  c.x.assign(static_cast<size_t>(M * K), x_high ? xr.hi : xr.lo);  // x - zx = ±255
  const bool w_low = same_sign != x_high;                          // w - zw of x - zx's sign, or not
  c.w.assign(static_cast<size_t>(K * N), w_low ? wr.lo : wr.hi);
  c.zw.assign(static_cast<size_t>(N), w_low ? wr.hi : wr.lo);
  return c;
}

// Activations and weights drawn only from the two ends of their ranges (full-range ±127/−128
// and 0/255), zero points from the ends too: every product is as large as it gets.
Case full_range_case(std::mt19937& rng, QType xt, QType wt, int64_t M, int64_t K, int64_t N) {
  const QRange xr = range_of(xt), wr = range_of(wt);
  auto end_of = [&rng](QRange r) { return (rng() & 1) ? r.hi : r.lo; };
  Case c{xt, wt, M, K, N, end_of(xr), {}, {}, {}};
  for (int64_t i = 0; i < M * K; ++i) c.x.push_back(end_of(xr));
  for (int64_t i = 0; i < K * N; ++i) c.w.push_back(end_of(wr));
  for (int64_t n = 0; n < N; ++n) c.zw.push_back(end_of(wr));
  return c;
}

using Param = std::tuple<std::string, QType, QType>;

class GemmKernels : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    for (const HostKernel& k : onebit::host_kernels())
      if (std::get<0>(GetParam()) == k.name) kernel_ = &k;
    ASSERT_NE(kernel_, nullptr) << "no kernel named " << std::get<0>(GetParam());
    if (!kernel_->available()) GTEST_SKIP() << "kernel " << kernel_->name << ": this CPU cannot run it, not tested";
  }
  QType x_type() const { return std::get<1>(GetParam()); }
  QType w_type() const { return std::get<2>(GetParam()); }
  const HostKernel* kernel_ = nullptr;
};

TEST_P(GemmKernels, RandomShapesMatchReference) {
  std::mt19937 rng(42);
  for (int64_t M : {0, 1, 3, 4, 5, 9, 31, 33, 128})
    for (int64_t K : {1, 2, 3, 4, 5, 31, 64, 257})
      for (int64_t N : {1, 15, 16, 17, 33, 40})
        check_all_columns(*kernel_, random_case(rng, x_type(), w_type(), M, K, N));
}

TEST_P(GemmKernels, EveryZeroPointKindMatchesReference) {
  std::mt19937 rng(44);
  for (ZeroPoints zps : {ZeroPoints::None, ZeroPoints::PerTensor, ZeroPoints::PerColumn})
    for (int64_t M : {1, 4, 13}) check_all_columns(*kernel_, random_case(rng, x_type(), w_type(), M, 97, 35, zps));
}

// K = 0 (an activation x activation MatMul of empty rows) gives zeros. The rows are empty, their
// data() null: AMX's padded copy at 17 rows passed memcpy null pointers (UBSan, the sanitizer job).
TEST_P(GemmKernels, AnEmptyKGivesZeros) {
  std::mt19937 rng(49);
  for (int64_t M : {1, 5, 16, 17, 33}) check_all_columns(*kernel_, random_case(rng, x_type(), w_type(), M, 0, 20));
}

TEST_P(GemmKernels, FullRangeValuesMatchReference) {
  std::mt19937 rng(45);
  for (int64_t M : {1, 3, 4, 5, 33})
    for (int64_t K : {4, 255, 1030}) check_all_columns(*kernel_, full_range_case(rng, x_type(), w_type(), M, K, 49));
}

// One row reads several column blocks side by side (AVX2): every count of blocks around a whole
// number of streams, the leftover blocks after them, and sub-ranges starting anywhere.
TEST_P(GemmKernels, OneRowOverManyBlocksMatchesReference) {
  std::mt19937 rng(48);
  for (int64_t blocks : {1, 2, 3, 4, 5, 7, 8, 9, 13})
    for (int64_t K : {1, 3, 64, 257}) {
      const Case c = random_case(rng, x_type(), w_type(), 1, K, blocks * onebit::kBlockN - (K % 2));
      check_all_columns(*kernel_, c);
      check_kernel(*kernel_, c, 1, blocks);
    }
}

TEST_P(GemmKernels, SubRangesOfBlocks) {
  std::mt19937 rng(43);
  for (int64_t M : {1, 4, 9, 33}) {
    const Case c = random_case(rng, x_type(), w_type(), M, 70, 75);  // 5 blocks, the last one partial
    for (int64_t b0 = 0; b0 <= 5; ++b0)
      for (int64_t b1 = b0; b1 <= 5; ++b1) check_kernel(*kernel_, c, b0, b1);
  }
}

TEST_P(GemmKernels, FusedFloatOutputEqualsTheEpilogue) {
  if (!kernel_->fuses_float_output) GTEST_SKIP() << "kernel " << kernel_->name << " fills acc only";
  std::mt19937 rng(47);
  for (int64_t M : {0, 1, 3, 4, 5, 8, 9, 17, 70})
    for (int64_t N : {1, 16, 33, 64, 100})
      for (int variant = 0; variant < 4; ++variant) {
        const Case c = random_case(rng, x_type(), w_type(), M, 37, N);
        const int64_t blocks = (N + onebit::kBlockN - 1) / onebit::kBlockN;
        check_fused_float_output(kernel_->run, kernel_->group, c, 0, blocks, variant & 1, variant & 2);
        if (blocks > 2)
          check_fused_float_output(kernel_->run, kernel_->group, c, 1, blocks - 1, variant & 1, variant & 2);
        if (N % 16 == 0)
          check_fused_float_output(kernel_->run, kernel_->group, c, 0, blocks, variant & 1, variant & 2, true);
      }
}

TEST_P(GemmKernels, ValuesThatSaturateSixteenBitPairSums) {
  for (bool same_sign : {true, false})
    for (int64_t K : {2, 33, 1024}) check_kernel(*kernel_, extreme_case(x_type(), w_type(), 7, K, 19, same_sign), 0, 2);
}

// K = kMaxK is the largest K at which the worst case still fits in int32; the decode and the
// prefill paths (1-4 rows, more, and AMX's 16 and more) all hold it, with x at either end of its range.
TEST_P(GemmKernels, AccumulatorsAtTheInt32LimitDoNotOverflow) {
  static_assert(int64_t{255} * 255 * onebit::kMaxK <= INT32_MAX);
  for (int64_t M : {1, 2, 5, 17})
    for (bool same_sign : {true, false})
      for (bool x_high : {false, true})
        check_all_columns(*kernel_,
                          extreme_case(x_type(), w_type(), M, onebit::kMaxK, M == 1 ? 81 : 17, same_sign, x_high));
}

// Past the bound the worst case no longer fits int32 (the EP refuses such a K). Every kernel
// still gives the true value modulo 2^32: nothing saturates, in the fold nor in the raw dot
// products. At the second K even a quarter of a row's raw vpdpbusd products (x + 128 = 255
// against w = -128) leaves int32, so splitting k over accumulator sets does not hide a
// saturating instruction.
TEST_P(GemmKernels, PastTheInt32LimitEveryKernelWrapsAlike) {
  constexpr int64_t kQuarterOverflows = 4 * 65794;
  static_assert(int64_t{255} * 255 * (onebit::kMaxK + 1) > INT32_MAX);
  static_assert(int64_t{255} * 128 * (kQuarterOverflows / 4) > INT32_MAX);
  for (int64_t M : {5, 17})
    for (int64_t K : {onebit::kMaxK + 1, kQuarterOverflows})
      check_all_columns(*kernel_, extreme_case(x_type(), w_type(), M, K, 17, false, true), Expect::Modulo2To32);
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const HostKernel& k : onebit::host_kernels()) names.push_back(k.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(KernelsAndTypes, GemmKernels,
                         ::testing::Combine(::testing::ValuesIn(kernel_names()),
                                            ::testing::Values(QType::Int8, QType::Uint8),
                                            ::testing::Values(QType::Int8, QType::Uint8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_x_" + name_of(std::get<1>(info.param)) + "_w_" +
                                  name_of(std::get<2>(info.param));
                         });

// cpu_features() reads CPUID and XGETBV itself; libgcc's __builtin_cpu_supports does the same
// checks independently.
TEST(CpuFeatures, AgreeWithTheCompilerRuntime) {
  __builtin_cpu_init();
  const onebit::CpuFeatures& f = onebit::cpu_features();
  EXPECT_EQ(f.avx2, bool(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(f.avx_vnni, bool(__builtin_cpu_supports("avxvnni")));
  const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  EXPECT_EQ(f.avx512, avx512);
  EXPECT_EQ(f.avx512_vnni, avx512 && __builtin_cpu_supports("avx512vnni"));
}

// gemm_q8_blocks runs the selected kernel on operands in its grouping and the portable one on
// operands in the other grouping: both give the reference result.
TEST(GemmQ8Blocks, ExactInEitherGrouping) {
  std::mt19937 rng(47);
  const Case c = random_case(rng, QType::Uint8, QType::Int8, 9, 70, 40);
  const auto x_bytes = encode(c.x, c.x_type), w_bytes = encode(c.w, c.w_type);
  const std::vector<int64_t> want = reference_gemm(c.x, c.zx, c.w, c.zw, c.M, c.K, c.N);
  for (const onebit::KGroup group : {onebit::KGroup::Pairs, onebit::KGroup::Quads}) {
    const auto packed = onebit::pack_weights(w_bytes.data(), c.w_type, c.K, c.N, false, c.zw.data(), c.N, group);
    const auto prepared = onebit::prepare_activation({x_bytes.data(), c.x_type, c.zx, c.M}, c.K, group);
    std::vector<int32_t> acc(static_cast<size_t>(c.M * c.N));
    onebit::gemm_q8_blocks(prepared, packed, 0, packed.n_blocks(), acc.data(), c.N);
    for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(acc[i], want[i]) << "group " << int(group) << " i=" << i;
  }
}

// Restores ONEBIT_KERNEL as it was when the test started.
class KernelEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* v = std::getenv("ONEBIT_KERNEL");
    had_ = v != nullptr;
    if (had_) saved_ = v;
  }
  void TearDown() override {
    if (had_)
      setenv("ONEBIT_KERNEL", saved_.c_str(), 1);
    else
      unsetenv("ONEBIT_KERNEL");
  }
  bool had_ = false;
  std::string saved_;
};

TEST_F(KernelEnv, UnsetOrAvailableKernelIsNoError) {
  unsetenv("ONEBIT_KERNEL");
  EXPECT_EQ(onebit::kernel_choice_error(), "");
  for (const HostKernel& k : onebit::host_kernels()) {
    if (!k.available()) continue;
    setenv("ONEBIT_KERNEL", k.name, 1);
    EXPECT_EQ(onebit::kernel_choice_error(), "") << k.name;
  }
}

TEST_F(KernelEnv, UnknownKernelNamesTheValueAndTheChoices) {
  setenv("ONEBIT_KERNEL", "avx9000", 1);
  const std::string error = onebit::kernel_choice_error();
  EXPECT_NE(error.find("ONEBIT_KERNEL='avx9000'"), std::string::npos) << error;
  EXPECT_NE(error.find("avx512vnni|avxvnni|avx2|portable"), std::string::npos) << error;
}

TEST_F(KernelEnv, KernelTheCpuCannotRunIsAnError) {
  int unavailable = 0;
  for (const HostKernel& k : onebit::host_kernels()) {
    if (k.available()) continue;
    ++unavailable;
    setenv("ONEBIT_KERNEL", k.name, 1);
    EXPECT_EQ(onebit::kernel_choice_error(),
              "ONEBIT_KERNEL=" + std::string(k.name) + ": this CPU (or its OS) cannot run that kernel");
  }
  if (unavailable == 0) GTEST_SKIP() << "this CPU runs every kernel";
}

// The selection happens once per process, from the environment ctest gives it: ONEBIT_KERNEL
// when valid, else the fastest kernel this CPU runs (by libgcc's feature checks).
TEST(GemmKernelSelection, NamesTheKernelInUse) {
  __builtin_cpu_init();
  const char* forced = std::getenv("ONEBIT_KERNEL");
  std::string want = "portable";
  if (__builtin_cpu_supports("avx2")) want = "avx2";
  if (__builtin_cpu_supports("avxvnni")) want = "avxvnni";
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    want = "avx512vnni";
  // AMX also needs the OS to grant the tile state, which libgcc does not check.
  if (want == "avx512vnni" && onebit::cpu_features().amx_int8) want = "amx";
  if (forced != nullptr && onebit::kernel_choice_error().empty()) want = forced;
  EXPECT_EQ(std::string(onebit::selected_kernel_name()), want);
  EXPECT_EQ(onebit::selected_k_group(), onebit::selected_host_kernel().group);
}

}  // namespace
