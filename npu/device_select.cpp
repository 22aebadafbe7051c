// SPDX-License-Identifier: Apache-2.0
#include "npu/device_select.h"

#include <cstdlib>

namespace onebit::npu {

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::kEmu ? "emu" : "none"; }

bool is_device_option(std::string_view name) {
  for (const char* option : kDeviceOptions)
    if (name == option) return true;
  return false;
}

Result<DeviceChoice> select_device(std::string_view option) {
  std::string source = "option device=" + std::string(option);
  const char* env = std::getenv("ONEBIT_DEVICE");
  if (env != nullptr && env[0] != '\0') {
    option = env;
    source = "ONEBIT_DEVICE=" + std::string(env);
  }
  if (option == "none") return DeviceChoice{DeviceKind::kNone, source};
  if (option == "emu") return DeviceChoice{DeviceKind::kEmu, source};
  // A hardware backend (xrt) would probe for its device here; this build has none.
  if (option == "auto") return DeviceChoice{DeviceKind::kNone, source + ": no NPU backend found"};
  return make_error(ErrorCode::kInvalidArgument, source + ": expected " + kDeviceOptionsText);
}

Result<std::unique_ptr<Device>> open_device(DeviceKind kind, const DeviceOptions& options) {
  switch (kind) {
    case DeviceKind::kEmu: {
      EmuDeviceOptions emu;
      emu.lock_path = options.lock_path;
      return open_emu_device(emu);
    }
    case DeviceKind::kNone:
      break;
  }
  return make_error(ErrorCode::kUnavailable, "no device selected");
}

}  // namespace onebit::npu
