// SPDX-License-Identifier: Apache-2.0
// One opened device per process for every session that opens the same one (same backend, same
// lock file): the groups of all those sessions then upload each weight to it once
// (shared_device_weights.h). It is closed, and its lock released, with the last session or
// uploaded weight holding it.
//
// The lock stays what it was, cross-process: the device's LockHolds counts every session's holds
// (their calls in flight, a `device_lock=session` lease's hold), so the sessions of one process
// use the array together and the lock is released only when none of them holds it.
#pragma once
#include <cstdint>
#include <memory>

#include "base/error.h"
#include "engine/shared_weights.h"
#include "npu/device.h"
#include "npu/device_select.h"
#include "npu/lock_policy.h"

namespace onebit {

struct OpenedDevice {
  uint64_t id = 0;  // unique in the process, never reused: keys the weights uploaded to it
  std::unique_ptr<npu::Device> device;
  std::unique_ptr<npu::LockHolds> holds;  // every lease's holds on the device's lock
};

// The device `kind` opened with `options`: the one the process already has open under the same
// backend and lock path when `share`, else a new one. kUnavailable (or the backend's error) when
// it cannot be opened.
npu::Result<std::shared_ptr<const OpenedDevice>> open_shared_device(npu::DeviceKind kind,
                                                                    const npu::DeviceOptions& options, bool share);

// The process's opened devices (tests count the live ones).
PackRegistry<OpenedDevice>& opened_devices_registry();

}  // namespace onebit
