// SPDX-License-Identifier: Apache-2.0
#include "graph_index.h"

#include "ort_api.h"

namespace onebit {

namespace {

std::string value_name(const OrtValueInfo* info) {
  if (info == nullptr) return {};
  const char* name = nullptr;
  check(ort().GetValueInfoName(info, &name));
  return name ? name : "";
}

template <typename Count, typename Get>
std::vector<const OrtValueInfo*> value_infos(const OrtNode* node, Count count_fn, Get get_fn) {
  size_t count = 0;
  check((ort().*count_fn)(node, &count));
  std::vector<const OrtValueInfo*> infos(count);
  if (count) check((ort().*get_fn)(node, infos.data(), count));
  return infos;
}

const OrtOpAttr* attribute(const OrtNode* node, const char* name) {
  const OrtOpAttr* attr = nullptr;
  OrtStatus* status = ort().Node_GetAttributeByName(node, name, &attr);
  if (status != nullptr) {  // ORT_NOT_FOUND: the op has no such attribute
    ort().ReleaseStatus(status);
    return nullptr;
  }
  return attr;
}

}  // namespace

std::vector<std::string> input_names(const OrtNode* node) {
  std::vector<std::string> names;
  for (const OrtValueInfo* in : value_infos(node, &OrtApi::Node_GetNumInputs, &OrtApi::Node_GetInputs))
    names.push_back(value_name(in));
  return names;
}

std::vector<std::string> output_names(const OrtNode* node) {
  std::vector<std::string> names;
  for (const OrtValueInfo* out : value_infos(node, &OrtApi::Node_GetNumOutputs, &OrtApi::Node_GetOutputs))
    names.push_back(value_name(out));
  return names;
}

std::optional<int64_t> NodeInfo::int_attr(const char* attr_name) const {
  const OrtOpAttr* attr = attribute(node, attr_name);
  if (attr == nullptr) return std::nullopt;
  int64_t value = 0;
  size_t size = 0;
  check(ort().ReadOpAttr(attr, ORT_OP_ATTR_INT, &value, sizeof(value), &size));
  return value;
}

std::optional<float> NodeInfo::float_attr(const char* attr_name) const {
  const OrtOpAttr* attr = attribute(node, attr_name);
  if (attr == nullptr) return std::nullopt;
  float value = 0;
  size_t size = 0;
  check(ort().ReadOpAttr(attr, ORT_OP_ATTR_FLOAT, &value, sizeof(value), &size));
  return value;
}

std::string NodeInfo::describe() const { return op_type + " '" + name + "'"; }

GraphIndex::GraphIndex(const OrtGraph* graph) {
  size_t num_nodes = 0;
  check(ort().Graph_GetNumNodes(graph, &num_nodes));
  std::vector<const OrtNode*> nodes(num_nodes);
  if (num_nodes) check(ort().Graph_GetNodes(graph, nodes.data(), num_nodes));

  for (const OrtNode* node : nodes) {
    NodeInfo info;
    info.node = node;
    const char* text = nullptr;
    check(ort().Node_GetName(node, &text));
    info.name = text ? text : "";
    check(ort().Node_GetOperatorType(node, &text));
    info.op_type = text ? text : "";
    check(ort().Node_GetDomain(node, &text));
    info.domain = text ? text : "";
    check(ort().Node_GetSinceVersion(node, &info.since_version));
    for (const OrtValueInfo* in : value_infos(node, &OrtApi::Node_GetNumInputs, &OrtApi::Node_GetInputs)) {
      info.inputs.push_back(value_name(in));
      if (in) value_infos_[info.inputs.back()] = in;
    }
    for (const OrtValueInfo* out : value_infos(node, &OrtApi::Node_GetNumOutputs, &OrtApi::Node_GetOutputs)) {
      info.outputs.push_back(value_name(out));
      if (out) value_infos_[info.outputs.back()] = out;
    }
    const size_t index = nodes_.size();
    for (const auto& out : info.outputs)
      if (!out.empty()) producer_[out] = index;
    for (const auto& in : info.inputs)
      if (!in.empty()) consumers_[in].push_back(index);
    nodes_.push_back(std::move(info));
  }

  size_t num_outputs = 0;
  check(ort().Graph_GetNumOutputs(graph, &num_outputs));
  std::vector<const OrtValueInfo*> outputs(num_outputs);
  if (num_outputs) check(ort().Graph_GetOutputs(graph, outputs.data(), num_outputs));
  for (const OrtValueInfo* out : outputs) graph_outputs_.insert(value_name(out));

  size_t num_initializers = 0;
  check(ort().Graph_GetNumInitializers(graph, &num_initializers));
  std::vector<const OrtValueInfo*> initializers(num_initializers);
  if (num_initializers) check(ort().Graph_GetInitializers(graph, initializers.data(), num_initializers));
  for (const OrtValueInfo* init : initializers) {
    bool is_constant = false;
    check(ort().ValueInfo_IsConstantInitializer(init, &is_constant));
    if (!is_constant) continue;  // an initializer a graph input may override is not a constant
    const OrtValue* value = nullptr;
    check(ort().ValueInfo_GetInitializerValue(init, &value));
    if (value != nullptr) constants_[value_name(init)] = value;
  }
}

const NodeInfo* GraphIndex::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : &nodes_[it->second];
}

std::vector<const NodeInfo*> GraphIndex::consumers(const std::string& value) const {
  std::vector<const NodeInfo*> result;
  auto it = consumers_.find(value);
  if (it != consumers_.end())
    for (size_t i : it->second) result.push_back(&nodes_[i]);
  return result;
}

std::optional<ConstTensor> GraphIndex::constant(const std::string& value) const {
  auto it = constants_.find(value);
  if (it == constants_.end()) return std::nullopt;
  return const_tensor_of(it->second);
}

ValueType GraphIndex::type_of(const std::string& value) const {
  ValueType result;
  auto it = value_infos_.find(value);
  if (it == value_infos_.end()) return result;
  const OrtTypeInfo* type_info = nullptr;
  check(ort().GetValueInfoTypeInfo(it->second, &type_info));
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  check(ort().CastTypeInfoToTensorInfo(type_info, &tensor));
  if (tensor == nullptr) return result;
  check(ort().GetTensorElementType(tensor, &result.element));
  size_t rank = 0;
  check(ort().GetDimensionsCount(tensor, &rank));
  std::vector<int64_t> dims(rank);
  if (rank) check(ort().GetDimensions(tensor, dims.data(), rank));
  result.shape = dims;
  return result;
}

}  // namespace onebit

