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

Status LockHolds::acquire() {
  std::lock_guard<std::mutex> guard(mutex_);
  Status s = device_.try_lock();  // a no-op when this device already holds it
  if (s) ++holds_;
  return s;
}

void LockHolds::release() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (holds_ > 0) --holds_;
  if (holds_ == 0) device_.unlock();
}

DeviceLease::~DeviceLease() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (session_hold_) holds_.release();
}

Status DeviceLease::begin_call() {
  Status s = holds_.acquire();
  if (!s || policy_ != LockPolicy::kPerSession) return s;
  std::lock_guard<std::mutex> guard(mutex_);
  if (!session_hold_) session_hold_ = static_cast<bool>(holds_.acquire());
  return s;
}

void DeviceLease::end_call() { holds_.release(); }

}  // namespace onebit::npu
