// SPDX-License-Identifier: Apache-2.0
#include "attention_match.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

#include "ort_api.h"

namespace onebit {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The attributes the EP computes, with the values it computes them at: the schema's defaults (which
// ORT hands over for attributes a model leaves out) or, for the ones it implements, any value it
// can take. Anything else — a sliding window, a soft cap, smooth softmax, bidirectional attention,
// a quantized cache, or an attribute a later schema adds — is declined: a new attribute is left to
// ORT rather than ignored.
std::string attribute_decline(const NodeInfo& node) {
  using IntRule = bool (*)(int64_t);
  static const std::map<std::string, IntRule> ints = {
      {"num_heads", [](int64_t) { return true; }},  // checked with kv_num_heads
      {"kv_num_heads", [](int64_t) { return true; }},
      {"do_rotary", [](int64_t v) { return v == 0 || v == 1; }},
      {"rotary_interleaved", [](int64_t v) { return v == 0 || v == 1; }},
      {"causal", [](int64_t v) { return v == 1; }},
      {"local_window_size", [](int64_t v) { return v == -1; }},
      {"smooth_softmax", [](int64_t v) { return v == -1 || v == 0; }},
      {"qk_output", [](int64_t v) { return v == 0; }},
      {"sliding_window_cache", [](int64_t v) { return v == 0; }},
      {"kv_cache_bit_width", [](int64_t v) { return v == 0; }},
  };
  for (const auto& [name, value] : node.int_attrs)
    if (auto rule = ints.find(name); rule == ints.end() || !rule->second(value))
      return name + "=" + str(value) + " is not computed by the EP";
  for (const auto& [name, value] : node.float_attrs) {
    const bool computed = (name == "scale" && std::isfinite(value)) || (name == "softcap" && value == 0.0f) ||
                          (name == "qk_norm_epsilon" && value == 1e-6f);
    if (!computed) return name + "=" + std::to_string(value) + " is not computed by the EP";
  }
  for (const auto& [name, value] : node.string_attrs)
    if (!((name == "k_quant_type" || name == "v_quant_type") && value == "NONE"))
      return name + "=" + value + " is not computed by the EP";
  return "";
}

}  // namespace

bool is_attention(const NodeInfo& node) {
  return node.domain == "com.microsoft" && node.op_type == "GroupQueryAttention";
}

std::string attention_decline(const GraphIndex& graph, const NodeInfo& node) {
  const int64_t heads = node.int_attr("num_heads").value_or(0), kv_heads = node.int_attr("kv_num_heads").value_or(0);
  constexpr int64_t kMaxHeads = std::numeric_limits<int32_t>::max();  // ORT's kernel keeps them as int
  if (heads <= 0 || kv_heads <= 0 || heads > kMaxHeads || kv_heads > kMaxHeads || heads % kv_heads != 0)
    return "num_heads " + str(heads) + " is not a positive multiple of kv_num_heads " + str(kv_heads) +
           " within 32 bits";
  if (std::string unknown = attribute_decline(node); !unknown.empty()) return unknown;
  const int64_t rotary = node.int_attr("do_rotary").value_or(0);
  for (size_t i = kInputs; i < node.inputs.size(); ++i)
    if (!node.inputs[i].empty())
      return "input " + str(static_cast<int64_t>(i)) + " (position ids, attention bias or head sink) is given";
  for (size_t i = kOutputs; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) return "output " + str(static_cast<int64_t>(i)) + " (the QK scores) is asked for";
  if (node.outputs.size() < kOutputs || node.outputs[PresentKey].empty() || node.outputs[PresentValue].empty())
    return "no present_key/present_value outputs";
  // An output nothing reads is not an output of the fused node ORT hands over: the kernel would
  // have nowhere to write it (the present caches hold the rows it attends to).
  for (size_t i = 0; i < kOutputs; ++i)
    if (!graph.is_graph_output(node.outputs[i]) && graph.consumers(node.outputs[i]).empty())
      return "output '" + node.outputs[i] + "' is read by nothing";
  if (node.input(PastKey).empty() || node.input(PastValue).empty()) return "no past_key/past_value (no KV cache)";
  if (node.input(Key).empty() != node.input(Value).empty()) return "key without value, or value without key";
  if (!node.input(Key).empty())
    if (const auto dims = graph.type_of(node.input(Key)).shape; dims && dims->size() == 3 && (*dims)[1] == 0)
      return "key and value have no rows (attention to the cache alone)";
  if (rotary == 1 && (node.input(Cos).empty() || node.input(Sin).empty()))
    return "do_rotary=1 without cos_cache and sin_cache";
  for (size_t i = 0; i < kInputs; ++i) {
    const std::string value = node.input(i);
    if (value.empty()) continue;
    if (graph.is_ambiguous(value)) return "input '" + value + "' names more than one value";
    const auto type = graph.type_of(value).element;
    if (type != attention_input_type(i))
      return std::string(kAttentionInputNames[i]) + " is " + type_name(type) +
             ": the EP computes float32 attention only";
  }
  for (size_t i = 0; i < kOutputs; ++i)
    if (graph.is_ambiguous(node.outputs[i])) return "output '" + node.outputs[i] + "' names more than one value";
  return "";
}

}  // namespace onebit
