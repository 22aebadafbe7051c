// SPDX-License-Identifier: Apache-2.0
#include "engine/session_device.h"

#include <stdexcept>

#include "npu/device_select.h"

namespace onebit {

std::unique_ptr<SessionDevice> SessionDevice::open(const EpOptions& options, const std::string& lock_path) {
  auto choice = npu::select_device(options.device);
  if (!choice) throw std::invalid_argument("onebit: device: " + choice.error().to_string());
  if (choice->kind == npu::DeviceKind::kNone) return nullptr;
  npu::DeviceOptions device_options;
  if (!lock_path.empty()) device_options.lock_path = lock_path;
  auto opened = npu::open_device(choice->kind, device_options);
  if (!opened)
    throw std::invalid_argument("onebit: cannot open device (" + choice->reason + "): " + opened.error().to_string());
  auto policy = npu::lock_policy_from_name(options.device_lock);
  if (!policy) throw std::invalid_argument("onebit: device_lock: " + policy.error().to_string());
  auto session = std::unique_ptr<SessionDevice>(new SessionDevice());
  session->device_ = std::move(*opened);
  session->lease_ = std::make_unique<npu::DeviceLease>(*session->device_, *policy);
  session->cache_ = std::make_unique<npu::DesignCache>(options.designs_dir.empty() ? npu::default_designs_dir()
                                                                                   : options.designs_dir);
  session->gemm_options_.wait_timeout = std::chrono::milliseconds(options.device_timeout_ms);
  session->gemm_options_.cost_model = options.cost_model;
  return session;
}

SessionDevice::~SessionDevice() {
  lease_.reset();  // releases the lock before the device closes
  if (device_) device_->close();
}

std::string SessionDevice::description() const {
  return std::string(device_->name()) + (device_->emulated() ? " (emulated array)" : "") + ", designs in " +
         cache_->dir() + ", lock per " + npu::lock_policy_name(lease_->policy());
}

}  // namespace onebit
