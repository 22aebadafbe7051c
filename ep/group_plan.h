// SPDX-License-Identifier: Apache-2.0
// From a matched group to what Compute runs: the operands' values are read and validated
// (read_group, cheap, also used by GetCapability to decline), then the weights are packed
// once (pack_group, at Compile).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/epilogue.h"
#include "kernels/gemm_q8.h"
#include "group_match.h"

namespace onebit {

// A group whose values we cannot run exactly; the message says which value and why.
struct UnsupportedGroup : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct GroupPlan {
  std::string name;  // the anchor, for messages: "MatMul 'proj'"
  QType x_type = QType::Int8;
  int32_t x_zero_point = 0;
  int64_t K = 0;
  int64_t N = 0;
  std::vector<int64_t> batch;  // leading dims of a batched weight; empty for a 2-D weight
  size_t min_rank = 2;         // accepted activation ranks
  size_t max_rank = 4;
  Epilogue epilogue;
  std::vector<PackedWeights> weights;  // one per batch entry, filled by pack_group
};

// The plan plus a view of the weight still owned by ORT (valid during GetCapability/Compile).
struct GroupSource {
  GroupPlan plan;
  ConstTensor w;
  QType w_type = QType::Int8;
  bool w_is_nk = false;
  std::vector<int32_t> w_zero_points;  // 1 or N values; empty = 0
};

// Throws UnsupportedGroup naming the value and the reason.
GroupSource read_group(const GroupMatch& match, const GraphIndex& graph);

GroupPlan pack_group(GroupSource source);

}  // namespace onebit
