// SPDX-License-Identifier: Apache-2.0
// plan_blocks: covering M rows with launches of the available block sizes.
#include "npu/block_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace onebit::npu {
namespace {

const std::vector<uint32_t> kBlocks = {32, 4};

std::vector<uint32_t> sizes_of(const std::vector<BlockLaunch>& plan) {
  std::vector<uint32_t> s;
  for (const BlockLaunch& b : plan) s.push_back(b.m_block);
  return s;
}

TEST(BlockPlan, ThirtySixRowsAreOneM32AndOneM4) {
  const std::vector<BlockLaunch> plan = plan_blocks(36, kBlocks);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (BlockLaunch{0, 32, 32}));
  EXPECT_EQ(plan[1], (BlockLaunch{32, 4, 4}));
  EXPECT_EQ(planned_rows(plan), 36u);
}

TEST(BlockPlan, ThreeRowsAreOnePaddedM4) {
  const std::vector<BlockLaunch> plan = plan_blocks(3, kBlocks);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0], (BlockLaunch{0, 3, 4}));
  EXPECT_EQ(planned_rows(plan), 4u);
}

TEST(BlockPlan, KnownCovers) {
  EXPECT_EQ(sizes_of(plan_blocks(1, kBlocks)), (std::vector<uint32_t>{4}));
  EXPECT_EQ(sizes_of(plan_blocks(4, kBlocks)), (std::vector<uint32_t>{4}));
  EXPECT_EQ(sizes_of(plan_blocks(5, kBlocks)), (std::vector<uint32_t>{4, 4}));
  EXPECT_EQ(sizes_of(plan_blocks(12, kBlocks)), (std::vector<uint32_t>{4, 4, 4}));
  // From 13 rows one padded m32 launch is cheaper than four m4 launches (cost 8 rows each).
  EXPECT_EQ(sizes_of(plan_blocks(20, kBlocks)), (std::vector<uint32_t>{32}));
  EXPECT_EQ(sizes_of(plan_blocks(32, kBlocks)), (std::vector<uint32_t>{32}));
  EXPECT_EQ(sizes_of(plan_blocks(33, kBlocks)), (std::vector<uint32_t>{32, 4}));
  EXPECT_EQ(sizes_of(plan_blocks(40, kBlocks)), (std::vector<uint32_t>{32, 4, 4}));
  EXPECT_EQ(sizes_of(plan_blocks(64, kBlocks)), (std::vector<uint32_t>{32, 32}));
  EXPECT_EQ(sizes_of(plan_blocks(100, kBlocks)), (std::vector<uint32_t>{32, 32, 32, 4}));
}

TEST(BlockPlan, EmptyForNoRowsOrNoBlocks) {
  EXPECT_TRUE(plan_blocks(0, kBlocks).empty());
  EXPECT_TRUE(plan_blocks(7, std::vector<uint32_t>{}).empty());
  EXPECT_EQ(planned_rows({}), 0u);
}

TEST(BlockPlan, SingleBlockSizeAndOrderOfSizesDoNotMatter) {
  EXPECT_EQ(sizes_of(plan_blocks(70, std::vector<uint32_t>{32})), (std::vector<uint32_t>{32, 32, 32}));
  EXPECT_EQ(plan_blocks(36, std::vector<uint32_t>{4, 32}), plan_blocks(36, kBlocks));
  EXPECT_EQ(plan_blocks(36, std::vector<uint32_t>{4, 32, 32, 0}), plan_blocks(36, kBlocks));
}

TEST(BlockPlan, LaunchCostTradesLaunchesAgainstPadding) {
  // Launches free: cover exactly with the smallest blocks where possible.
  EXPECT_EQ(sizes_of(plan_blocks(20, kBlocks, 0)), (std::vector<uint32_t>{4, 4, 4, 4, 4}));
  // Launches very dear: one padded m32 even for 5 rows.
  EXPECT_EQ(sizes_of(plan_blocks(5, kBlocks, 100)), (std::vector<uint32_t>{32}));
}

// Every plan covers the rows contiguously, largest blocks first, pads only the last launch,
// and no launch is all padding.
TEST(BlockPlan, InvariantsForManyRowCountsAndBlockSets) {
  const std::vector<std::vector<uint32_t>> sets = {{32, 4}, {32}, {4}, {64, 16, 4, 1}, {32, 8}, {7, 3}};
  for (const auto& set : sets) {
    for (uint32_t cost : {0u, 1u, 8u, 64u}) {
      for (uint32_t rows = 1; rows <= 300; ++rows) {
        const std::vector<BlockLaunch> plan = plan_blocks(rows, set, cost);
        ASSERT_FALSE(plan.empty());
        uint32_t next = 0;
        for (size_t i = 0; i < plan.size(); ++i) {
          SCOPED_TRACE("rows " + std::to_string(rows) + " launch " + std::to_string(i));
          EXPECT_EQ(plan[i].row_begin, next);
          EXPECT_GT(plan[i].rows, 0u);
          EXPECT_LE(plan[i].rows, plan[i].m_block);
          if (i + 1 < plan.size()) {
            EXPECT_EQ(plan[i].rows, plan[i].m_block);
            EXPECT_GE(plan[i].m_block, plan[i + 1].m_block);
          }
          next += plan[i].rows;
        }
        EXPECT_EQ(next, rows);
        EXPECT_LT(planned_rows(plan) - rows, plan.back().m_block);
      }
    }
  }
}

}  // namespace
}  // namespace onebit::npu
