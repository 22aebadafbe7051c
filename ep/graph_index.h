// SPDX-License-Identifier: Apache-2.0
// A name-based index over a graph's nodes: who produces and who consumes each value, which values
// are constant, their types and shapes. The group matcher walks this index, so GetCapability (whole
// graph) and Compile (one fused group's graph) share one matcher. The index reads a plain
// GraphDescription, filled from an OrtGraph (describe_graph) or built directly (test/ep/).
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
  const OrtNode* node = nullptr;  // null in a description built without ORT
  std::string name;
  std::string op_type;
  std::string domain;
  int since_version = 0;
  std::vector<std::string> inputs;  // "" for an absent optional input
  std::vector<std::string> outputs;
  std::vector<std::string> implicit_inputs;  // values of this graph its subgraphs read (an If's branches)
  std::map<std::string, int64_t> int_attrs;  // the node's int, float and string attributes (no other kind is read)
  std::map<std::string, float> float_attrs;
  std::map<std::string, std::string> string_attrs;

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

// What the matcher reads of a graph, as plain values.
struct GraphDescription {
  std::vector<NodeInfo> nodes;
  std::map<std::string, ValueType> types;        // of every node's inputs and outputs
  std::map<std::string, ConstTensor> constants;  // constant initializers (views of bytes the graph owns)
  std::set<std::string> outputs;                 // the graph's outputs
  // Names that denote more than one value: ORT keeps a name whole, but its C API hands it over as
  // a C string, cut at a NUL byte ("mm\0a" and "mm\0b" both read "mm"). No group reading or
  // writing one is claimed: the index cannot tell which value it means.
  std::set<std::string> ambiguous;
};

// Reads an OrtGraph's nodes, their int, float and string attributes, value types and constant initializers.
GraphDescription describe_graph(const OrtGraph* graph);

class GraphIndex {
 public:
  explicit GraphIndex(const OrtGraph* graph) : GraphIndex(describe_graph(graph)) {}
  explicit GraphIndex(GraphDescription graph);

  const std::vector<NodeInfo>& nodes() const { return graph_.nodes; }
  const NodeInfo* producer(const std::string& value) const;
  // Every node that reads `value`: as an input, or inside a subgraph of its own (implicitly).
  std::vector<const NodeInfo*> consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return graph_.outputs.count(value) != 0; }
  std::optional<ConstTensor> constant(const std::string& value) const;
  ValueType type_of(const std::string& value) const;
  bool is_ambiguous(const std::string& value) const { return graph_.ambiguous.count(value) != 0; }

 private:
  GraphDescription graph_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, std::vector<size_t>> consumers_;
};

// True for a node of the ONNX domain ("" or "ai.onnx").
bool is_onnx(const NodeInfo& node);
// True for an ONNX-domain node of `op_type` (false for null).
bool is_op(const NodeInfo* node, const char* op_type);
// The only consumer of `value`, if it has exactly one and is not also a graph output.
const NodeInfo* sole_consumer(const GraphIndex& g, const std::string& value);

}  // namespace onebit
