// SPDX-License-Identifier: Apache-2.0
#include "engine/session_device.h"

#include <stdexcept>

#include "npu/device_select.h"

namespace onebit {

std::unique_ptr<SessionDevice> SessionDevice::open(const EpOptions& options, const std::string& lock_path) {
  auto choice = npu::select_device(options.device);
  if (!choice) throw std::invalid_argument("onebit: device: " + choice.error().to_string());
  if (choice->kind == npu::DeviceKind::kNone) return nullptr;
  auto policy = npu::lock_policy_from_name(options.device_lock);
  if (!policy) throw std::invalid_argument("onebit: device_lock: " + policy.error().to_string());
  npu::DeviceOptions device_options;
  if (!lock_path.empty()) device_options.lock_path = lock_path;
  auto opened = open_shared_device(choice->kind, device_options, options.share_weights);
  if (!opened)
    throw std::invalid_argument("onebit: cannot open device (" + choice->reason + "): " + opened.error().to_string());
  auto session = std::unique_ptr<SessionDevice>(new SessionDevice());
  session->opened_ = std::move(opened).value();
  session->share_weights_ = options.share_weights;
  session->lease_ = std::make_unique<npu::DeviceLease>(*session->opened_->holds, *policy);
  session->cache_ = std::make_unique<npu::DesignCache>(options.designs_dir.empty() ? npu::default_designs_dir()
                                                                                   : options.designs_dir);
  session->gemm_options_.wait_timeout = std::chrono::milliseconds(options.device_timeout_ms);
  session->gemm_options_.cost_model = options.cost_model;
  return session;
}

std::string SessionDevice::description() const {
  const npu::Device& device = *opened_->device;
  return std::string(device.name()) + (device.emulated() ? " (emulated array)" : "") + ", designs in " + cache_->dir() +
         ", lock per " + npu::lock_policy_name(lease_->policy()) +
         (share_weights_ ? ", shared with the process's other sessions on it" : ", this session's own");
}

}  // namespace onebit
