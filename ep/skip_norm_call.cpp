// SPDX-License-Identifier: Apache-2.0
#include "skip_norm_call.h"

#include <algorithm>

#include "engine/dims.h"
#include "kernel_inputs.h"
#include "kernels/skip_rms_norm.h"
#include "ort_api.h"
#include "skip_norm_match.h"

namespace onebit {

namespace {

std::vector<float> constant_floats(const GraphIndex& graph, const std::string& value) {
  const ConstTensor c = *graph.constant(value);  // skip_norm_decline checked it is a float vector
  const float* data = static_cast<const float*>(c.data);
  return std::vector<float>(data, data + c.count());
}

// A row of `hidden` floats per product of the leading dims; skip as ORT's kernel accepts it: the
// input's shape, or for a 3-D input [B, S, H] also [k, S, H] (any k) or [S, H]; row r adds skip's
// row r modulo its rows, as ORT's does. Returns skip's rows.
size_t checked_skip_rows(const SkipNormKernel& norm, const std::vector<int64_t>& input,
                         const std::vector<int64_t>& skip) {
  auto fail = [&](const std::string& what) {
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + norm.name + ": " + what);
  };
  const int64_t hidden = static_cast<int64_t>(norm.gamma.size());
  if (input.size() != 2 && input.size() != 3)
    fail("input " + shape_string(input) + " is expected to have 2 or 3 dimensions");
  if (input.back() != hidden)
    fail("input " + shape_string(input) + ": its last dimension is not gamma's " + std::to_string(hidden));
  const bool same = skip == input;
  const bool broadcast = input.size() == 3 && (skip.size() == 2 || skip.size() == 3) &&
                         skip[skip.size() - 2] == input[1] && skip.back() == input[2];
  if (!same && !broadcast)
    fail("skip " + shape_string(skip) + " is neither input's shape " + shape_string(input) +
         " nor, for a 3-D input, [k, S, H] or [S, H]");
  const size_t rows = element_count(skip) / std::max<size_t>(static_cast<size_t>(hidden), 1);
  if (rows == 0 && element_count(input) != 0) fail("skip " + shape_string(skip) + " has no rows to add");
  return rows;
}

struct NormJob {
  const SkipNormCall* call;
  size_t rows_per_task, rows;
  void run(size_t task) const {
    skip_rms_norm(*call, task * rows_per_task, std::min(rows, (task + 1) * rows_per_task));
  }
};

}  // namespace

SkipNormKernel compile_skip_norm(const NodeInfo& node, const GraphIndex& fused_graph, const OrtNode* fused_node) {
  SkipNormKernel norm;
  norm.name = node.describe();
  norm.normed = node.outputs.at(NormOut);
  const std::optional<size_t> input = kernel_input_index(fused_node, fused_graph, node.inputs.at(NormInput));
  const std::optional<size_t> skip = kernel_input_index(fused_node, fused_graph, node.inputs.at(NormSkip));
  if (!input || !skip)
    throw OrtError(ORT_FAIL, "onebit: " + norm.name + ": input or skip is not an input of the fused node");
  norm.input = *input;
  norm.skip = *skip;
  if (node.outputs.size() > NormSum && !node.outputs[NormSum].empty())
    norm.sum = kernel_output_index(fused_node, node.outputs[NormSum]);
  norm.gamma = constant_floats(fused_graph, node.inputs.at(NormGamma));
  if (!node.input(NormBias).empty()) norm.bias = constant_floats(fused_graph, node.input(NormBias));
  norm.epsilon = node.float_attr("epsilon").value_or(1e-12f);  // the schema's default
  return norm;
}

NormedActivation run_skip_norm(const SkipNormKernel& norm, OrtKernelContext* context, const TaskRunner& tasks,
                               UninitBuffer<float>& scratch) {
  const ReadInput input = read_input(context, norm.input, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, norm.name, "input");
  const ReadInput skip = read_input(context, norm.skip, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, norm.name, "skip");
  const std::vector<int64_t>& dims = input.shape.dims;
  SkipNormCall call;
  call.skip_rows = checked_skip_rows(norm, dims, skip.shape.dims);
  call.hidden = norm.gamma.size();
  const size_t rows = element_count(dims) / std::max<size_t>(call.hidden, 1);
  call.input = static_cast<const float*>(input.data);
  call.skip = static_cast<const float*>(skip.data);
  call.bias = norm.bias.empty() ? nullptr : norm.bias.data();
  call.gamma = norm.gamma.data();
  call.epsilon = norm.epsilon;
  call.sum = norm.sum ? static_cast<float*>(kernel_output(context, *norm.sum, dims)) : nullptr;
  call.out = scratch.get(rows * call.hidden);
  // A task a few rows: a prompt's rows spread over the threads, a decode row runs here.
  constexpr size_t kRowsPerTask = 8;
  NormJob job{&call, kRowsPerTask, rows};
  if (rows > 0) run_tasks(job, static_cast<int64_t>((rows + kRowsPerTask - 1) / kRowsPerTask), tasks);
  return {call.out, dims};
}

}  // namespace onebit
