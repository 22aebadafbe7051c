// SPDX-License-Identifier: Apache-2.0
// Per-thread reused scratch: a failed growth leaves a usable buffer behind.
#include "engine/thread_reused.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <new>

namespace onebit {
namespace {

TEST(UninitBuffer, AFailedGrowthLeavesABufferThatStillHandsOutStorage) {
  UninitBuffer<int32_t> buffer;
  ASSERT_NE(buffer.get(16), nullptr);
  // More elements than any allocation can hold: new[] throws (bad_array_new_length is a bad_alloc).
  EXPECT_THROW(buffer.get(std::numeric_limits<size_t>::max() / 2), std::bad_alloc);
  int32_t* again = buffer.get(16);
  ASSERT_NE(again, nullptr);
  for (int i = 0; i < 16; ++i) again[i] = i;
  EXPECT_EQ(again[15], 15);
}

TEST(ThreadReused, TheNextLeaseOnTheThreadAfterAFailedGrowthGetsStorage) {
  {
    ThreadReused<UninitBuffer<int64_t>> lease;
    ASSERT_NE(lease->get(8), nullptr);
  }
  {
    ThreadReused<UninitBuffer<int64_t>> lease;
    EXPECT_THROW(lease->get(std::numeric_limits<size_t>::max() / 4), std::bad_alloc);
  }
  ThreadReused<UninitBuffer<int64_t>> lease;
  EXPECT_NE(lease->get(8), nullptr);
}

TEST(ThreadReused, ASecondLeaseHeldAtTheSameTimeGetsItsOwnStorage) {
  ThreadReused<UninitBuffer<int32_t>> first;
  ThreadReused<UninitBuffer<int32_t>> second;
  EXPECT_NE(&*first, &*second);
  EXPECT_NE(first->get(4), second->get(4));
}

}  // namespace
}  // namespace onebit
