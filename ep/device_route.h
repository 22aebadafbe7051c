// SPDX-License-Identifier: Apache-2.0
// The device leg of the EP: a session's device (chosen and opened once, with its lock lease and
// design cache), each group's DeviceGemm, and the per-call decision and run. A call the device
// does not take runs on the host; every reason has its counter.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ep_options.h"
#include "kernels/gemm_q8.h"
#include "npu/device.h"
#include "npu/device_gemm.h"
#include "npu/lock_policy.h"
#include "routes_table.h"
#include "session_counters.h"

namespace onebit {

class SessionDevice {
 public:
  // The device `options.device` (or ONEBIT_DEVICE) selects, opened; nullptr for none.
  // Throws std::invalid_argument with the reason when the chosen device cannot be opened.
  static std::unique_ptr<SessionDevice> open(const EpOptions& options);
  ~SessionDevice();

  npu::Device& device() { return *device_; }
  npu::DeviceLease& lease() { return *lease_; }
  const npu::DesignCache& cache() const { return *cache_; }
  const npu::GemmOptions& gemm_options() const { return gemm_options_; }
  std::string description() const;

 private:
  std::unique_ptr<npu::Device> device_;
  std::unique_ptr<npu::DeviceLease> lease_;
  std::unique_ptr<npu::DesignCache> cache_;
  npu::GemmOptions gemm_options_;
};

// One group's device leg: its DeviceGemm, or why it has none (its designs failed).
struct GroupDevice {
  std::unique_ptr<npu::DeviceGemm> gemm;
  std::string failure;
};

// Builds or loads the group's designs and uploads its weights, once per session; counts designs
// built / loaded / failed.
GroupDevice prepare_group_device(SessionDevice& device, const PackedWeights& weights, Counters& counters);

// Why a call ran where it ran.
enum class RouteReason { NoDevice, RowsPolicy, Routes, DesignsFailed, Busy, Fallback, Device };
const char* route_reason_name(RouteReason reason);

// Where a call of M rows goes before trying the device (Device = try it).
RouteReason choose_route(const SessionDevice* device, const GroupDevice& group, const EpOptions& options,
                         const std::optional<RoutesTable>& routes, int64_t K, int64_t N, int64_t M);

struct DeviceCallResult {
  RouteReason reason = RouteReason::Device;  // Device on success, else Busy or Fallback
  npu::CallStats stats;
  std::string error;  // for Fallback
};

// Runs x (M × K, shifted to int8 by the caller) on the device and writes the zero-point-folded
// accumulators into acc (M × N); on failure acc is untouched and the caller runs the host.
DeviceCallResult run_on_device(SessionDevice& device, GroupDevice& group, const PreparedActivation& x,
                               const PackedWeights& weights, int32_t* acc);

}  // namespace onebit
