// SPDX-License-Identifier: Apache-2.0
// The device circuit breaker on a controlled clock: opens after consecutive failures, lets one
// probe through after the back-off, closes on success, doubles the back-off on failure.
#include "engine/device_breaker.h"

#include <gtest/gtest.h>

namespace onebit {
namespace {

using Clock = DeviceBreaker::Clock;

TEST(DeviceBreaker, OpensAfterConsecutiveFailuresOnly) {
  DeviceBreaker b;
  const Clock::time_point t0{};
  for (int i = 0; i < DeviceBreaker::kFailuresToOpen - 1; ++i) {
    EXPECT_TRUE(b.allow(t0));
    b.record_failure(t0);
  }
  b.record_success();  // a success in between resets the count
  for (int i = 0; i < DeviceBreaker::kFailuresToOpen - 1; ++i) b.record_failure(t0);
  EXPECT_TRUE(b.allow(t0));
  b.record_failure(t0);
  EXPECT_FALSE(b.allow(t0));
  EXPECT_FALSE(b.allow(t0 + DeviceBreaker::kFirstBackoff - std::chrono::milliseconds(1)));
}

TEST(DeviceBreaker, OneProbeAfterTheBackoffThenClosedOrDoubled) {
  DeviceBreaker b;
  const Clock::time_point t0{};
  for (int i = 0; i < DeviceBreaker::kFailuresToOpen; ++i) b.record_failure(t0);
  const auto t1 = t0 + DeviceBreaker::kFirstBackoff;
  EXPECT_TRUE(b.allow(t1));   // the probe
  EXPECT_FALSE(b.allow(t1));  // others wait for it
  b.record_failure(t1);       // probe failed: open for twice as long
  EXPECT_FALSE(b.allow(t1 + DeviceBreaker::kFirstBackoff));
  const auto t2 = t1 + 2 * DeviceBreaker::kFirstBackoff;
  EXPECT_TRUE(b.allow(t2));
  b.record_success();
  EXPECT_TRUE(b.allow(t2));
  EXPECT_TRUE(b.allow(t2));
}

TEST(DeviceBreaker, BackoffIsCapped) {
  DeviceBreaker b;
  Clock::time_point t{};
  for (int i = 0; i < DeviceBreaker::kFailuresToOpen; ++i) b.record_failure(t);
  for (int round = 0; round < 20; ++round) {
    t += DeviceBreaker::kMaxBackoff;
    ASSERT_TRUE(b.allow(t)) << "round " << round;
    b.record_failure(t);
  }
  EXPECT_TRUE(b.allow(t + DeviceBreaker::kMaxBackoff));
}

}  // namespace
}  // namespace onebit
