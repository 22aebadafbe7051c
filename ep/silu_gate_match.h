// SPDX-License-Identifier: Apache-2.0
// The SwiGLU gate after an LLM's gate and up projections, Mul(Mul(gate, Sigmoid(gate)), up), joins
// the fused node of those two sibling groups: the node then writes the gated product only, computed
// after both groups (kernels/silu_gate.h), and ORT runs three small operators less per layer.
#pragma once
#include <string>
#include <vector>

#include "graph_index.h"

namespace onebit {

struct SiluGateMatch {
  std::string gate, up;                // outputs of two groups of one fused node
  std::string output;                  // silu(gate) · up
  std::vector<const NodeInfo*> nodes;  // Sigmoid, Mul, Mul
};

// Each gate in `graph` whose gate and up are two different values of `group_outputs` (the outputs
// of one fused node's groups), float32, read by the gate's nodes only; each value in one gate at
// most. Structure and types only: the caller checks that the two have the same shape.
std::vector<SiluGateMatch> match_silu_gates(const GraphIndex& graph, const std::vector<std::string>& group_outputs);

}  // namespace onebit
