// SPDX-License-Identifier: Apache-2.0
// Which com.microsoft GroupQueryAttention nodes the EP computes (ep/attention_kernel.h): float32
// with a KV cache (past_key/past_value), each attribute on an allow-list at a value the EP
// computes; the rest stays with ORT, with the reason in the verbose log.
#pragma once
#include <cstddef>
#include <string>

#include "graph_index.h"

namespace onebit {

// The node's inputs and outputs by their position in the operator's schema.
enum AttentionInput : size_t { Query, Key, Value, PastKey, PastValue, SeqlensK, TotalLength, Cos, Sin, kInputs };
enum AttentionOutput : size_t { Out, PresentKey, PresentValue, kOutputs };

inline constexpr const char* kAttentionInputNames[kInputs] = {
    "query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"};

// The element type the EP computes input `input` in: int32 lengths, float32 for the rest.
inline ONNXTensorElementDataType attention_input_type(size_t input) {
  return input == SeqlensK || input == TotalLength ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32
                                                   : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}

bool is_attention(const NodeInfo& node);

// Why the EP leaves this GroupQueryAttention node to ORT, or "" to claim it.
std::string attention_decline(const GraphIndex& graph, const NodeInfo& node);

}  // namespace onebit
