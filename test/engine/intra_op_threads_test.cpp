// SPDX-License-Identifier: Apache-2.0
// Whether the session's intra-op threads sleep between calls, for the values ORT 1.30 was seen to
// read as sleeping (no CPU spent after a run) or spinning (about 28 ms of CPU after a run).
#include "engine/intra_op_threads.h"

#include <gtest/gtest.h>

namespace onebit {
namespace {

bool sleep_with(const char* key, const char* value) { return intra_op_threads_sleep({{key, value}}); }

TEST(IntraOpThreads, UnsetTheySpin) {
  EXPECT_FALSE(intra_op_threads_sleep({}));
  EXPECT_FALSE(intra_op_threads_sleep({{"session.inter_op.allow_spinning", "0"}}));  // the other pool
}

TEST(IntraOpThreads, AllowSpinningAnythingButOneSleeps) {
  EXPECT_FALSE(sleep_with("session.intra_op.allow_spinning", "1"));
  for (const char* v : {"0", "false", "true", "", " 0", "00", "2", "-1", "\xc3\xa9"})
    EXPECT_TRUE(sleep_with("session.intra_op.allow_spinning", v)) << "'" << v << "'";
}

TEST(IntraOpThreads, ShortSpinDurationsSleep) {
  for (const char* v : {"0", "00", "1", "2", "99"})
    EXPECT_TRUE(sleep_with("session.intra_op.spin_duration_us", v)) << "'" << v << "'";
  for (const char* v : {"100", "1000", "99999999999999999999"})
    EXPECT_FALSE(sleep_with("session.intra_op.spin_duration_us", v)) << "'" << v << "'";
}

TEST(IntraOpThreads, SpinDurationsOrtRefusesKeepItsDefaultSpin) {
  for (const char* v : {"", " 0", "-1", "0.0", "false", "\xc3\xa9"})
    EXPECT_FALSE(sleep_with("session.intra_op.spin_duration_us", v)) << "'" << v << "'";
}

TEST(IntraOpThreads, AllowSpinningZeroWinsOverASpinDuration) {
  EXPECT_TRUE(intra_op_threads_sleep(
      {{"session.intra_op.allow_spinning", "0"}, {"session.intra_op.spin_duration_us", "5000"}}));
}

}  // namespace
}  // namespace onebit
