// SPDX-License-Identifier: Apache-2.0
// A circuit breaker for a session's device: after kFailuresToOpen consecutive failed device calls
// (launch errors, timeouts) the device is not tried for a back-off period, so a stuck array costs
// each call nothing instead of its whole timeout. After the back-off one call probes the device:
// success closes the breaker, failure opens it again for twice as long (up to kMaxBackoff).
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>

namespace onebit {

class DeviceBreaker {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kFailuresToOpen = 3;
  static constexpr std::chrono::milliseconds kFirstBackoff{10'000};
  static constexpr std::chrono::milliseconds kMaxBackoff{600'000};

  // Whether a call may try the device now (false: the breaker is open; run on the host).
  bool allow(Clock::time_point now = Clock::now());
  void record_success();
  void record_failure(Clock::time_point now = Clock::now());
  // An allowed call that did not reach the device (it was busy elsewhere): no verdict.
  void record_not_tried();

 private:
  std::mutex mutex_;
  int consecutive_failures_ = 0;
  std::chrono::milliseconds backoff_ = kFirstBackoff;
  Clock::time_point open_until_{};
  bool probing_ = false;  // a call is trying the device after a back-off
};

}  // namespace onebit
