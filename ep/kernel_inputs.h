// SPDX-License-Identifier: Apache-2.0
// What a fused kernel reads from its context: which input is the activation (and a non-constant
// B) and which carry a per-call scale or zero point, and those scalars, checked, at each call.
#pragma once
#include <onnxruntime_c_api.h>

#include <optional>
#include <string>
#include <vector>

#include "graph_index.h"
#include "group_plan.h"

namespace onebit {

struct TensorShape {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims;
};

TensorShape shape_of(const OrtValue* value);

// Kernel input indices. With drop_constant_initializers the kernel receives the fused node's
// inputs minus the constants, in the fused node's order.
struct KernelInputs {
  std::optional<size_t> x;             // none: the node's own norm computes it (ep/skip_norm_call.h)
  std::optional<size_t> x_scale;       // per-call activation scale (float, one element)
  std::optional<size_t> x_zero_point;  // per-call activation zero point (x's type, one element)
  std::optional<size_t> w;             // a non-constant B
  std::optional<size_t> b_scale;       // its per-call scale (float, one element)
  std::optional<size_t> b_zero_point;  // its per-call zero point (B's type, one element)
};

// Kernel output indices, in the fused node's order: y, and what the group's QuantizeLinear or
// DynamicQuantizeLinear produces when other nodes read it too (the quantized activation; the
// DynamicQuantizeLinear's scale and zero point).
struct KernelOutputs {
  std::optional<size_t> y;  // none: the fused node alone reads it (a SwiGLU's gate)
  std::optional<size_t> x_quantized, x_scale, x_zero_point;
};

// The index of `value` among the kernel's inputs (the fused node's, minus constants), if it is one.
std::optional<size_t> kernel_input_index(const OrtNode* fused_node, const GraphIndex& fused_graph,
                                         const std::string& value);
// The index of `value` among the fused node's outputs, if it is one.
std::optional<size_t> kernel_output_index(const OrtNode* fused_node, const std::string& value);

// Throws OrtError if a value the plan reads per call is not among the fused node's inputs. An
// activation `x` equal to `normed` (the output of the node's norm, "" without one) is not an input.
KernelInputs find_kernel_inputs(const OrtNode* fused_node, const GraphIndex& group_graph, const std::string& x,
                                const std::string& normed, const GroupPlan& plan);

// `y`: the group's output ("": none). `quantizer_outputs`: the fused QuantizeLinear's output, or the
// DynamicQuantizeLinear's three (none without one); each is a kernel output only if something
// outside reads it.
KernelOutputs find_kernel_outputs(const OrtNode* fused_node, const std::string& y,
                                  const std::vector<std::string>& quantizer_outputs, const GroupPlan& plan);

// Throws OrtError unless the groups' outputs (`outputs`, one a group) together are every output of
// the fused node, each written once.
void check_outputs_cover(const OrtNode* fused_node, const std::string& fused_name,
                         const std::vector<KernelOutputs>& outputs);

const OrtValue* kernel_input(OrtKernelContext* context, size_t index);

// An input read for a call: its data, after its type was checked against what was compiled.
struct ReadInput {
  const void* data = nullptr;
  TensorShape shape;
};

// Input `index`, of `type`, or an OrtError naming `owner` and `role` ("MatMul 'q'", "activation").
ReadInput read_input(OrtKernelContext* context, size_t index, ONNXTensorElementDataType type, const std::string& owner,
                     const std::string& role);
// The data of output `index`, allocated by ORT with `dims` (or the caller's buffer it binds).
void* kernel_output(OrtKernelContext* context, size_t index, const std::vector<int64_t>& dims);

// The one float of input `index` (a scale), or an OrtError naming the group and `role`
// (e.g. "activation scale 'x_scale'").
float read_scale(OrtKernelContext* context, size_t index, const GroupPlan& plan, const std::string& role);

// The one int8/uint8 of input `index`, of `type`, widened.
int32_t read_zero_point(OrtKernelContext* context, size_t index, QType type, const GroupPlan& plan,
                        const std::string& role);

}  // namespace onebit
