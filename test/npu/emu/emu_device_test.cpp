// SPDX-License-Identifier: Apache-2.0
// The emu backend through the Device interface: its device memory is separate from the host
// BOs, syncs copy exactly the bytes asked for, a missing sync gives stale data, and bad
// requests are refused with a reason.
#include "npu/emu/emu_device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "npu/emu/design_builder.h"
#include "npu/weight_layout.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using namespace std::chrono_literals;
using onebit_npu_test::must_build;
using onebit_npu_test::TempDir;

class EmuDeviceTest : public onebit_npu_test::EmuDeviceFixture {
 protected:
  std::unique_ptr<BufferObject> bo(size_t bytes) {
    auto b = device_->alloc_bo(bytes);
    EXPECT_TRUE(b);
    return std::move(b).value();
  }
};

TEST_F(EmuDeviceTest, SyncCopiesExactlyTheRangeAskedFor) {
  auto b = bo(64);
  std::memset(b->host(), 0x5a, 64);
  ASSERT_TRUE(device_->sync(*b, SyncDirection::kToDevice, 10, 20));
  std::memset(b->host(), 0x00, 64);
  ASSERT_TRUE(device_->sync(*b, SyncDirection::kFromDevice, 0, 64));
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(b->host()[i], i >= 10 && i < 30 ? 0x5a : 0x00) << i;

  // From device, also only the range asked for.
  std::memset(b->host(), 0x11, 64);
  ASSERT_TRUE(device_->sync(*b, SyncDirection::kFromDevice, 12, 4));
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(b->host()[i], i >= 12 && i < 16 ? 0x5a : 0x11) << i;
}

TEST_F(EmuDeviceTest, SyncOutsideTheBoIsRefused) {
  auto b = bo(16);
  Status s = device_->sync(*b, SyncDirection::kToDevice, 8, 9);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::kSync);
  EXPECT_NE(s.reason().find("outside the 16-byte BO"), std::string::npos) << s.reason();
  EXPECT_FALSE(device_->sync(*b, SyncDirection::kFromDevice, 17, 0));
  EXPECT_TRUE(device_->sync(*b, SyncDirection::kFromDevice, 16, 0));
}

// One m4 launch of a K×N design by hand: the sequence DeviceGemm runs, with syncs left out.
TEST_F(EmuDeviceTest, MissingSyncsGiveStaleData) {
  const uint32_t K = 48, N = 20, M = 4;
  const Design design = must_build(K, N, M);
  auto loaded = device_->load_design(design);
  ASSERT_TRUE(loaded) << loaded.error().reason;
  std::mt19937 rng(11);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, K * N);
  const std::vector<int8_t> packed = pack_weights_tiled(w.data(), WeightLayout::kKN, K, N, design.info.tiling);
  auto w_bo = bo(packed.size()), a_bo = bo(M * K), c_bo = bo(M * N * 4);
  std::memcpy(w_bo->host(), packed.data(), packed.size());
  ASSERT_TRUE(device_->sync(*w_bo, SyncDirection::kToDevice, 0, packed.size()));

  auto run_once = [&] {
    LaunchArgs args{loaded->get(), a_bo.get(), 0, w_bo.get(), c_bo.get(), 0};
    auto run = device_->launch(args);
    ASSERT_TRUE(run) << run.error().reason;
    ASSERT_TRUE(device_->wait(*run, 10s));
  };
  auto host_c = [&] {
    std::vector<int32_t> c(M * N);
    std::memcpy(c.data(), c_bo->host(), c.size() * 4);
    return c;
  };
  auto expect_c = [&](const std::vector<int8_t>& a) {
    const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, M, K, N);
    return std::vector<int32_t>(ref.begin(), ref.end());
  };

  const std::vector<int8_t> a1 = onebit_npu_test::random_int8(rng, M * K);
  const std::vector<int8_t> a2 = onebit_npu_test::random_int8(rng, M * K);

  // Synced both ways: right.
  std::memcpy(a_bo->host(), a1.data(), a1.size());
  ASSERT_TRUE(device_->sync(*a_bo, SyncDirection::kToDevice, 0, a1.size()));
  run_once();
  ASSERT_TRUE(device_->sync(*c_bo, SyncDirection::kFromDevice, 0, M * N * 4));
  EXPECT_EQ(host_c(), expect_c(a1));

  // New A written to the host BO but not synced: the device computes on the old A.
  std::memcpy(a_bo->host(), a2.data(), a2.size());
  run_once();
  ASSERT_TRUE(device_->sync(*c_bo, SyncDirection::kFromDevice, 0, M * N * 4));
  EXPECT_EQ(host_c(), expect_c(a1));

  // A synced, C not synced back: the host still sees the previous C.
  ASSERT_TRUE(device_->sync(*a_bo, SyncDirection::kToDevice, 0, a2.size()));
  run_once();
  EXPECT_EQ(host_c(), expect_c(a1));
  ASSERT_TRUE(device_->sync(*c_bo, SyncDirection::kFromDevice, 0, M * N * 4));
  EXPECT_EQ(host_c(), expect_c(a2));

  // Only row 0 of a new A synced: row 0 of C is new, rows 1..3 are still a2's.
  std::vector<int8_t> mixed = a2;
  std::memcpy(mixed.data(), a1.data(), K);
  std::memcpy(a_bo->host(), a1.data(), a1.size());
  ASSERT_TRUE(device_->sync(*a_bo, SyncDirection::kToDevice, 0, K));
  run_once();
  ASSERT_TRUE(device_->sync(*c_bo, SyncDirection::kFromDevice, 0, M * N * 4));
  EXPECT_EQ(host_c(), expect_c(mixed));

  // C synced back for row 0 only: rows 1..3 on the host keep the previous call's values.
  ASSERT_TRUE(device_->sync(*a_bo, SyncDirection::kToDevice, 0, a1.size()));
  run_once();
  ASSERT_TRUE(device_->sync(*c_bo, SyncDirection::kFromDevice, 0, N * 4));
  const std::vector<int32_t> c = host_c(), now = expect_c(a1), before = expect_c(mixed);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i], i < N ? now[i] : before[i]) << i;
}

TEST_F(EmuDeviceTest, LaunchRefusesBuffersThatDoNotFit) {
  const Design design = must_build(32, 16, 4);
  auto loaded = device_->load_design(design);
  ASSERT_TRUE(loaded);
  auto w_bo = bo(packed_weight_bytes(32, 16, design.info.tiling)), a_bo = bo(4 * 32), c_bo = bo(4 * 16 * 4);
  LaunchArgs args{loaded->get(), a_bo.get(), 0, w_bo.get(), c_bo.get(), 0};
  EXPECT_TRUE(device_->launch(args));

  LaunchArgs past_a = args;
  past_a.a_offset = 1;
  auto r = device_->launch(past_a);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kLaunch);
  EXPECT_NE(r.error().reason.find("A BO too small"), std::string::npos);

  LaunchArgs misaligned_c = args;
  misaligned_c.c_offset = 2;
  EXPECT_FALSE(device_->launch(misaligned_c));

  auto small_w = bo(10);
  LaunchArgs bad_w = args;
  bad_w.w = small_w.get();
  EXPECT_FALSE(device_->launch(bad_w));

  LaunchArgs no_design = args;
  no_design.design = nullptr;
  EXPECT_FALSE(device_->launch(no_design));

  // A BO of another device is not this device's memory.
  TempDir other_tmp;
  EmuDeviceOptions other_options;
  other_options.lock_path = other_tmp.file("lock");
  auto other = open_emu_device(other_options);
  auto foreign = (*other)->alloc_bo(4 * 32);
  LaunchArgs foreign_a = args;
  foreign_a.a = foreign->get();
  EXPECT_FALSE(device_->launch(foreign_a));
  EXPECT_FALSE(device_->sync(**foreign, SyncDirection::kToDevice, 0, 4));
}

TEST_F(EmuDeviceTest, LoadDesignValidatesTheProgram) {
  Design design = must_build(32, 16, 4);
  design.program[0] = 0x42;  // checksum now wrong
  auto r = device_->load_design(design);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDesign);
  EXPECT_NE(r.error().reason.find("checksum"), std::string::npos);
}

TEST_F(EmuDeviceTest, ClosedDeviceRefusesWorkAndBuffersOutliveIt) {
  auto b = bo(8);
  device_->close();
  device_->close();  // idempotent
  EXPECT_EQ(device_->alloc_bo(8).error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(device_->sync(*b, SyncDirection::kToDevice, 0, 8));
  EXPECT_FALSE(device_->load_design(must_build(8, 8, 4)));
  EXPECT_EQ(device_->try_lock().code(), ErrorCode::kUnavailable);
  device_.reset();
  b->host()[0] = 1;  // the BO's host memory is still valid
  b.reset();
}

TEST_F(EmuDeviceTest, NamesItselfAnEmulator) {
  EXPECT_EQ(device_->name(), "emu");
  EXPECT_EQ(device_->target(), Target::kEmu);
  EXPECT_TRUE(device_->emulated());
}

}  // namespace
}  // namespace onebit::npu
