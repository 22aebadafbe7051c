// SPDX-License-Identifier: Apache-2.0
#include "npu/block_plan.h"

#include <algorithm>
#include <limits>

namespace onebit::npu {

std::vector<BlockLaunch> plan_blocks(uint32_t rows, std::span<const uint32_t> block_sizes, uint32_t launch_cost_rows) {
  std::vector<uint32_t> sizes;
  for (uint32_t b : block_sizes)
    if (b > 0) sizes.push_back(b);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (rows == 0 || sizes.empty()) return {};

  // cost[r] = cheapest cover of r rows; choice[r] = the block that starts it.
  struct Cell {
    uint64_t cost = std::numeric_limits<uint64_t>::max();
    uint32_t launches = 0;
    uint32_t block = 0;
  };
  std::vector<Cell> best(size_t(rows) + 1);
  best[0] = {0, 0, 0};
  for (uint32_t r = 1; r <= rows; ++r) {
    for (uint32_t b : sizes) {  // largest first, so ties keep the larger block
      const Cell& rest = best[r > b ? r - b : 0];
      const uint64_t cost = rest.cost + launch_cost_rows + b;
      const uint32_t launches = rest.launches + 1;
      if (cost < best[r].cost || (cost == best[r].cost && launches < best[r].launches)) best[r] = {cost, launches, b};
    }
  }
  std::vector<uint32_t> chosen;
  for (uint32_t r = rows; r > 0;) {
    const uint32_t b = best[r].block;
    chosen.push_back(b);
    r = r > b ? r - b : 0;
  }
  std::sort(chosen.begin(), chosen.end(), std::greater<>());
  std::vector<BlockLaunch> plan;
  uint32_t begin = 0;
  for (uint32_t b : chosen) {
    const uint32_t covered = std::min(b, rows - begin);
    plan.push_back({begin, covered, b});
    begin += covered;
  }
  return plan;
}

uint32_t planned_rows(const std::vector<BlockLaunch>& plan) {
  return plan.empty() ? 0 : plan.back().row_begin + plan.back().m_block;
}

}  // namespace onebit::npu
