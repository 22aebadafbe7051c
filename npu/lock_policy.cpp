// SPDX-License-Identifier: Apache-2.0
#include "npu/lock_policy.h"

#include <string>

namespace onebit::npu {

Result<LockPolicy> lock_policy_from_name(std::string_view name) {
  if (name == "call") return LockPolicy::kPerCall;
  if (name == "session") return LockPolicy::kPerSession;
  return make_error(ErrorCode::kInvalidArgument, "lock policy '" + std::string(name) + "': expected call or session");
}

const char* lock_policy_name(LockPolicy policy) { return policy == LockPolicy::kPerCall ? "call" : "session"; }

DeviceLease::~DeviceLease() {
  std::lock_guard<std::mutex> guard(mutex_);
  device_.unlock();
}

Status DeviceLease::begin_call() {
  std::lock_guard<std::mutex> guard(mutex_);
  Status s = device_.try_lock();  // a no-op when this device already holds it
  if (s) ++calls_in_flight_;
  return s;
}

void DeviceLease::end_call() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (calls_in_flight_ > 0) --calls_in_flight_;
  if (policy_ == LockPolicy::kPerCall && calls_in_flight_ == 0) device_.unlock();
}

}  // namespace onebit::npu
