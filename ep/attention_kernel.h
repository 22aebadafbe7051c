// SPDX-License-Identifier: Apache-2.0
// com.microsoft GroupQueryAttention on the EP: which nodes are claimed, and the compute function of
// one (kernels/group_query_attention.h does the arithmetic). A decoder's attention reads its whole
// KV cache at every step; ORT's CPU kernel does so at about 3 multiply-adds a cycle, which made
// attention the largest cost of an int4 decode step after the MatMuls (docs/benchmarks-log.md,
// session 18). Claimed: float32 with a KV cache (past_key/past_value), each attribute on an
// allow-list at a value the EP computes; the rest stays with ORT, with the reason in the verbose log.
#pragma once
#include <string>

#include "graph_index.h"
#include "node_kernel.h"
#include "session_context.h"

namespace onebit {

bool is_attention(const NodeInfo& node);

// Why the EP leaves this GroupQueryAttention node to ORT, or "" to claim it.
std::string attention_decline(const GraphIndex& graph, const NodeInfo& node);

// The compute function of a fused node holding one claimed GroupQueryAttention node. Its inputs
// are the node's, constants included (the fusion keeps them: the cos/sin caches are shared by every
// layer's node; a copy each would cost more than reading ORT's).
NodeKernel* compile_attention(const NodeInfo& node, const OrtNode* fused_node, SessionContext& session);

}  // namespace onebit
