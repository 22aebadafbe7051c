// SPDX-License-Identifier: Apache-2.0
// Which device to use: the EP option `device` = auto | emu | none, overridden by the env
// ONEBIT_DEVICE (for debugging). `auto` takes a real NPU if a backend finds one; this build
// has no hardware backend (xrt is future work), so auto resolves to none. `emu` is never
// chosen by auto: it is for tests and development.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"
#include "npu/device.h"
#include "npu/emu/emu_device.h"

namespace onebit::npu {

enum class DeviceKind { kNone, kEmu };

// The values of the `device` option, the one list every layer (and the Node package) takes.
constexpr std::array<const char*, 3> kDeviceOptions = {"auto", "emu", "none"};
constexpr const char* kDeviceOptionsText = "auto, emu or none";
bool is_device_option(std::string_view name);

const char* device_kind_name(DeviceKind kind);

struct DeviceChoice {
  DeviceKind kind = DeviceKind::kNone;
  std::string reason;  // why, e.g. "auto: no NPU backend found" or "ONEBIT_DEVICE=emu"
};

// Resolves the option (and ONEBIT_DEVICE, which wins when set and non-empty). Fails with
// kInvalidArgument for anything but auto / emu / none.
Result<DeviceChoice> select_device(std::string_view option);

struct DeviceOptions {
  std::string lock_path = default_lock_path();
};

// Opens the chosen device; kUnavailable for kNone.
Result<std::unique_ptr<Device>> open_device(DeviceKind kind, const DeviceOptions& options = {});

}  // namespace onebit::npu
