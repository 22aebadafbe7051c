// SPDX-License-Identifier: Apache-2.0
// The compute function of a claimed com.microsoft GroupQueryAttention node (ep/attention_match.h
// says which are claimed; kernels/group_query_attention.h does the arithmetic). A decoder's
// attention reads its whole KV cache at every step; ORT's CPU kernel does so at about 3
// multiply-adds a cycle, which made attention the largest cost of an int4 decode step after the
// MatMuls (docs/benchmarks-log.md, session 18). Every shape, seqlens_k against the buffers and the
// positions against the rotary tables are checked before anything is read.
#pragma once
#include "graph_index.h"
#include "node_kernel.h"
#include "session_context.h"

namespace onebit {

// The compute function of a fused node holding one claimed GroupQueryAttention node. Its inputs
// are the node's, constants included (the fusion keeps them: the cos/sin caches are shared by every
// layer's node; a copy each would cost more than reading ORT's).
NodeKernel* compile_attention(const NodeInfo& node, const OrtNode* fused_node, SessionContext& session);

}  // namespace onebit
