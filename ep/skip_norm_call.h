// SPDX-License-Identifier: Apache-2.0
// The SkipSimplifiedLayerNormalization a fused node runs before its groups (ep/skip_norm_match.h):
// read from the fused graph at compile (gamma and bias copied), then at each call its input and
// skip checked as ORT checks them (errors name the node), the rows normalized into scratch the
// groups take as their activation, and the sum of input and skip written where others read it.
#pragma once
#include <onnxruntime_c_api.h>

#include <optional>
#include <string>
#include <vector>

#include "engine/host_leg.h"
#include "engine/thread_reused.h"
#include "graph_index.h"

namespace onebit {

struct SkipNormKernel {
  std::string name;            // "SkipSimplifiedLayerNormalization 'n'" for messages
  std::string normed;          // its output: the groups' activation
  size_t input = 0, skip = 0;  // kernel input indices
  std::optional<size_t> sum;   // kernel output index of input_skip_bias_sum, when read outside the node
  std::vector<float> gamma, bias;
  float epsilon = 0;
};

// The normalized rows of a call: the groups' activation.
struct NormedActivation {
  const float* data = nullptr;
  std::vector<int64_t> dims;
};

SkipNormKernel compile_skip_norm(const NodeInfo& node, const GraphIndex& fused_graph, const OrtNode* fused_node);

// Runs the norm over the call's rows (split over `tasks`), the normalized rows into `scratch`.
NormedActivation run_skip_norm(const SkipNormKernel& norm, OrtKernelContext* context, const TaskRunner& tasks,
                               UninitBuffer<float>& scratch);

}  // namespace onebit
