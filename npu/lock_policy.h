// SPDX-License-Identifier: Apache-2.0
// When the device lock is taken and released: per call (default) or per session.
#pragma once
#include <array>
#include <cstddef>
#include <mutex>
#include <string_view>

#include "base/error.h"
#include "npu/device.h"

namespace onebit::npu {

enum class LockPolicy {
  kPerCall,     // lock before each device call, unlock after: the array is free between calls
  kPerSession,  // keep the lock from the first call that gets it until the lease ends
};

// The values of the `device_lock` option.
constexpr std::array<const char*, 2> kLockPolicyNames = {"call", "session"};
Result<LockPolicy> lock_policy_from_name(std::string_view name);
const char* lock_policy_name(LockPolicy policy);

// A session's use of the device lock, shared by all of its shapes and threads. begin_call()
// before each device call: ok = go ahead, kBusy = another process holds the array (run this
// call on the host), anything else = a lock error (also run on the host). After an ok
// begin_call(), end_call() once the call is done. Under kPerCall the lock is dropped when no
// call of this lease is in flight. Never blocks on another process.
class DeviceLease {
 public:
  DeviceLease(Device& device, LockPolicy policy) : device_(device), policy_(policy) {}
  ~DeviceLease();
  DeviceLease(const DeviceLease&) = delete;
  DeviceLease& operator=(const DeviceLease&) = delete;

  Status begin_call();
  void end_call();
  LockPolicy policy() const { return policy_; }

 private:
  Device& device_;
  LockPolicy policy_;
  std::mutex mutex_;
  size_t calls_in_flight_ = 0;
};

}  // namespace onebit::npu
