// SPDX-License-Identifier: Apache-2.0
// From a matched group to what Compute runs: the operands' values are read and validated
// (read_group, cheap, also used by GetCapability to decline), then the weights are packed
// once (pack_group, at Compile).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/fused_group.h"
#include "engine/shared_weights.h"
#include "group_match.h"

namespace onebit {

// A group whose values we cannot run exactly; the message says which value and why.
struct UnsupportedGroup : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The engine's group plus what Compute reads per call and what GetCapability decides with.
struct GroupPlan : FusedGroup {
  // Values the kernel reads per call (the activation's scale and zero point, a per-call B and its
  // scale and zero point: quantize_dynamic, activation × activation); "" when the value is a
  // constant, folded in here.
  std::string x_scale_input, x_zero_point_input, b_scale_input, b_zero_point_input;
  int64_t declared_rows = -1;  // M per batch entry as the model declares it (-1: symbolic)
  int64_t accuracy_level = 4;  // MatMulNBits': 4 lets its activations be quantized (GetCapability decides)
};

// The plan plus a view of the weight still owned by ORT (valid during GetCapability/Compile).
struct GroupSource {
  GroupPlan plan;
  ConstTensor w;
  QType b_type = QType::Int8;
  bool b_is_nk = false;
  std::vector<int32_t> b_zero_points;  // 1 or N values; empty = 0
  NBitsWeights nbits;                  // a MatMulNBits group's constants (views)

  bool is_nbits() const { return plan.x_source == ActivationSource::PerKBlock; }
  size_t batches() const {
    if (is_nbits()) return 1;
    return plan.b_per_call ? 0 : w.count() / static_cast<size_t>(plan.K * plan.N);
  }
  // The weight of a single-batch group, for the device leg.
  WeightSource weight() const { return {w.data, b_type, plan.K, plan.N, b_is_nk}; }
};

ONNXTensorElementDataType element_type_of(QType t);

// Throws UnsupportedGroup naming the value and the reason.
GroupSource read_group(const GroupMatch& match, const GraphIndex& graph);

// Packs the weights, shared as `sharing` says with the process's other groups of the same packed
// bytes and through the packed-weights cache folder (engine/shared_weights.h), then pages ORT's
// copy out. Appends where each weight's packing came from to `outcomes`.
GroupPlan pack_group(GroupSource source, const WeightSharing& sharing, std::vector<PackOutcome>& outcomes);

}  // namespace onebit
