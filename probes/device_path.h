// SPDX-License-Identifier: Apache-2.0
// The device route of one call, as the EP runs it: DeviceGemm::run (A upload + sync, launches +
// wait, C sync) then the shared epilogue on the host. The device is opened, locked for the
// whole probe (so every timed call really runs on the device) and set up (designs from the
// cache, weights uploaded once) before any timing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "npu/device.h"
#include "npu/device_gemm.h"
#include "npu/device_select.h"
#include "probes/probe_operands.h"

namespace onebit::probes {

// One device call's wall time and its parts (ms).
struct DeviceCallTiming {
  double total_ms = 0;
  double upload_ms = 0;       // A copy + sync to the device
  double launch_wait_ms = 0;  // launches + wait
  double c_sync_ms = 0;       // C sync back + copy out
  double epilogue_ms = 0;     // the host epilogue on the device's accumulators
  npu::CallStats stats;
};

class DevicePath {
 public:
  // Opens the device chosen by `kind`, takes its lock and sets up the shape. On failure,
  // error() says why (e.g. "busy: ... held by pid 123") and no call may be made.
  DevicePath(const ProbeOperands& ops, npu::DeviceKind kind, const std::string& designs_dir,
             const std::string& lock_path);
  ~DevicePath();
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::string name() const;
  bool emulated() const;
  const npu::GemmSetupStats& setup() const { return gemm_->setup_stats(); }
  double setup_ms() const { return setup_ms_; }
  const std::string& designs_dir() const { return designs_dir_; }

  // One call over the first `rows` rows of A; false (and error() set) on a device error.
  // dots() then holds the raw int32 dot products, output() the int8 outputs.
  bool call(uint32_t rows, DeviceCallTiming& timing);

  const std::vector<int32_t>& dots() const { return dots_; }
  const std::vector<int8_t>& output() const { return out_; }

 private:
  const ProbeOperands& ops_;
  std::unique_ptr<npu::Device> device_;
  std::unique_ptr<npu::DeviceGemm> gemm_;
  std::string designs_dir_;
  std::string error_;
  double setup_ms_ = 0;
  std::vector<int32_t> dots_;
  std::vector<int8_t> out_;
};

}  // namespace onebit::probes
