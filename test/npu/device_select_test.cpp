// SPDX-License-Identifier: Apache-2.0
// Device selection: auto / emu / none, ONEBIT_DEVICE overriding the option.
#include "npu/device_select.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "npu_test_util.h"

namespace onebit::npu {
namespace {

class DeviceSelect : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("ONEBIT_DEVICE")) saved_ = v, had_ = true;
    unsetenv("ONEBIT_DEVICE");
  }
  void TearDown() override {
    if (had_)
      setenv("ONEBIT_DEVICE", saved_.c_str(), 1);
    else
      unsetenv("ONEBIT_DEVICE");
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(DeviceSelect, AutoFindsNoNpuHere) {
  Result<DeviceChoice> c = select_device("auto");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, DeviceKind::kNone);
  EXPECT_EQ(c->reason, "option device=auto: no NPU backend found");
}

TEST_F(DeviceSelect, EmuAndNone) {
  EXPECT_EQ(select_device("emu")->kind, DeviceKind::kEmu);
  EXPECT_EQ(select_device("none")->kind, DeviceKind::kNone);
  Result<DeviceChoice> bad = select_device("gpu");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().reason, "option device=gpu: expected auto, emu or none");
}

TEST_F(DeviceSelect, EnvironmentOverridesTheOption) {
  setenv("ONEBIT_DEVICE", "emu", 1);
  Result<DeviceChoice> c = select_device("none");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, DeviceKind::kEmu);
  EXPECT_EQ(c->reason, "ONEBIT_DEVICE=emu");
  setenv("ONEBIT_DEVICE", "none", 1);
  EXPECT_EQ(select_device("emu")->kind, DeviceKind::kNone);
  setenv("ONEBIT_DEVICE", "", 1);  // empty: the option stands
  EXPECT_EQ(select_device("emu")->kind, DeviceKind::kEmu);
  setenv("ONEBIT_DEVICE", "bogus", 1);
  EXPECT_FALSE(select_device("emu"));
}

TEST_F(DeviceSelect, OpenDevice) {
  onebit_npu_test::TempDir tmp;
  DeviceOptions options;
  options.lock_path = tmp.file("lock");
  Result<std::unique_ptr<Device>> emu = open_device(DeviceKind::kEmu, options);
  ASSERT_TRUE(emu);
  EXPECT_EQ((*emu)->name(), "emu");
  EXPECT_TRUE((*emu)->try_lock());
  Result<std::unique_ptr<Device>> none = open_device(DeviceKind::kNone, options);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace onebit::npu
