// SPDX-License-Identifier: Apache-2.0
// Sessions of one process on the emulated device: they share the opened device and each weight's
// upload (equal weights one buffer, a weight differing in one value its own), the buffers and the
// device are freed with their last holder, every group computes its own weights exactly, sharing
// off gives each session its own device and buffers, and threads creating and releasing sessions
// at once agree.
#include "engine/shared_device_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "engine/group_device.h"
#include "engine/session_device.h"
#include "lockstep_threads.h"
#include "npu_test_util.h"

namespace onebit {
namespace {

constexpr uint32_t K = 64, N = 40;

class SharedDeviceWeights : public ::testing::Test {
 protected:
  std::unique_ptr<SessionDevice> open_session(bool share = true) {
    EpOptions options;
    options.device = "emu";
    options.designs_dir = tmp_.file("designs");
    options.share_weights = share;
    return SessionDevice::open(options, tmp_.file("lock"));
  }

  // A group's device leg on `device` for the int8 K×N weight `w`, with the bytes it uploaded.
  static GroupDevice prepare(SessionDevice& device, const std::vector<int8_t>& w, uint64_t* uploaded = nullptr) {
    Counters counters;
    GroupDevice group = prepare_group_device(device, {w.data(), QType::Int8, K, N, false}, counters);
    if (uploaded != nullptr) *uploaded = counters.get(Counter::DeviceWeightBytes);
    return group;
  }

  // The group's device call on a fixed activation equals the plain reference for `w`.
  static bool computes(GroupDevice& group, const std::vector<int8_t>& w) {
    std::mt19937 rng(11);
    const uint32_t rows = 36;  // an m32 and an m4 launch
    const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(rows) * K);
    std::vector<int32_t> c(size_t(rows) * N);
    if (!group.gemm || !group.gemm->run(a.data(), rows, c.data())) return false;
    const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, rows, K, N);
    return std::equal(c.begin(), c.end(), ref.begin());
  }

  static std::vector<int8_t> weights(uint32_t seed) {
    std::mt19937 rng(seed);
    return onebit_npu_test::random_int8(rng, size_t(K) * N);
  }

  onebit_npu_test::TempDir tmp_;
  onebit_npu_test::ScopedEnv no_device_override_{"ONEBIT_DEVICE", nullptr};
};

TEST_F(SharedDeviceWeights, SessionsOpenTheDeviceOnceAndReleaseItWithTheLast) {
  const size_t before = opened_devices_registry().live();
  auto a = open_session();
  auto b = open_session();
  EXPECT_EQ(&a->device(), &b->device());
  EXPECT_EQ(opened_devices_registry().live(), before + 1);
  auto own = open_session(false);  // ONEBIT_SHARE_WEIGHTS=0
  EXPECT_NE(&own->device(), &a->device());
  EXPECT_EQ(opened_devices_registry().live(), before + 1);  // not in the registry
  a.reset();
  EXPECT_EQ(opened_devices_registry().live(), before + 1);
  b.reset();
  EXPECT_EQ(opened_devices_registry().live(), before);
}

TEST_F(SharedDeviceWeights, EqualWeightsShareOneBufferAWeightOneValueApartGetsItsOwn) {
  const size_t before = device_weights_registry().live();
  auto a = open_session();
  auto b = open_session();
  const std::vector<int8_t> w = weights(1);
  const std::vector<int8_t> copy = w;  // another session's model: its own buffer, the same values
  std::vector<int8_t> changed = w;
  changed.back() = static_cast<int8_t>(changed.back() ^ 1);  // column N-1 at k = K-1
  uint64_t uploaded[3] = {};
  GroupDevice first = prepare(*a, w, &uploaded[0]);
  GroupDevice second = prepare(*b, copy, &uploaded[1]);
  GroupDevice other = prepare(*b, changed, &uploaded[2]);
  ASSERT_TRUE(first.gemm && second.gemm && other.gemm) << first.failure << second.failure << other.failure;
  EXPECT_EQ(&first.gemm->weights(), &second.gemm->weights());
  EXPECT_NE(&other.gemm->weights(), &first.gemm->weights());
  EXPECT_EQ(device_weights_registry().live(), before + 2);
  const uint64_t bytes = first.gemm->weights().bo->size();
  EXPECT_EQ(bytes, npu::packed_weight_bytes(K, N, first.gemm->weights().tiling));
  EXPECT_EQ(uploaded[0], bytes);
  EXPECT_EQ(uploaded[1], 0u);  // found on the device
  EXPECT_EQ(uploaded[2], bytes);
  EXPECT_TRUE(computes(first, w));
  EXPECT_TRUE(computes(second, w));
  EXPECT_TRUE(computes(other, changed));
}

TEST_F(SharedDeviceWeights, BuffersAreFreedWithTheirLastGroupAndKeepTheirDeviceOpenUntilThen) {
  const size_t weights_before = device_weights_registry().live();
  const size_t devices_before = opened_devices_registry().live();
  const std::vector<int8_t> w = weights(2);
  auto a = open_session();
  auto b = open_session();
  GroupDevice first = prepare(*a, w);
  GroupDevice second = prepare(*b, w);
  first = GroupDevice{};
  EXPECT_EQ(device_weights_registry().live(), weights_before + 1);  // the second group holds it
  a.reset();
  b.reset();
  // Every session is gone; the group's weights keep the device, and the group still computes.
  EXPECT_EQ(opened_devices_registry().live(), devices_before + 1);
  EXPECT_TRUE(computes(second, w));
  second = GroupDevice{};
  EXPECT_EQ(device_weights_registry().live(), weights_before);
  EXPECT_EQ(opened_devices_registry().live(), devices_before);
  // A session opened afterwards gets a new device and uploads again.
  auto again = open_session();
  uint64_t uploaded = 0;
  GroupDevice third = prepare(*again, w, &uploaded);
  EXPECT_GT(uploaded, 0u);
  EXPECT_TRUE(computes(third, w));
}

TEST_F(SharedDeviceWeights, SharingOffGivesEachSessionItsOwnDeviceAndBuffers) {
  const size_t before = device_weights_registry().live();
  const std::vector<int8_t> w = weights(3);
  auto a = open_session(false);
  auto b = open_session(false);
  uint64_t uploaded[2] = {};
  GroupDevice first = prepare(*a, w, &uploaded[0]);
  GroupDevice second = prepare(*b, w, &uploaded[1]);
  ASSERT_TRUE(first.gemm && second.gemm);
  EXPECT_NE(&a->device(), &b->device());
  EXPECT_NE(&first.gemm->weights(), &second.gemm->weights());
  EXPECT_EQ(uploaded[0], uploaded[1]);
  EXPECT_GT(uploaded[0], 0u);
  EXPECT_EQ(device_weights_registry().live(), before);  // none in the registry
  EXPECT_TRUE(computes(first, w));
  EXPECT_TRUE(computes(second, w));
}

// Threads that open sessions and set up groups of two weights at once, run them and release them:
// each computes its own weights exactly, holders of one weight at the same moment share one buffer
// on one device, each round uploads each weight once, and nothing outlives the last round.
TEST_F(SharedDeviceWeights, ConcurrentCreationAndRelease) {
  constexpr int kThreads = 6, kRounds = 8;
  const std::vector<int8_t> w[2] = {weights(4), weights(5)};
  {
    auto warm = open_session();
    prepare(*warm, w[0]);
  }  // builds the designs once, before the race
  const size_t weights_before = device_weights_registry().live();
  const size_t devices_before = opened_devices_registry().live();
  std::vector<std::unique_ptr<SessionDevice>> sessions(kThreads);
  std::vector<GroupDevice> groups(kThreads);
  std::vector<uint64_t> uploaded(kThreads, 0);
  const std::vector<int> failures = run_in_lockstep(
      kThreads, kRounds,
      [&](int t, int round) {
        const int which = (t + round) % 2;
        const std::vector<int8_t> copy = w[which];
        sessions[t] = open_session();
        groups[t] = prepare(*sessions[t], copy, &uploaded[t]);
        return computes(groups[t], w[which]) ? 0 : 1;
      },
      [&](int t, int round) {  // one device; holders of one weight share its buffer, uploaded once
        const auto buffer = [&](int u) { return groups[u].gemm ? &groups[u].gemm->weights() : nullptr; };
        int failed = 0;
        uint64_t round_uploads = 0;
        for (int u = 0; u < kThreads; ++u) {
          round_uploads += uploaded[u];
          failed += &sessions[u]->device() == &sessions[t]->device() ? 0 : 1;
          if ((u + round) % 2 == (t + round) % 2) failed += buffer(u) == buffer(t) ? 0 : 1;
        }
        return failed + (buffer(t) != nullptr && round_uploads == 2 * buffer(t)->bo->size() ? 0 : 1);
      },
      [&](int t) {
        groups[t] = GroupDevice{};
        sessions[t].reset();
      });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(device_weights_registry().live(), weights_before);
  EXPECT_EQ(opened_devices_registry().live(), devices_before);
}

}  // namespace
}  // namespace onebit
