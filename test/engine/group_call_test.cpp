// SPDX-License-Identifier: Apache-2.0
// One call through the engine's entry point (run_group): the host route against a plain reference
// loop, the device route (emulated array) identical to it, the route reasons and what count_call adds.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/group_run.h"
#include "npu/emu/failure_injection.h"
#include "npu_test_util.h"

namespace onebit {
namespace {

constexpr int64_t K = 40, N = 24;

// uint8 weights with per-column zero points, int8 activations with a zero point: every fold term.
struct Operands {
  std::vector<uint8_t> w = std::vector<uint8_t>(K * N);
  std::vector<int32_t> b_zero_points = std::vector<int32_t>(N);
  std::vector<int8_t> x;
  int32_t x_zero_point = -3;

  explicit Operands(int64_t M) : x(static_cast<size_t>(M * K)) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
    for (auto& v : b_zero_points) v = byte(rng);
    for (auto& v : x) v = static_cast<int8_t>(byte(rng) - 128);
  }
  std::vector<int32_t> reference(int64_t M) const {
    std::vector<int32_t> acc(static_cast<size_t>(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += (x[m * K + k] - x_zero_point) * (int32_t(w[k * N + n]) - b_zero_points[n]);
        acc[m * N + n] = static_cast<int32_t>(sum);
      }
    return acc;
  }
  FusedGroup group() const {
    FusedGroup g;
    g.name = "test group";
    g.K = K;
    g.N = N;
    g.x_zero_point = x_zero_point;
    g.epilogue.kind = OutputKind::Int32;  // y = acc: the accumulators are the output
    g.weights.push_back(std::make_shared<const PackedWeights>(
        pack_weights(w.data(), QType::Uint8, K, N, false, b_zero_points.data(), N)));
    return g;
  }
};

// One call of M rows of ops.x; the result of its one batch entry.
CallResult call_group(FusedGroup& g, const CallResources& resources, const Operands& ops, int64_t M,
                      std::vector<int32_t>& y) {
  CallInputs in;
  in.x = ops.x.data();
  const std::vector<CallResult> results = run_group(g, resources, call_shape(g, {M, K}, nullptr), in, {y.data()});
  EXPECT_EQ(results.size(), 1u);
  return results.at(0);
}

// A private design cache and lock file, no device override from the environment.
class GroupCall : public ::testing::Test {
 protected:
  void TearDown() override { npu::set_injected_failure(npu::InjectedFailure::kNone); }
  // An emulated device for the session, and the group's device leg on it (designs + weights).
  std::unique_ptr<SessionDevice> attach_emu(FusedGroup& g, const Operands& ops, Counters& counters,
                                            int64_t timeout_ms = 5000) {
    EpOptions options;
    options.device = "emu";
    options.designs_dir = tmp_.file("designs");
    options.device_timeout_ms = timeout_ms;
    auto device = SessionDevice::open(options, tmp_.file("lock"));
    g.device = prepare_group_device(*device, {ops.w.data(), QType::Uint8, K, N, false}, counters);
    return device;
  }
  onebit_npu_test::TempDir tmp_;
  onebit_npu_test::ScopedEnv no_device_override_{"ONEBIT_DEVICE", nullptr};
};

TEST_F(GroupCall, HostRouteEqualsTheReference) {
  const int64_t M = 5;
  const Operands ops(M);
  FusedGroup g = ops.group();
  RoutePolicy policy;
  std::vector<int32_t> y(M * N);
  const CallResult call = call_group(g, {nullptr, &policy, {}}, ops, M, y);
  EXPECT_EQ(call.reason, RouteReason::NoDevice);
  EXPECT_EQ(y, ops.reference(M));
}

TEST_F(GroupCall, DeviceRouteEqualsTheHostAndIsCounted) {
  const int64_t M = 36;  // one m32 and one m4 launch
  const Operands ops(M);
  FusedGroup g = ops.group();
  Counters counters;
  auto device = attach_emu(g, ops, counters);
  ASSERT_NE(g.device.gemm, nullptr) << g.device.failure;
  RoutePolicy policy;
  std::vector<int32_t> y(M * N);
  const CallResult call = call_group(g, {device.get(), &policy, {}}, ops, M, y);
  ASSERT_EQ(call.reason, RouteReason::Device) << call.device_error;
  EXPECT_EQ(y, ops.reference(M));
  count_call(counters, call);
  EXPECT_EQ(counters.get(Counter::DeviceCalls), 1u);
  EXPECT_EQ(counters.get(Counter::DeviceLaunches), 2u);
  EXPECT_EQ(counters.get(Counter::ABytesSynced), uint64_t(M * K));
  EXPECT_EQ(counters.get(Counter::CBytesSynced), uint64_t(M * N * 4));
  EXPECT_EQ(counters.get(Counter::CSyncsNarrowed), 1u);
  EXPECT_EQ(counters.get(Counter::HostNs), 0u);
  EXPECT_GT(counters.get(Counter::DeviceNs), 0u);
}

TEST_F(GroupCall, FewRowsStayOnTheHostAndAFailedLaunchFallsBackExactly) {
  const int64_t M = 9;
  const Operands ops(M);
  FusedGroup g = ops.group();
  Counters counters;
  auto device = attach_emu(g, ops, counters);
  RoutePolicy policy;
  policy.min_device_rows = 10;
  std::vector<int32_t> y(M * N);
  CallResult call = call_group(g, {device.get(), &policy, {}}, ops, M, y);
  EXPECT_EQ(call.reason, RouteReason::RowsPolicy);
  count_call(counters, call);
  EXPECT_EQ(counters.get(Counter::HostRowsPolicy), 1u);

  policy.min_device_rows = 1;
  npu::set_injected_failure(npu::InjectedFailure::kLaunch);
  std::fill(y.begin(), y.end(), 0);
  call = call_group(g, {device.get(), &policy, {}}, ops, M, y);
  EXPECT_EQ(call.reason, RouteReason::Fallback);
  EXPECT_FALSE(call.device_error.empty());
  EXPECT_EQ(y, ops.reference(M));
  count_call(counters, call);
  EXPECT_EQ(counters.get(Counter::DeviceFallbacks), 1u);
  EXPECT_EQ(counters.get(Counter::DeviceCalls), 0u);
}

TEST_F(GroupCall, AStuckDeviceOpensTheBreakerAndLaterCallsSkipIt) {
  const int64_t M = 9;
  const Operands ops(M);
  FusedGroup g = ops.group();
  Counters counters;
  auto device = attach_emu(g, ops, counters, 100);
  RoutePolicy policy;
  policy.min_device_rows = 1;
  npu::set_injected_failure(npu::InjectedFailure::kTimeout);
  std::vector<int32_t> y(M * N);
  for (int i = 0; i < DeviceBreaker::kFailuresToOpen + 2; ++i) {
    const CallResult call = call_group(g, {device.get(), &policy, {}}, ops, M, y);
    EXPECT_EQ(call.reason, i < DeviceBreaker::kFailuresToOpen ? RouteReason::Fallback : RouteReason::BreakerOpen) << i;
    EXPECT_EQ(y, ops.reference(M)) << i;
    if (call.reason == RouteReason::BreakerOpen) {
      EXPECT_LT(call.ns, 50'000'000u) << "a skipped call waited";
    }
    count_call(counters, call);
  }
  EXPECT_EQ(counters.get(Counter::DeviceFallbacks), uint64_t(DeviceBreaker::kFailuresToOpen));
  EXPECT_EQ(counters.get(Counter::DeviceBreakerSkips), 2u);
}

}  // namespace
}  // namespace onebit
