// SPDX-License-Identifier: Apache-2.0
// MatMul batch broadcasting against a batched weight: output dims and which entries pair up.
#include "engine/batch_broadcast.h"

#include <gtest/gtest.h>

namespace onebit {
namespace {

TEST(BatchBroadcast, OneStretchesToTheWeightsBatch) {
  const auto b = broadcast_batches({1}, {3});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(b->x_entry, (std::vector<size_t>{0, 0, 0}));
  EXPECT_EQ(b->b_entry, (std::vector<size_t>{0, 1, 2}));
}

TEST(BatchBroadcast, ARank2ActivationMeetsEveryWeightEntry) {
  const auto b = broadcast_batches({}, {2});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(b->x_entry, (std::vector<size_t>{0, 0}));
  EXPECT_EQ(b->b_entry, (std::vector<size_t>{0, 1}));
}

TEST(BatchBroadcast, LeadingActivationDimsAndAStretchedWeight) {
  // x [2, 3, M, K] with W [3, K, N]: y [2, 3, M, N]; x [2, 1, M, K] with W [3, K, N]: each x entry 3 times.
  auto b = broadcast_batches({2, 3}, {3});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b->x_entry, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b->b_entry, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
  b = broadcast_batches({2, 1}, {3});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b->x_entry, (std::vector<size_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(b->b_entry, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
  b = broadcast_batches({4}, {1});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->b_entry, (std::vector<size_t>{0, 0, 0, 0}));
}

TEST(BatchBroadcast, MismatchedDimsDoNotBroadcast) {
  EXPECT_FALSE(broadcast_batches({2}, {3}));
  EXPECT_FALSE(broadcast_batches({2, 4}, {3}));
  EXPECT_FALSE(batches_may_broadcast({2}, {3}));
  EXPECT_TRUE(batches_may_broadcast({-1}, {3}));
  EXPECT_TRUE(batches_may_broadcast({1}, {3}));
  EXPECT_TRUE(batches_may_broadcast({5, -1}, {3}));
  EXPECT_TRUE(batches_may_broadcast({2, 12}, {-1, 12}));  // a symbolic dim on either side
  EXPECT_FALSE(batches_may_broadcast({2, 12}, {-1, 9}));
}

}  // namespace
}  // namespace onebit
