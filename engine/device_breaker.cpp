// SPDX-License-Identifier: Apache-2.0
#include "engine/device_breaker.h"

#include <algorithm>

namespace onebit {

bool DeviceBreaker::allow(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (consecutive_failures_ < kFailuresToOpen) return true;
  if (now < open_until_ || probing_) return false;
  probing_ = true;  // one call probes; the others stay on the host until it reports
  return true;
}

void DeviceBreaker::record_success() {
  std::lock_guard<std::mutex> lock(mutex_);
  consecutive_failures_ = 0;
  backoff_ = kFirstBackoff;
  probing_ = false;
}

void DeviceBreaker::record_not_tried() {
  std::lock_guard<std::mutex> lock(mutex_);
  probing_ = false;
}

void DeviceBreaker::record_failure(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (probing_) backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  probing_ = false;
  if (++consecutive_failures_ >= kFailuresToOpen) open_until_ = now + backoff_;
}

}  // namespace onebit
