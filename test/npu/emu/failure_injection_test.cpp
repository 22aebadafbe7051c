// SPDX-License-Identifier: Apache-2.0
// Injected device failures (design load, launch, timeout) surface as clear errors the caller
// can act on, and the device path works again once the failure is gone.
#include "npu/emu/failure_injection.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "npu/device_gemm.h"
#include "npu/emu/design_cache.h"
#include "npu/emu/emu_device.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t K = 72, N = 36, kRows = 36;

class FailureInjection : public onebit_npu_test::EmuDeviceFixture {
 protected:
  void SetUp() override {
    set_injected_failure(InjectedFailure::kNone);
    EmuDeviceFixture::SetUp();
    if (HasFatalFailure()) return;
    std::mt19937 rng(9);
    w_ = onebit_npu_test::random_int8(rng, K * N);
    a_ = onebit_npu_test::random_int8(rng, kRows * K);
    const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a_, w_, kRows, K, N);
    ref_.assign(ref.begin(), ref.end());
  }
  void TearDown() override { set_injected_failure(InjectedFailure::kNone); }

  Result<std::unique_ptr<DeviceGemm>> make_gemm(std::chrono::milliseconds timeout = 10s) {
    GemmOptions options;
    options.wait_timeout = timeout;
    return DeviceGemm::create(*device_, cache_, K, N, w_.data(), WeightLayout::kKN, options);
  }

  // The caller's pattern: try the device, on any error compute on the host.
  std::vector<int32_t> call_with_fallback(DeviceGemm& gemm, Status* device_status) {
    std::vector<int32_t> c(kRows * N, 0);
    *device_status = gemm.run(a_.data(), kRows, c.data());
    if (!*device_status) {
      const std::vector<int64_t> host = onebit_npu_test::reference_gemm(a_, w_, kRows, K, N);
      c.assign(host.begin(), host.end());
    }
    return c;
  }

  DesignCache cache_{tmp_.file("designs")};
  std::vector<int8_t> w_, a_;
  std::vector<int32_t> ref_;
};

TEST_F(FailureInjection, DesignLoadFailure) {
  set_injected_failure(InjectedFailure::kDesign);
  auto gemm = make_gemm();
  ASSERT_FALSE(gemm);
  EXPECT_EQ(gemm.error().code, ErrorCode::kDesign);
  EXPECT_EQ(gemm.error().to_string(),
            "design: design emu 72x36 m32: injected design load failure (ONEBIT_NPU_FAIL=design)");
  set_injected_failure(InjectedFailure::kNone);
  EXPECT_TRUE(make_gemm());
}

TEST_F(FailureInjection, LaunchFailure) {
  auto gemm = make_gemm();
  ASSERT_TRUE(gemm);
  set_injected_failure(InjectedFailure::kLaunch);
  Status s;
  const std::vector<int32_t> c = call_with_fallback(**gemm, &s);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::kLaunch);
  EXPECT_EQ(s.reason(), "injected launch failure (ONEBIT_NPU_FAIL=launch)");
  EXPECT_EQ(c, ref_);  // the host result

  set_injected_failure(InjectedFailure::kNone);
  std::vector<int32_t> again(kRows * N);
  ASSERT_TRUE((*gemm)->run(a_.data(), kRows, again.data()));
  EXPECT_EQ(again, ref_);
}

TEST_F(FailureInjection, WaitTimeoutCancelsTheRun) {
  auto gemm = make_gemm(100ms);
  ASSERT_TRUE(gemm);
  set_injected_failure(InjectedFailure::kTimeout);
  Status s;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> c = call_with_fallback(**gemm, &s);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::kTimeout);
  EXPECT_EQ(s.reason(), "2 launch(es) did not finish within 100 ms; cancelled");
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 5s);  // cancelled, not waited out
  EXPECT_EQ(c, ref_);

  // The stalled runs were cancelled; the device works again.
  set_injected_failure(InjectedFailure::kNone);
  std::vector<int32_t> again(kRows * N);
  CallStats stats;
  ASSERT_TRUE((*gemm)->run(a_.data(), kRows, again.data(), &stats));
  EXPECT_EQ(again, ref_);
  EXPECT_EQ(stats.launches, 2u);
}

TEST_F(FailureInjection, TimeoutAtTheDeviceInterface) {
  auto gemm = make_gemm();  // designs only
  ASSERT_TRUE(gemm);
  const Design design = onebit_npu_test::must_build(K, N, 4);
  auto loaded = device_->load_design(design);
  ASSERT_TRUE(loaded);
  auto w = device_->alloc_bo(packed_weight_bytes(K, N, design.info.tiling));
  auto a = device_->alloc_bo(4 * K);
  auto c = device_->alloc_bo(4 * N * 4);
  set_injected_failure(InjectedFailure::kTimeout);
  auto run = device_->launch({loaded->get(), a->get(), 0, w->get(), c->get(), 0});
  ASSERT_TRUE(run);  // launching is asynchronous: the stall shows up in wait()
  EXPECT_EQ(device_->wait(*run, 20ms).code(), ErrorCode::kTimeout);
  EXPECT_EQ(device_->wait(*run, 20ms).code(), ErrorCode::kTimeout);
  device_->cancel(*run);
  Status after = device_->wait(*run, 1s);
  EXPECT_EQ(after.code(), ErrorCode::kTimeout);
  EXPECT_EQ(after.reason(), "run cancelled");
}

TEST_F(FailureInjection, ClosingWithAStalledRunDoesNotHang) {
  const Design design = onebit_npu_test::must_build(K, N, 4);
  auto loaded = device_->load_design(design);
  auto w = device_->alloc_bo(packed_weight_bytes(K, N, design.info.tiling));
  auto a = device_->alloc_bo(4 * K);
  auto c = device_->alloc_bo(4 * N * 4);
  set_injected_failure(InjectedFailure::kTimeout);
  auto first = device_->launch({loaded->get(), a->get(), 0, w->get(), c->get(), 0});
  auto second = device_->launch({loaded->get(), a->get(), 0, w->get(), c->get(), 0});
  ASSERT_TRUE(first && second);
  device_->close();
  EXPECT_FALSE(device_->wait(*first, 1s));
  EXPECT_FALSE(device_->wait(*second, 1s));
}

// ONEBIT_NPU_FAIL is read from the environment at the first query.
int injected_in_child(const char* value) {
  const pid_t child = fork();
  if (child == 0) {
    setenv("ONEBIT_NPU_FAIL", value, 1);
    _exit(static_cast<int>(injected_failure()));
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(FailureInjectionEnv, ReadsOnebitNpuFail) {
  EXPECT_EQ(injected_in_child("design"), static_cast<int>(InjectedFailure::kDesign));
  EXPECT_EQ(injected_in_child("launch"), static_cast<int>(InjectedFailure::kLaunch));
  EXPECT_EQ(injected_in_child("timeout"), static_cast<int>(InjectedFailure::kTimeout));
  EXPECT_EQ(injected_in_child(""), static_cast<int>(InjectedFailure::kNone));
  EXPECT_EQ(injected_in_child("bogus"), static_cast<int>(InjectedFailure::kNone));  // warned and ignored
  EXPECT_FALSE(injected_failure_from_name("bogus"));
  EXPECT_STREQ(injected_failure_name(InjectedFailure::kTimeout), "timeout");
}

}  // namespace
}  // namespace onebit::npu

namespace onebit::npu {
namespace {

// Four calls queued on one stuck shape: each returns within its own timeout (plus slack for a
// loaded machine), instead of the last one waiting behind the three before it (4 × timeout).
TEST_F(FailureInjection, QueuedCallsWaitNoLongerThanTheirOwnTimeout) {
  auto gemm = make_gemm(300ms);
  ASSERT_TRUE(gemm) << gemm.error().to_string();
  set_injected_failure(InjectedFailure::kTimeout);
  std::vector<std::thread> threads;
  std::vector<double> seconds(4);
  std::vector<ErrorCode> codes(4);
  for (size_t i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int32_t> c(kRows * N);
      const auto start = std::chrono::steady_clock::now();
      Status s = (*gemm)->run(a_.data(), kRows, c.data());
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      codes[i] = s.code();
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(codes[i], ErrorCode::kTimeout) << "call " << i;
    EXPECT_LT(seconds[i], 0.9) << "call " << i << " waited behind the others";
  }
}

}  // namespace
}  // namespace onebit::npu
