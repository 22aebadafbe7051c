// SPDX-License-Identifier: Apache-2.0
#include "kernel_inputs.h"

#include <algorithm>

#include "ort_api.h"

namespace onebit {

TensorShape shape_of(const OrtValue* value) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  check(ort().GetTensorTypeAndShape(value, &info));
  TensorShape s;
  size_t rank = 0;
  OrtStatus* status = ort().GetTensorElementType(info, &s.type);
  if (status == nullptr) status = ort().GetDimensionsCount(info, &rank);
  s.dims.resize(rank);
  if (status == nullptr && rank) status = ort().GetDimensions(info, s.dims.data(), rank);
  ort().ReleaseTensorTypeAndShapeInfo(info);
  check(status);
  return s;
}

std::optional<size_t> kernel_input_index(const OrtNode* fused_node, const GraphIndex& fused_graph,
                                         const std::string& value) {
  size_t index = 0;
  for (const std::string& name : input_names(fused_node)) {
    if (name.empty() || fused_graph.constant(name)) continue;
    if (name == value) return index;
    ++index;
  }
  return std::nullopt;
}

std::optional<size_t> kernel_output_index(const OrtNode* fused_node, const std::string& value) {
  const std::vector<std::string> names = output_names(fused_node);
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == value) return i;
  return std::nullopt;
}

KernelInputs find_kernel_inputs(const OrtNode* fused_node, const GraphIndex& group_graph, const std::string& x,
                                const std::string& normed, const GroupPlan& plan) {
  auto index_of = [&](const std::string& name) -> size_t {
    if (std::optional<size_t> i = kernel_input_index(fused_node, group_graph, name)) return *i;
    throw OrtError(ORT_FAIL, "onebit: " + plan.name + ": '" + name + "' is not an input of the fused node");
  };
  KernelInputs inputs;
  if (x != normed) inputs.x = index_of(x);
  if (!plan.x_scale_input.empty()) inputs.x_scale = index_of(plan.x_scale_input);
  if (!plan.x_zero_point_input.empty()) inputs.x_zero_point = index_of(plan.x_zero_point_input);
  if (plan.b_per_call) inputs.w = index_of(plan.b_name);
  if (!plan.b_scale_input.empty()) inputs.b_scale = index_of(plan.b_scale_input);
  if (!plan.b_zero_point_input.empty()) inputs.b_zero_point = index_of(plan.b_zero_point_input);
  return inputs;
}

KernelOutputs find_kernel_outputs(const OrtNode* fused_node, const std::string& y,
                                  const std::vector<std::string>& quantizer_outputs, const GroupPlan& plan) {
  auto index_of = [&](const std::string& name) { return kernel_output_index(fused_node, name); };
  KernelOutputs outputs;
  if (!y.empty()) {
    outputs.y = index_of(y);
    if (!outputs.y)
      throw OrtError(ORT_FAIL, "onebit: " + plan.name + ": '" + y + "' is not an output of the fused node");
  }
  std::optional<size_t>* slots[] = {&outputs.x_quantized, &outputs.x_scale, &outputs.x_zero_point};
  for (size_t i = 0; i < quantizer_outputs.size() && i < 3; ++i) *slots[i] = index_of(quantizer_outputs[i]);
  return outputs;
}

void check_outputs_cover(const OrtNode* fused_node, const std::string& fused_name,
                         const std::vector<KernelOutputs>& outputs) {
  std::vector<int> writers(output_names(fused_node).size(), 0);
  size_t written = 0;
  for (const KernelOutputs& o : outputs)
    for (const std::optional<size_t>& index : {o.y, o.x_quantized, o.x_scale, o.x_zero_point})
      if (index) ++writers.at(*index), ++written;
  if (!std::all_of(writers.begin(), writers.end(), [](int w) { return w == 1; }))
    throw OrtError(ORT_FAIL, "onebit: fused node '" + fused_name + "' has " + std::to_string(writers.size()) +
                                 " outputs; its groups write " + std::to_string(written));
}

const OrtValue* kernel_input(OrtKernelContext* context, size_t index) {
  const OrtValue* value = nullptr;
  check(ort().KernelContext_GetInput(context, index, &value));
  return value;
}

ReadInput read_input(OrtKernelContext* context, size_t index, ONNXTensorElementDataType type, const std::string& owner,
                     const std::string& role) {
  const OrtValue* value = kernel_input(context, index);
  ReadInput in{nullptr, shape_of(value)};
  if (in.shape.type != type)
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + owner + ": " + role + " of shape " + shape_string(in.shape.dims) +
                                             " " + type_name(in.shape.type) + " has the wrong type; compiled for " +
                                             type_name(type));
  check(ort().GetTensorData(value, &in.data));
  return in;
}

void* kernel_output(OrtKernelContext* context, size_t index, const std::vector<int64_t>& dims) {
  OrtValue* value = nullptr;
  check(ort().KernelContext_GetOutput(context, index, dims.data(), dims.size(), &value));
  void* data = nullptr;
  check(ort().GetTensorMutableData(value, &data));
  return data;
}

namespace {

// The data of a one-element tensor of `type`, or an OrtError naming what and where.
const void* scalar_data(OrtKernelContext* context, size_t index, ONNXTensorElementDataType type, const GroupPlan& plan,
                        const std::string& role) {
  const OrtValue* value = kernel_input(context, index);
  const TensorShape s = shape_of(value);
  int64_t count = 1;
  for (int64_t d : s.dims) count *= d;
  if (s.type != type || count != 1)
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + plan.name + ": " + role + " is " + type_name(s.type) + " " +
                                             shape_string(s.dims) + "; expected one " + type_name(type));
  const void* data = nullptr;
  check(ort().GetTensorData(value, &data));
  return data;
}

}  // namespace

float read_scale(OrtKernelContext* context, size_t index, const GroupPlan& plan, const std::string& role) {
  return *static_cast<const float*>(scalar_data(context, index, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, plan, role));
}

int32_t read_zero_point(OrtKernelContext* context, size_t index, QType type, const GroupPlan& plan,
                        const std::string& role) {
  const void* data = scalar_data(context, index, element_type_of(type), plan, role);
  return type == QType::Int8 ? *static_cast<const int8_t*>(data) : *static_cast<const uint8_t*>(data);
}

}  // namespace onebit
