// SPDX-License-Identifier: Apache-2.0
// A name-based index over an OrtGraph's nodes: who produces and who consumes each value,
// which values are constant, their types and shapes. The group matcher walks this index,
// so GetCapability (whole graph) and Compile (one fused group's graph) share one matcher.
#pragma once
#include <onnxruntime_c_api.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "const_tensor.h"

namespace onebit {

struct NodeInfo {
  const OrtNode* node = nullptr;
  std::string name;
  std::string op_type;
  std::string domain;
  int since_version = 0;
  std::vector<std::string> inputs;  // "" for an absent optional input
  std::vector<std::string> outputs;

  std::optional<int64_t> int_attr(const char* attr) const;
  std::optional<float> float_attr(const char* attr) const;
  std::string input(size_t i) const { return i < inputs.size() ? inputs[i] : std::string(); }
  std::string describe() const;  // "MatMul 'name'" for messages
};

struct ValueType {
  ONNXTensorElementDataType element = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::optional<std::vector<int64_t>> shape;  // -1 for a symbolic dim; nullopt if rank unknown
};

// The names of a node's inputs, in order ("" for an absent optional input).
std::vector<std::string> input_names(const OrtNode* node);
std::vector<std::string> output_names(const OrtNode* node);

class GraphIndex {
 public:
  explicit GraphIndex(const OrtGraph* graph);

  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  const NodeInfo* producer(const std::string& value) const;
  std::vector<const NodeInfo*> consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return graph_outputs_.count(value) != 0; }
  std::optional<ConstTensor> constant(const std::string& value) const;
  ValueType type_of(const std::string& value) const;

 private:
  std::vector<NodeInfo> nodes_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, std::vector<size_t>> consumers_;
  std::map<std::string, const OrtValueInfo*> value_infos_;
  std::map<std::string, const OrtValue*> constants_;
  std::set<std::string> graph_outputs_;
};

}  // namespace onebit
