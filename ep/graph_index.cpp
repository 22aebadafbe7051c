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

// The node's int, float and string attributes; other kinds (tensors, graphs, lists) are not read.
void read_attributes(NodeInfo& info) {
  size_t count = 0;
  check(ort().Node_GetNumAttributes(info.node, &count));
  std::vector<const OrtOpAttr*> attrs(count);
  if (count) check(ort().Node_GetAttributes(info.node, attrs.data(), count));
  for (const OrtOpAttr* attr : attrs) {
    OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
    OrtStatus* status = ort().OpAttr_GetType(attr, &type);
    if (status != nullptr) {  // a kind the C API does not name (a sparse tensor): not one we read
      ort().ReleaseStatus(status);
      continue;
    }
    if (type != ORT_OP_ATTR_INT && type != ORT_OP_ATTR_FLOAT && type != ORT_OP_ATTR_STRING) continue;
    const char* name = nullptr;
    check(ort().OpAttr_GetName(attr, &name));
    size_t size = 0;
    if (type == ORT_OP_ATTR_INT) {
      check(ort().ReadOpAttr(attr, type, &info.int_attrs[name], sizeof(int64_t), &size));
    } else if (type == ORT_OP_ATTR_FLOAT) {
      check(ort().ReadOpAttr(attr, type, &info.float_attrs[name], sizeof(float), &size));
    } else {  // asked with no room first: ORT answers with the size it needs
      if (OrtStatus* too_small = ort().ReadOpAttr(attr, type, nullptr, 0, &size)) ort().ReleaseStatus(too_small);
      std::string& value = info.string_attrs[name];
      value.resize(size);
      if (size) check(ort().ReadOpAttr(attr, type, value.data(), size, &size));
      value.resize(size);
    }
  }
}

ValueType value_type(const OrtValueInfo* info) {
  ValueType result;
  const OrtTypeInfo* type_info = nullptr;
  OrtStatus* status = ort().GetValueInfoTypeInfo(info, &type_info);
  if (status != nullptr) {  // a value without type information: unknown, declined if a group needs it
    ort().ReleaseStatus(status);
    return result;
  }
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

std::optional<int64_t> NodeInfo::int_attr(const char* attr) const {
  auto it = int_attrs.find(attr);
  return it == int_attrs.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

std::optional<float> NodeInfo::float_attr(const char* attr) const {
  auto it = float_attrs.find(attr);
  return it == float_attrs.end() ? std::nullopt : std::optional<float>(it->second);
}

std::string NodeInfo::describe() const { return op_type + " '" + name + "'"; }

GraphDescription describe_graph(const OrtGraph* graph) {
  GraphDescription d;
  size_t num_nodes = 0;
  check(ort().Graph_GetNumNodes(graph, &num_nodes));
  std::vector<const OrtNode*> nodes(num_nodes);
  if (num_nodes) check(ort().Graph_GetNodes(graph, nodes.data(), num_nodes));

  // Each value's type, read once: a value is an output of one node and an input of others. ORT
  // hands out one OrtValueInfo per value, so one name seen with two is two values cut to one name.
  std::map<std::string, const OrtValueInfo*> value_of;
  auto note_value = [&d, &value_of](const std::string& name, const OrtValueInfo* info) {
    if (info == nullptr || name.empty()) return;
    if (const auto [seen, first] = value_of.try_emplace(name, info); !first && seen->second != info)
      d.ambiguous.insert(name);
  };
  auto note_type = [&d, &note_value](const std::string& name, const OrtValueInfo* info) {
    note_value(name, info);
    if (info != nullptr && !d.types.count(name)) d.types[name] = value_type(info);
  };
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
      note_type(info.inputs.back(), in);
    }
    for (const OrtValueInfo* in :
         value_infos(node, &OrtApi::Node_GetNumImplicitInputs, &OrtApi::Node_GetImplicitInputs))
      info.implicit_inputs.push_back(value_name(in));
    for (const OrtValueInfo* out : value_infos(node, &OrtApi::Node_GetNumOutputs, &OrtApi::Node_GetOutputs)) {
      info.outputs.push_back(value_name(out));
      note_type(info.outputs.back(), out);
    }
    read_attributes(info);
    d.nodes.push_back(std::move(info));
  }

  size_t num_outputs = 0;
  check(ort().Graph_GetNumOutputs(graph, &num_outputs));
  std::vector<const OrtValueInfo*> outputs(num_outputs);
  if (num_outputs) check(ort().Graph_GetOutputs(graph, outputs.data(), num_outputs));
  for (const OrtValueInfo* out : outputs) {
    d.outputs.insert(value_name(out));
    note_value(value_name(out), out);
  }

  size_t num_initializers = 0;
  check(ort().Graph_GetNumInitializers(graph, &num_initializers));
  std::vector<const OrtValueInfo*> initializers(num_initializers);
  if (num_initializers) check(ort().Graph_GetInitializers(graph, initializers.data(), num_initializers));
  for (const OrtValueInfo* init : initializers) {
    note_value(value_name(init), init);
    bool is_constant = false;
    check(ort().ValueInfo_IsConstantInitializer(init, &is_constant));
    if (!is_constant) continue;  // an initializer a graph input may override is not a constant
    const OrtValue* value = nullptr;
    check(ort().ValueInfo_GetInitializerValue(init, &value));
    if (value != nullptr) d.constants[value_name(init)] = const_tensor_of(value);
  }
  return d;
}

GraphIndex::GraphIndex(GraphDescription graph) : graph_(std::move(graph)) {
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    for (const auto& out : graph_.nodes[i].outputs)
      if (!out.empty()) producer_[out] = i;
    for (const auto& in : graph_.nodes[i].inputs)
      if (!in.empty()) consumers_[in].push_back(i);
    for (const auto& in : graph_.nodes[i].implicit_inputs)
      if (!in.empty()) consumers_[in].push_back(i);
  }
}

const NodeInfo* GraphIndex::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : &graph_.nodes[it->second];
}

std::vector<const NodeInfo*> GraphIndex::consumers(const std::string& value) const {
  std::vector<const NodeInfo*> result;
  auto it = consumers_.find(value);
  if (it != consumers_.end())
    for (size_t i : it->second) result.push_back(&graph_.nodes[i]);
  return result;
}

std::optional<ConstTensor> GraphIndex::constant(const std::string& value) const {
  auto it = graph_.constants.find(value);
  if (it == graph_.constants.end()) return std::nullopt;
  return it->second;
}

ValueType GraphIndex::type_of(const std::string& value) const {
  auto it = graph_.types.find(value);
  return it == graph_.types.end() ? ValueType{} : it->second;
}

bool is_onnx(const NodeInfo& node) { return node.domain.empty() || node.domain == "ai.onnx"; }

bool is_op(const NodeInfo* node, const char* op_type) {
  return node != nullptr && is_onnx(*node) && node->op_type == op_type;
}

const NodeInfo* sole_consumer(const GraphIndex& g, const std::string& value) {
  auto consumers = g.consumers(value);
  if (consumers.size() != 1 || g.is_graph_output(value)) return nullptr;
  return consumers.front();
}

}  // namespace onebit
