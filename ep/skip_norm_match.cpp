// SPDX-License-Identifier: Apache-2.0
#include "skip_norm_match.h"

namespace onebit {

namespace {

bool is_float(const GraphIndex& graph, const std::string& value) {
  return graph.type_of(value).element == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}

// A constant float vector, as gamma and bias must be.
bool constant_vector(const GraphIndex& graph, const std::string& value) {
  const std::optional<ConstTensor> c = graph.constant(value);
  return c && c->type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && c->shape.size() == 1;
}

}  // namespace

bool is_skip_norm(const NodeInfo& node) {
  return node.domain == "com.microsoft" && node.op_type == "SkipSimplifiedLayerNormalization";
}

std::string skip_norm_decline(const GraphIndex& graph, const NodeInfo& node) {
  if (node.inputs.size() < 3 || node.inputs.size() > 4 || node.outputs.empty() || node.outputs.size() > 4)
    return "not the operator's 3 or 4 inputs and 1 to 4 outputs";
  if (!node.int_attrs.empty()) return "attribute " + node.int_attrs.begin()->first + " is not computed by the EP";
  if (!node.string_attrs.empty()) return "attribute " + node.string_attrs.begin()->first + " is not computed by the EP";
  for (const auto& [name, value] : node.float_attrs)
    if (name != "epsilon") return "attribute " + name + " is not computed by the EP";
  // ORT's kernel refuses a negative epsilon (and NaN) at session creation: left to it to say so.
  if (const float epsilon = node.float_attr("epsilon").value_or(0.0f); !(epsilon >= 0.0f))
    return "epsilon " + std::to_string(epsilon) + " is not at least 0";
  for (const std::string& value : node.inputs)
    if (graph.is_ambiguous(value)) return "'" + value + "' names more than one value";
  for (const std::string& value : node.outputs)
    if (graph.is_ambiguous(value)) return "'" + value + "' names more than one value";
  const std::string& input = node.inputs[NormInput];
  const std::string& skip = node.inputs[NormSkip];
  if (!is_float(graph, input) || !is_float(graph, skip) || graph.constant(input) || graph.constant(skip))
    return "input and skip are not float32 values computed at run time";
  if (!constant_vector(graph, node.inputs[NormGamma])) return "gamma is not a constant float32 vector";
  const std::string& bias = node.input(NormBias);
  if (!bias.empty() && (!constant_vector(graph, bias) ||
                        graph.constant(bias)->count() != graph.constant(node.inputs[NormGamma])->count()))
    return "bias is not a constant float32 vector as long as gamma";
  for (size_t out : {NormMean, NormInvStdVar})
    if (out < node.outputs.size() && !node.outputs[out].empty() &&
        (graph.is_graph_output(node.outputs[out]) || !graph.consumers(node.outputs[out]).empty()))
      return "its mean or inv_std_var is read";
  if (node.outputs[NormOut].empty() || graph.is_graph_output(node.outputs[NormOut]) ||
      !is_float(graph, node.outputs[NormOut]))
    return "its output is a graph output, or not float32";
  return "";
}

}  // namespace onebit
