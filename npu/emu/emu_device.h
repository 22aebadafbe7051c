// SPDX-License-Identifier: Apache-2.0
// The emu backend: an emulated array behind the Device interface. It has its own device memory
// (a BO's device copy is separate from its host memory; sync copies exactly the bytes asked
// for, so a missing sync leaves stale data), loads designs after validating their program, and
// executes launches on one device worker thread, in launch order, by interpreting the design's
// program (emu_interpreter.h). Results are the exact int32 dot products. Its timings are those
// of an emulator. Thread-safe.
#pragma once
#include <memory>
#include <string>

#include "npu/device.h"
#include "npu/device_lock.h"

namespace onebit::npu {

struct EmuDeviceOptions {
  std::string lock_path = default_lock_path();
};

Result<std::unique_ptr<Device>> open_emu_device(const EmuDeviceOptions& options = {});

}  // namespace onebit::npu
