// SPDX-License-Identifier: Apache-2.0
// A session's device: chosen and opened once (or found open: the sessions of a process that open
// the same device share it, shared_device.h), with the session's lock lease and design cache.
// Shared by every group of the session (and by a probe, which is one session of one shape).
#pragma once
#include <memory>
#include <string>

#include "engine/device_breaker.h"
#include "engine/ep_options.h"
#include "engine/shared_device.h"
#include "npu/device.h"
#include "npu/device_gemm.h"
#include "npu/emu/design_cache.h"
#include "npu/lock_policy.h"

namespace onebit {

class SessionDevice {
 public:
  // The device `options.device` (or ONEBIT_DEVICE) selects, opened, or the one the process has
  // open already for the same lock file unless `options.share_weights` is false; nullptr for
  // none. An empty lock_path means the default lock file. Throws std::invalid_argument with the
  // reason when the chosen device cannot be opened.
  static std::unique_ptr<SessionDevice> open(const EpOptions& options, const std::string& lock_path = {});

  npu::Device& device() { return *opened_->device; }
  // The opened device itself, which the session's groups' weights keep open (group_device.h).
  const std::shared_ptr<const OpenedDevice>& opened() const { return opened_; }
  bool share_weights() const { return share_weights_; }
  npu::DeviceLease& lease() { return *lease_; }
  const npu::DesignCache& cache() const { return *cache_; }
  const npu::GemmOptions& gemm_options() const { return gemm_options_; }
  DeviceBreaker& breaker() { return breaker_; }
  std::string description() const;

 private:
  SessionDevice() = default;
  std::shared_ptr<const OpenedDevice> opened_;  // outlives lease_, which holds its lock
  bool share_weights_ = true;
  std::unique_ptr<npu::DeviceLease> lease_;
  std::unique_ptr<npu::DesignCache> cache_;
  npu::GemmOptions gemm_options_;
  DeviceBreaker breaker_;
};

}  // namespace onebit
