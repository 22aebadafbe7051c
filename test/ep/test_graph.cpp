// SPDX-License-Identifier: Apache-2.0
#include "test_graph.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace onebit::test {

namespace {

// IEEE half bits of a value exact in half (a normal number or zero), as the tests write them.
uint16_t half_bits(double v) {
  if (v == 0) return 0;
  const int exponent = std::ilogb(v);
  const double mantissa = (std::fabs(v) / std::ldexp(1.0, exponent) - 1) * 1024;
  if (exponent < -14 || exponent > 15 || mantissa != std::floor(mantissa))
    throw std::invalid_argument("test graph: " + std::to_string(v) + " is not a normal half");
  return static_cast<uint16_t>((v < 0 ? 0x8000 : 0) | (exponent + 15) << 10 | static_cast<int>(mantissa));
}

template <typename T>
void put(std::vector<uint8_t>& bytes, T value) {
  const size_t at = bytes.size();
  bytes.resize(at + sizeof(T));
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

}  // namespace

TestGraph& TestGraph::value(const std::string& name, Type type, Shape shape) {
  graph_.constants.erase(name);
  graph_.types[name] = ValueType{type, std::move(shape)};
  return *this;
}

TestGraph& TestGraph::constant(const std::string& name, Type type, std::vector<int64_t> shape,
                               const std::vector<double>& values) {
  std::vector<uint8_t>& bytes = bytes_.emplace_back();
  for (double v : values) {
    switch (type) {
      case kF32:
        put(bytes, static_cast<float>(v));
        break;
      case kF16:
        put(bytes, half_bits(v));
        break;
      case kI8:
        put(bytes, static_cast<int8_t>(v));
        break;
      case kU8:
        put(bytes, static_cast<uint8_t>(v));
        break;
      case kI16:
        put(bytes, static_cast<int16_t>(v));
        break;
      case kI32:
        put(bytes, static_cast<int32_t>(v));
        break;
      default:
        throw std::invalid_argument("test graph: no constants of " + type_name(type));
    }
  }
  ConstTensor t{type, shape, bytes.data()};
  if (t.count() != values.size())
    throw std::invalid_argument("test graph: constant '" + name + "' has the wrong count");
  graph_.constants[name] = t;
  graph_.types[name] = ValueType{type, std::move(shape)};
  return *this;
}

TestGraph& TestGraph::node(const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
                           std::vector<std::string> outputs, std::map<std::string, int64_t> ints,
                           std::map<std::string, float> floats, const std::string& domain) {
  NodeInfo info;
  info.name = name;
  info.op_type = op_type;
  info.domain = domain;
  info.inputs = std::move(inputs);
  info.outputs = std::move(outputs);
  info.int_attrs = std::move(ints);
  info.float_attrs = std::move(floats);
  for (NodeInfo& n : graph_.nodes)
    if (n.name == name) {
      n = std::move(info);
      return *this;
    }
  graph_.nodes.push_back(std::move(info));
  return *this;
}

TestGraph& TestGraph::remove_node(const std::string& name) {
  std::erase_if(graph_.nodes, [&name](const NodeInfo& n) { return n.name == name; });
  return *this;
}

NodeInfo& TestGraph::find(const std::string& node) {
  for (NodeInfo& n : graph_.nodes)
    if (n.name == node) return n;
  throw std::invalid_argument("test graph: no node '" + node + "'");
}

TestGraph& TestGraph::int_attr(const std::string& node, const std::string& attr, int64_t value) {
  find(node).int_attrs[attr] = value;
  return *this;
}

TestGraph& TestGraph::float_attr(const std::string& node, const std::string& attr, float value) {
  find(node).float_attrs[attr] = value;
  return *this;
}

TestGraph& TestGraph::remove_attr(const std::string& node, const std::string& attr) {
  find(node).int_attrs.erase(attr);
  return *this;
}

TestGraph& TestGraph::set_input(const std::string& node, size_t i, const std::string& value) {
  NodeInfo& n = find(node);
  if (n.inputs.size() <= i) n.inputs.resize(i + 1);
  n.inputs[i] = value;
  return *this;
}

TestGraph& TestGraph::set_output(const std::string& node, size_t i, const std::string& value) {
  find(node).outputs.at(i) = value;
  return *this;
}

TestGraph& TestGraph::output(const std::string& name) {
  graph_.outputs.insert(name);
  return *this;
}

TestGraph& TestGraph::ambiguous(const std::string& name) {
  graph_.ambiguous.insert(name);
  return *this;
}

}  // namespace onebit::test
