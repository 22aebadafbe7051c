// SPDX-License-Identifier: Apache-2.0
// Warnings that would repeat (a device failing the same way on every call, e.g. a missing lock
// directory; a deprecated switch read again) are printed the first time only; whoever counts
// still counts every occurrence.
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
