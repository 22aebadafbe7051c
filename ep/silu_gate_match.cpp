// SPDX-License-Identifier: Apache-2.0
#include "silu_gate_match.h"

#include <algorithm>
#include <set>

namespace onebit {

namespace {

// The input of a two-input node other than `one`, or "" if `one` is not one of them.
std::string other_input(const NodeInfo& node, const std::string& one) {
  if (node.inputs.size() != 2) return "";
  if (node.inputs[0] == one) return node.inputs[1];
  return node.inputs[1] == one ? node.inputs[0] : "";
}

bool plain_float(const GraphIndex& graph, const std::string& value) {
  return !value.empty() && !graph.is_ambiguous(value) &&
         graph.type_of(value).element == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}

// The gate whose gate value is `gate`, if it has one.
std::optional<SiluGateMatch> gate_of(const GraphIndex& graph, const std::string& gate) {
  const std::vector<const NodeInfo*> readers = graph.consumers(gate);
  if (readers.size() != 2 || graph.is_graph_output(gate) || !plain_float(graph, gate)) return std::nullopt;
  const bool sigmoid_first = is_op(readers[0], "Sigmoid");
  const NodeInfo* sigmoid = readers[sigmoid_first ? 0 : 1];
  const NodeInfo* silu = readers[sigmoid_first ? 1 : 0];
  if (!is_op(sigmoid, "Sigmoid") || sigmoid->inputs.size() != 1 || sigmoid->outputs.size() != 1 ||
      !is_op(silu, "Mul") || silu->outputs.size() != 1)
    return std::nullopt;
  const std::string& sigmoid_value = sigmoid->outputs[0];
  if (other_input(*silu, gate) != sigmoid_value || sole_consumer(graph, sigmoid_value) != silu ||
      !plain_float(graph, sigmoid_value))
    return std::nullopt;
  const std::string& silu_value = silu->outputs[0];
  const NodeInfo* product = sole_consumer(graph, silu_value);
  if (!is_op(product, "Mul") || product->outputs.size() != 1 || !plain_float(graph, silu_value)) return std::nullopt;
  const std::string up = other_input(*product, silu_value);
  if (up == gate || sole_consumer(graph, up) != product || !plain_float(graph, up) ||
      !plain_float(graph, product->outputs[0]))
    return std::nullopt;
  return SiluGateMatch{gate, up, product->outputs[0], {sigmoid, silu, product}};
}

}  // namespace

std::vector<SiluGateMatch> match_silu_gates(const GraphIndex& graph, const std::vector<std::string>& group_outputs) {
  const std::set<std::string> outputs(group_outputs.begin(), group_outputs.end());
  std::set<std::string> taken;
  std::vector<SiluGateMatch> gates;
  for (const std::string& gate : group_outputs) {
    std::optional<SiluGateMatch> match = gate_of(graph, gate);
    if (!match || !outputs.count(match->up) || taken.count(gate) || taken.count(match->up)) continue;
    taken.insert(gate);
    taken.insert(match->up);
    gates.push_back(std::move(*match));
  }
  return gates;
}

}  // namespace onebit
