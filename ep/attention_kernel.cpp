// SPDX-License-Identifier: Apache-2.0
#include "attention_kernel.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "attention_match.h"
#include "engine/counters.h"
#include "engine/intra_op_threads.h"
#include "kernel_inputs.h"
#include "kernels/group_query_attention.h"

namespace onebit {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

struct Tensor {
  const OrtValue* value = nullptr;
  TensorShape shape;
  const void* data = nullptr;
};

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
  // The call's shape from its inputs' dims and values, each checked against the others.
  AttentionShape checked_shape(const Tensor (&in)[kInputs]) const;
  // Every batch entry's rows lie inside the buffers and within `positions` rotary rows.
  void check_rows(const AttentionShape& shape, const int32_t* seqlens_k, size_t positions) const;
  [[noreturn]] void fail(const std::string& what) const {
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + name + ": " + what);
  }
};

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo* self, void*, OrtKernelContext* context) noexcept {
  return guarded([&] { static_cast<const AttentionKernel&>(static_cast<NodeKernel&>(*self)).compute(context); });
}

AttentionKernel::AttentionKernel(const NodeInfo& node, const OrtNode* fused_node, SessionContext& s)
    : name(node.describe()), session(s) {
  Compute = onebit::compute;
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

AttentionShape AttentionKernel::checked_shape(const Tensor (&in)[kInputs]) const {
  AttentionShape shape;
  const std::vector<int64_t>& q = in[Query].shape.dims;
  if (q.size() != 3) fail("query " + shape_string(q) + " is not [batch, sequence, hidden]");
  shape.batch = static_cast<size_t>(q[0]);
  shape.rows = static_cast<size_t>(q[1]);
  shape.heads = heads;
  shape.kv_heads = kv_heads;
  shape.packed_qkv = !inputs[Key];
  const size_t width = shape.packed_qkv ? heads + 2 * kv_heads : heads;
  if (q[2] <= 0 || static_cast<size_t>(q[2]) % width != 0)
    fail("query " + shape_string(q) + ": its last dimension is not a multiple of " + str(width) + " heads");
  shape.head_size = static_cast<size_t>(q[2]) / width;
  const int64_t b = q[0], s = q[1], d = static_cast<int64_t>(shape.head_size);
  if (s == 0) fail("query " + shape_string(q) + " has no rows");
  // ORT also runs key and value of 0 rows (attention to the cache alone). The EP declines that form
  // where the graph says so; where it cannot know, the run names it.
  if (!shape.packed_qkv && in[Key].shape.dims.size() == 3 && in[Key].shape.dims[1] == 0)
    fail(
        "key and value of 0 rows (attention to the cache alone) are not computed by the EP; ONEBIT_ATTENTION=ort "
        "leaves attention to ORT");
  if (!shape.packed_qkv)
    for (AttentionInput i : {Key, Value})
      if (in[i].shape.dims != std::vector<int64_t>{b, s, static_cast<int64_t>(kv_heads) * d})
        fail(std::string(kAttentionInputNames[i]) + " " + shape_string(in[i].shape.dims) + " does not match query " +
             shape_string(q) + " with " + str(kv_heads) + " KV heads");
  const std::vector<int64_t>& past = in[PastKey].shape.dims;
  if (past.size() != 4 || past[0] != b || past[1] != static_cast<int64_t>(kv_heads) || past[3] != d ||
      in[PastValue].shape.dims != past)
    fail("past_key " + shape_string(past) + " and past_value " + shape_string(in[PastValue].shape.dims) +
         " are not both [" + str(b) + ", " + str(kv_heads) + ", rows, " + str(d) + "]");
  if (in[SeqlensK].shape.dims != std::vector<int64_t>{b})
    fail("seqlens_k " + shape_string(in[SeqlensK].shape.dims) + " is not [" + str(b) + "]");
  const std::vector<int64_t>& total_dims = in[TotalLength].shape.dims;
  if (!(total_dims.empty() || total_dims == std::vector<int64_t>{1}))
    fail("total_sequence_length " + shape_string(total_dims) + " is not a scalar or one value");
  const int64_t total = *static_cast<const int32_t*>(in[TotalLength].data);
  if (total < s || total < 1) fail("total_sequence_length " + str(total) + " is below the query's " + str(s) + " rows");
  shape.past_rows = static_cast<size_t>(past[2]);
  shape.present_rows = std::max(static_cast<size_t>(total), shape.past_rows);
  shape.first_prompt = total == s;
  if (!shape.first_prompt && s > 1 && b != 1)
    fail("a prompt of " + str(s) + " rows after earlier ones needs batch 1, not " + str(b));
  shape.scale = scale != 0 ? scale : 1.0f / std::sqrt(static_cast<float>(d));
  if (rotary) {
    if (!inputs[Cos] || !inputs[Sin]) fail("do_rotary=1 without cos_cache and sin_cache");
    const std::vector<int64_t>&cos = in[Cos].shape.dims, &sin = in[Sin].shape.dims;
    if (cos.size() != 2 || sin.size() != 2 || sin[1] != cos[1] || 2 * cos[1] > d)
      fail("cos_cache " + shape_string(cos) + " and sin_cache " + shape_string(sin) +
           " are not both [positions, at most " + str(d / 2) + "]");
    shape.rotary_dim = static_cast<size_t>(2 * cos[1]);
    shape.rotary_interleaved = interleaved;
  }
  return shape;
}

void AttentionKernel::check_rows(const AttentionShape& shape, const int32_t* seqlens_k, size_t positions) const {
  const int64_t s = static_cast<int64_t>(shape.rows);
  for (size_t e = 0; e < shape.batch; ++e) {
    const int64_t valid = int64_t{seqlens_k[e]} + 1;
    const int64_t past_rows = shape.first_prompt ? 0 : valid - s;
    const bool fits = shape.first_prompt ? valid >= 1 && valid <= s
                                         : past_rows >= 0 && valid <= static_cast<int64_t>(shape.present_rows) &&
                                               past_rows <= static_cast<int64_t>(shape.past_rows);
    if (!fits)
      fail("seqlens_k[" + str(static_cast<int64_t>(e)) + "] = " + str(seqlens_k[e]) + " does not fit " + str(s) +
           " new rows, a cache of " + str(static_cast<int64_t>(shape.present_rows)) + " rows and a past of " +
           str(static_cast<int64_t>(shape.past_rows)) + " rows");
    if (rotary && static_cast<size_t>(past_rows + s) > positions)
      fail("position " + str(past_rows + s - 1) + " is past the " + str(static_cast<int64_t>(positions)) +
           " rows of cos_cache and sin_cache");
  }
}

void AttentionKernel::compute(OrtKernelContext* context) const {
  Tensor in[kInputs];
  for (size_t i = 0; i < kInputs; ++i) {
    if (!inputs[i]) continue;
    in[i].value = kernel_input(context, *inputs[i]);
    in[i].shape = shape_of(in[i].value);
    const auto wanted = attention_input_type(i);
    if (in[i].shape.type != wanted)
      fail(std::string(kAttentionInputNames[i]) + " is " + type_name(in[i].shape.type) + "; " + type_name(wanted) +
           " expected");
    check(ort().GetTensorData(in[i].value, &in[i].data));
  }
  const AttentionShape shape = checked_shape(in);
  AttentionCall call;
  call.query = static_cast<const float*>(in[Query].data);
  call.key = static_cast<const float*>(in[Key].data);
  call.value = static_cast<const float*>(in[Value].data);
  call.past_key = static_cast<const float*>(in[PastKey].data);
  call.past_value = static_cast<const float*>(in[PastValue].data);
  call.seqlens_k = static_cast<const int32_t*>(in[SeqlensK].data);
  call.cos = static_cast<const float*>(in[Cos].data);
  call.sin = static_cast<const float*>(in[Sin].data);
  // Before any row is read.
  check_rows(shape, call.seqlens_k,
             rotary ? static_cast<size_t>(std::min(in[Cos].shape.dims[0], in[Sin].shape.dims[0])) : 0);

  const int64_t b = static_cast<int64_t>(shape.batch), s = static_cast<int64_t>(shape.rows),
                d = static_cast<int64_t>(shape.head_size);
  const std::vector<int64_t> out_dims{b, s, static_cast<int64_t>(heads) * d};
  const std::vector<int64_t> present_dims{b, static_cast<int64_t>(kv_heads), static_cast<int64_t>(shape.present_rows),
                                          d};
  auto output = [&](size_t index, const std::vector<int64_t>& dims) {
    return static_cast<float*>(kernel_output(context, index, dims));
  };
  call.output = output(outputs[Out], out_dims);
  call.present_key = output(outputs[PresentKey], present_dims);
  call.present_value = output(outputs[PresentValue], present_dims);

  // A decode step's attention is short: threads that sleep between calls are not woken for it.
  if (split_over_threads(attention_one_thread_ns(shape, call), session.threads_sleep)) {
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
  } else {
    for (size_t task = 0; task < attention_tasks(shape); ++task) attend(shape, call, task);
  }
  count(session.counters, Counter::AttentionRuns);
}

}  // namespace

NodeKernel* compile_attention(const NodeInfo& node, const OrtNode* fused_node, SessionContext& session) {
  return new AttentionKernel(node, fused_node, session);
}

}  // namespace onebit
