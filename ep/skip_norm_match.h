// SPDX-License-Identifier: Apache-2.0
// A com.microsoft SkipSimplifiedLayerNormalization whose normalized output only the groups of one
// fused node read as their activation (an LLM's norm before q/k/v, gate/up or the output
// projection) joins that fused node: it runs first there (ep/skip_norm_call.h), bit for bit as ORT's
// kernel, and ORT dispatches one operator less. Float32 input and skip, constant gamma and bias,
// mean and inv_std_var read by nothing; its sum of input and skip may be read anywhere.
#pragma once
#include <cstddef>
#include <string>

#include "graph_index.h"

namespace onebit {

enum SkipNormInput : size_t { NormInput, NormSkip, NormGamma, NormBias };
enum SkipNormOutput : size_t { NormOut, NormMean, NormInvStdVar, NormSum };

bool is_skip_norm(const NodeInfo& node);

// Why this node cannot join a fused node whatever reads it, or "".
std::string skip_norm_decline(const GraphIndex& graph, const NodeInfo& node);

}  // namespace onebit
