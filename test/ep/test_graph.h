// SPDX-License-Identifier: Apache-2.0
// Builds the GraphDescription the matcher reads, in a test: typed values, constants with their
// bytes (owned here, so the description's views stay valid while the builder lives), nodes with
// their attributes. Replacing a value or a constant by name is how a test row varies a graph.
#pragma once
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ep/graph_index.h"

namespace onebit::test {

using Type = ONNXTensorElementDataType;
constexpr Type kF32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
constexpr Type kF16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
constexpr Type kI8 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
constexpr Type kU8 = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
constexpr Type kI16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
constexpr Type kI32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;

using Shape = std::optional<std::vector<int64_t>>;  // -1 for a symbolic dim; nullopt: rank unknown
constexpr int64_t kSymbolic = -1;

class TestGraph {
 public:
  TestGraph() = default;
  TestGraph(TestGraph&&) = default;  // a copy would hold views of the original's bytes
  TestGraph(const TestGraph&) = delete;

  // A value computed at run time (a graph input, a node's output); it is no longer a constant.
  TestGraph& value(const std::string& name, Type type, Shape shape);
  // A constant initializer of `type` holding `values` (float16: values exact in half).
  TestGraph& constant(const std::string& name, Type type, std::vector<int64_t> shape,
                      const std::vector<double>& values);
  // Adds a node, or replaces the one of the same name.
  TestGraph& node(const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
                  std::vector<std::string> outputs, std::map<std::string, int64_t> ints = {},
                  std::map<std::string, float> floats = {}, const std::string& domain = "");
  TestGraph& remove_node(const std::string& name);
  TestGraph& int_attr(const std::string& node, const std::string& attr, int64_t value);
  TestGraph& float_attr(const std::string& node, const std::string& attr, float value);
  TestGraph& remove_attr(const std::string& node, const std::string& attr);           // an int attribute
  TestGraph& set_input(const std::string& node, size_t i, const std::string& value);  // "": absent
  TestGraph& set_output(const std::string& node, size_t i, const std::string& value);
  TestGraph& output(const std::string& name);  // marks a graph output
  // Marks a name that stands for several values (as describe_graph does for names cut at a NUL).
  TestGraph& ambiguous(const std::string& name);

  GraphDescription description() const { return graph_; }

 private:
  NodeInfo& find(const std::string& node);

  GraphDescription graph_;
  std::deque<std::vector<uint8_t>> bytes_;  // the constants' data
};

}  // namespace onebit::test
