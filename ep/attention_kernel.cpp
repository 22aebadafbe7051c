// SPDX-License-Identifier: Apache-2.0
#include "attention_kernel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "engine/counters.h"
#include "kernel_inputs.h"
#include "kernels/group_query_attention.h"

namespace onebit {

namespace {

// The node's inputs and outputs by their position in the operator's schema.
enum Input : size_t { Query, Key, Value, PastKey, PastValue, SeqlensK, TotalLength, Cos, Sin, kInputs };
enum Output : size_t { Out, PresentKey, PresentValue, kOutputs };

constexpr const char* kInputNames[kInputs] = {
    "query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"};

std::string str(int64_t v) { return std::to_string(v); }

std::string dims_text(const std::vector<int64_t>& dims) { return shape_string(dims); }

struct AttentionKernel : NodeKernel {
  AttentionKernel(const NodeInfo& node, const OrtNode* fused_node, SessionContext& session);

  std::string name;  // "GroupQueryAttention 'layers.0.attention'" for messages
  size_t heads = 0, kv_heads = 0;
  bool rotary = false, interleaved = false;
  float scale = 0;
  std::optional<size_t> inputs[kInputs];  // index among the fused node's inputs
  size_t outputs[kOutputs] = {};
  SessionContext& session;

  void compute(OrtKernelContext* context) const;
  [[noreturn]] void fail(const std::string& what) const {
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + name + ": " + what);
  }
};

struct Tensor {
  const OrtValue* value = nullptr;
  TensorShape shape;
  const void* data = nullptr;
};

OrtStatus* ORT_API_CALL create_state(OrtNodeComputeInfo* self, OrtNodeComputeContext*, void** state) noexcept {
  *state = self;
  return nullptr;
}

void ORT_API_CALL release_state(OrtNodeComputeInfo*, void*) noexcept {}

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo* self, void*, OrtKernelContext* context) noexcept {
  return guarded([&] { static_cast<const AttentionKernel&>(static_cast<NodeKernel&>(*self)).compute(context); });
}

AttentionKernel::AttentionKernel(const NodeInfo& node, const OrtNode* fused_node, SessionContext& s)
    : name(node.describe()), session(s) {
  CreateState = create_state;
  Compute = onebit::compute;
  ReleaseState = release_state;
  heads = static_cast<size_t>(node.int_attr("num_heads").value_or(0));
  kv_heads = static_cast<size_t>(node.int_attr("kv_num_heads").value_or(0));
  rotary = node.int_attr("do_rotary").value_or(0) == 1;
  interleaved = node.int_attr("rotary_interleaved").value_or(0) == 1;
  scale = node.float_attr("scale").value_or(0.0f);
  const std::vector<std::string> fused_inputs = input_names(fused_node);
  for (size_t i = 0; i < kInputs; ++i) {
    const std::string value = node.input(i);
    if (value.empty()) continue;
    const auto at = std::find(fused_inputs.begin(), fused_inputs.end(), value);
    if (at == fused_inputs.end())
      throw OrtError(ORT_FAIL, "onebit: " + name + ": '" + value + "' is not an input of its fused node");
    inputs[i] = static_cast<size_t>(at - fused_inputs.begin());
  }
  const std::vector<std::string> fused_outputs = output_names(fused_node);
  for (size_t i = 0; i < kOutputs; ++i) {
    const auto at = std::find(fused_outputs.begin(), fused_outputs.end(), node.outputs.at(i));
    if (at == fused_outputs.end())
      throw OrtError(ORT_FAIL, "onebit: " + name + ": '" + node.outputs[i] + "' is not an output of its fused node");
    outputs[i] = static_cast<size_t>(at - fused_outputs.begin());
  }
}

void AttentionKernel::compute(OrtKernelContext* context) const {
  Tensor in[kInputs];
  for (size_t i = 0; i < kInputs; ++i) {
    if (!inputs[i]) continue;
    in[i].value = kernel_input(context, *inputs[i]);
    in[i].shape = shape_of(in[i].value);
    const auto wanted =
        i == SeqlensK || i == TotalLength ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    if (in[i].shape.type != wanted)
      fail(std::string(kInputNames[i]) + " is " + type_name(in[i].shape.type) + "; " + type_name(wanted) + " expected");
    check(ort().GetTensorData(in[i].value, &in[i].data));
  }
  AttentionShape shape;
  const std::vector<int64_t>& q = in[Query].shape.dims;
  if (q.size() != 3) fail("query " + dims_text(q) + " is not [batch, sequence, hidden]");
  shape.batch = static_cast<size_t>(q[0]);
  shape.rows = static_cast<size_t>(q[1]);
  shape.heads = heads;
  shape.kv_heads = kv_heads;
  shape.packed_qkv = !inputs[Key];
  const size_t width = shape.packed_qkv ? heads + 2 * kv_heads : heads;
  if (q[2] <= 0 || static_cast<size_t>(q[2]) % width != 0)
    fail("query " + dims_text(q) + ": its last dimension is not a multiple of " + str(width) + " heads");
  shape.head_size = static_cast<size_t>(q[2]) / width;
  const int64_t b = q[0], s = q[1], d = static_cast<int64_t>(shape.head_size);
  if (s == 0) fail("query " + dims_text(q) + " has no rows");
  if (!shape.packed_qkv)
    for (Input i : {Key, Value})
      if (in[i].shape.dims != std::vector<int64_t>{b, s, static_cast<int64_t>(kv_heads) * d})
        fail(std::string(kInputNames[i]) + " " + dims_text(in[i].shape.dims) + " does not match query " + dims_text(q) +
             " with " + str(kv_heads) + " KV heads");
  const std::vector<int64_t>& past = in[PastKey].shape.dims;
  if (past.size() != 4 || past[0] != b || past[1] != static_cast<int64_t>(kv_heads) || past[3] != d ||
      in[PastValue].shape.dims != past)
    fail("past_key " + dims_text(past) + " and past_value " + dims_text(in[PastValue].shape.dims) + " are not both [" +
         str(b) + ", " + str(kv_heads) + ", rows, " + str(d) + "]");
  if (in[SeqlensK].shape.dims != std::vector<int64_t>{b})
    fail("seqlens_k " + dims_text(in[SeqlensK].shape.dims) + " is not [" + str(b) + "]");
  size_t total_elements = 1;
  for (int64_t dim : in[TotalLength].shape.dims) total_elements *= static_cast<size_t>(dim);
  if (total_elements != 1) fail("total_sequence_length " + dims_text(in[TotalLength].shape.dims) + " is not one value");
  const int64_t total = *static_cast<const int32_t*>(in[TotalLength].data);
  shape.past_rows = static_cast<size_t>(past[2]);
  if (total < s || total < 1) fail("total_sequence_length " + str(total) + " is below the query's " + str(s) + " rows");
  shape.present_rows = std::max(static_cast<size_t>(total), shape.past_rows);
  shape.first_prompt = total == s;
  if (!shape.first_prompt && s > 1 && b != 1)
    fail("a prompt of " + str(s) + " rows after earlier ones needs batch 1, not " + str(b));
  shape.scale = scale != 0 ? scale : 1.0f / std::sqrt(static_cast<float>(d));

  AttentionCall call;
  call.query = static_cast<const float*>(in[Query].data);
  call.key = static_cast<const float*>(in[Key].data);
  call.value = static_cast<const float*>(in[Value].data);
  call.past_key = static_cast<const float*>(in[PastKey].data);
  call.past_value = static_cast<const float*>(in[PastValue].data);
  call.seqlens_k = static_cast<const int32_t*>(in[SeqlensK].data);
  size_t positions = 0;
  if (rotary) {
    if (!inputs[Cos] || !inputs[Sin]) fail("do_rotary=1 without cos_cache and sin_cache");
    const std::vector<int64_t>&cos = in[Cos].shape.dims, &sin = in[Sin].shape.dims;
    if (cos.size() != 2 || sin.size() != 2 || sin[1] != cos[1] || 2 * cos[1] > d)
      fail("cos_cache " + dims_text(cos) + " and sin_cache " + dims_text(sin) + " are not both [positions, at most " +
           str(d / 2) + "]");
    shape.rotary_dim = static_cast<size_t>(2 * cos[1]);
    shape.rotary_interleaved = interleaved;
    positions = static_cast<size_t>(std::min(cos[0], sin[0]));
    call.cos = static_cast<const float*>(in[Cos].data);
    call.sin = static_cast<const float*>(in[Sin].data);
  }
  // Every batch entry's rows must lie inside the buffers and the rotary tables: checked before any
  // is read.
  for (int64_t e = 0; e < b; ++e) {
    const int64_t valid = int64_t{call.seqlens_k[e]} + 1;
    const int64_t past_rows = shape.first_prompt ? 0 : valid - s;
    const bool fits = shape.first_prompt ? valid >= 1 && valid <= s
                                         : past_rows >= 0 && valid <= static_cast<int64_t>(shape.present_rows) &&
                                               past_rows <= static_cast<int64_t>(shape.past_rows);
    if (!fits)
      fail("seqlens_k[" + str(e) + "] = " + str(call.seqlens_k[e]) + " does not fit " + str(s) +
           " new rows, total_sequence_length " + str(total) + " and a past of " + str(past[2]) + " rows");
    if (rotary && static_cast<size_t>(past_rows + s) > positions)
      fail("position " + str(past_rows + s - 1) + " is past the " + str(positions) +
           " rows of cos_cache and sin_cache");
  }

  const std::vector<int64_t> out_dims{b, s, static_cast<int64_t>(heads) * d};
  const std::vector<int64_t> present_dims{b, static_cast<int64_t>(kv_heads), static_cast<int64_t>(shape.present_rows),
                                          d};
  auto output = [&](size_t index, const std::vector<int64_t>& dims) {
    OrtValue* value = nullptr;
    check(ort().KernelContext_GetOutput(context, index, dims.data(), dims.size(), &value));
    void* data = nullptr;
    check(ort().GetTensorMutableData(value, &data));
    return static_cast<float*>(data);
  };
  call.output = output(outputs[Out], out_dims);
  call.present_key = output(outputs[PresentKey], present_dims);
  call.present_value = output(outputs[PresentValue], present_dims);

  struct Job {
    const AttentionShape* shape;
    const AttentionCall* call;
  } job{&shape, &call};
  check(ort().KernelContext_ParallelFor(
      context,
      [](void* p, size_t task) {
        const Job& j = *static_cast<const Job*>(p);
        attend(*j.shape, *j.call, task);
      },
      attention_tasks(shape), 0, &job));
  count(session.counters, Counter::AttentionRuns);
}

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
    const bool computed =
        name == "scale" || (name == "softcap" && value == 0.0f) || (name == "qk_norm_epsilon" && value == 1e-6f);
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
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0)
    return "num_heads " + str(heads) + " is not a positive multiple of kv_num_heads " + str(kv_heads);
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
    const auto wanted =
        i == SeqlensK || i == TotalLength ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    const auto type = graph.type_of(value).element;
    if (type != wanted)
      return std::string(kInputNames[i]) + " is " + type_name(type) + ": the EP computes float32 attention only";
  }
  for (size_t i = 0; i < kOutputs; ++i)
    if (graph.is_ambiguous(node.outputs[i])) return "output '" + node.outputs[i] + "' names more than one value";
  return "";
}

NodeKernel* compile_attention(const NodeInfo& node, const OrtNode* fused_node, SessionContext& session) {
  return new AttentionKernel(node, fused_node, session);
}

}  // namespace onebit
