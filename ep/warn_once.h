// SPDX-License-Identifier: Apache-2.0
// Warnings that would repeat on every call (a device failing the same way each time, e.g. a
// missing lock directory) are logged the first time only; the counters still count every call.
#pragma once
#include <mutex>
#include <set>
#include <string>

namespace onebit {

class WarnOnce {
 public:
  // True the first time `message` is seen by this object (thread-safe).
  bool first_time(const std::string& message) {
    std::lock_guard lock(mutex_);
    return seen_.insert(message).second;
  }

 private:
  std::mutex mutex_;
  std::set<std::string> seen_;
};

}  // namespace onebit
