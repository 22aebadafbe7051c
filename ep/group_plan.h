// SPDX-License-Identifier: Apache-2.0
// From a matched group to what Compute runs: the operands' values are read and validated
// (read_group, cheap, also used by GetCapability to decline), then the weights are packed
// once (pack_group, at Compile).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/fused_group.h"
#include "group_match.h"

namespace onebit {

// A group whose values we cannot run exactly; the message says which value and why.
struct UnsupportedGroup : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The engine's group plus what Compute checks each activation against.
struct GroupPlan : FusedGroup {
  std::vector<int64_t> batch;  // leading dims of a batched weight (broadcast against the activation's)
  size_t min_rank = 2;         // accepted activation ranks
  size_t max_rank = 4;
  // Values the kernel reads per call (quantize_dynamic's activation scale and zero point);
  // "" when the value is a constant, folded in here.
  std::string x_scale_input, x_zero_point_input;
  // The group runs its DynamicQuantizeLinear: the kernel's activation is float, quantized per call.
  bool quantizes_x = false;
  // The group runs its activation's QuantizeLinear (uint8, this scale and zero point): the kernel's
  // activation is float, quantized per call; the DequantizeLinear's zero point and scale then apply.
  bool quantizes_x_static = false;
  float q_scale = 1.0f;
  int32_t q_zero_point = 0;
  // Activation × activation: B (`w_input`, rank 2-4, per tensor) is an input packed per call; K, N
  // and batch are what the model declares (-1 where symbolic). Its scale and zero point are
  // constants (w_scale / w_zero_point) or inputs read per call (their names).
  bool w_dynamic = false;
  int64_t declared_rows = -1;  // M per batch entry as the model declares it (-1: symbolic)
  QType w_type = QType::Int8;
  int32_t w_zero_point = 0;
  std::string w_input, w_scale_input, w_zero_point_input;
};

// The plan plus a view of the weight still owned by ORT (valid during GetCapability/Compile).
struct GroupSource {
  GroupPlan plan;
  ConstTensor w;
  QType w_type = QType::Int8;
  bool w_is_nk = false;
  std::vector<int32_t> w_zero_points;  // 1 or N values; empty = 0

  size_t batches() const { return plan.w_dynamic ? 0 : w.count() / static_cast<size_t>(plan.K * plan.N); }
  // The weight of a single-batch group, for the device leg.
  WeightSource weight() const { return {w.data, w_type, plan.K, plan.N, w_is_nk}; }
};

ONNXTensorElementDataType element_type_of(QType t);

// Throws UnsupportedGroup naming the value and the reason.
GroupSource read_group(const GroupMatch& match, const GraphIndex& graph);

GroupPlan pack_group(GroupSource source);

}  // namespace onebit
