// SPDX-License-Identifier: Apache-2.0
// Covering M rows with launches of the available block sizes (a design runs m_block rows per
// launch). A pure function: the plan minimises
//     launches × launch_cost_rows + rows computed (padding included),
// i.e. a launch costs as much as computing launch_cost_rows rows. Ties go to fewer launches.
// Launches are ordered largest block first over consecutive rows; only the last may be
// padded (its rows past M are computed and ignored). With blocks {32, 4} and the default cost:
// 36 = 32 + 4, 3 = 4 (1 row padding), 12 = 4+4+4, 20 = 32 (12 rows padding), 64 = 32 + 32.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace onebit::npu {

constexpr uint32_t kDefaultLaunchCostRows = 8;

struct BlockLaunch {
  uint32_t row_begin = 0;  // first row of A / C this launch covers
  uint32_t rows = 0;       // rows it covers that the caller reads (<= m_block)
  uint32_t m_block = 0;    // the design's block size; rows past `rows` are padding
  bool operator==(const BlockLaunch&) const = default;
};

// block_sizes: the available m_block values (any order, > 0). Empty plan for rows == 0 or no
// block sizes.
std::vector<BlockLaunch> plan_blocks(uint32_t rows, std::span<const uint32_t> block_sizes,
                                     uint32_t launch_cost_rows = kDefaultLaunchCostRows);

// Rows the plan computes in total, padding included (what the A and C BOs must hold).
uint32_t planned_rows(const std::vector<BlockLaunch>& plan);

}  // namespace onebit::npu
