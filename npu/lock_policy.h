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

// The holds on one opened Device's lock, from every lease that uses the Device (the sessions of
// a process share one: engine/shared_device.h): the lock is taken at the first hold and dropped
// when the last one ends, so one session's call never unlocks the array under another's.
class LockHolds {
 public:
  explicit LockHolds(Device& device) : device_(device) {}
  LockHolds(const LockHolds&) = delete;
  LockHolds& operator=(const LockHolds&) = delete;

  // The Device's try_lock (which also checks a held lock's file is still at its path); one more
  // hold when it is ok.
  Status acquire();
  // One hold less; the lock is released with the last.
  void release();

 private:
  Device& device_;
  std::mutex mutex_;
  size_t holds_ = 0;
};

// A session's use of the device lock, shared by all of its shapes and threads. begin_call()
// before each device call: ok = go ahead, kBusy = another process holds the array (run this
// call on the host), anything else = a lock error (also run on the host). After an ok
// begin_call(), end_call() once the call is done. Under kPerCall the session holds the lock only
// while a call of its is in flight; under kPerSession from its first ok call until the lease ends.
// Never blocks on another process.
class DeviceLease {
 public:
  DeviceLease(LockHolds& holds, LockPolicy policy) : holds_(holds), policy_(policy) {}
  ~DeviceLease();
  DeviceLease(const DeviceLease&) = delete;
  DeviceLease& operator=(const DeviceLease&) = delete;

  Status begin_call();
  void end_call();
  LockPolicy policy() const { return policy_; }

 private:
  LockHolds& holds_;
  LockPolicy policy_;
  std::mutex mutex_;
  bool session_hold_ = false;  // kPerSession: taken at the first ok call
};

}  // namespace onebit::npu
