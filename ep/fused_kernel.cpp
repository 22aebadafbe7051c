// SPDX-License-Identifier: Apache-2.0
#include "fused_kernel.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "engine/dims.h"
#include "engine/group_run.h"
#include "engine/thread_reused.h"
#include "kernel_inputs.h"
#include "kernels/silu_gate.h"

namespace onebit {

namespace {

template <class T>
T* optional_output(OrtKernelContext* context, const std::optional<size_t>& index, const std::vector<int64_t>& dims) {
  return index ? static_cast<T*>(kernel_output(context, *index, dims)) : nullptr;
}

// The per-call scalars the fused node receives as inputs (quantize_dynamic, activation × activation).
void read_call_scalars(OrtKernelContext* context, const GroupKernel& kernel, CallInputs& in) {
  const GroupPlan& plan = kernel.plan;
  const KernelInputs& i = kernel.inputs;
  if (i.x_zero_point)
    in.x_zero_point = read_zero_point(context, *i.x_zero_point, plan.x_type, plan,
                                      "activation zero point '" + plan.x_zero_point_input + "'");
  if (i.b_zero_point)
    in.b_zero_point =
        read_zero_point(context, *i.b_zero_point, plan.b_type, plan, "B zero point '" + plan.b_zero_point_input + "'");
  if (i.x_scale) in.x_scale = read_scale(context, *i.x_scale, plan, "activation scale '" + plan.x_scale_input + "'");
  if (i.b_scale) in.b_scale = read_scale(context, *i.b_scale, plan, "B scale '" + plan.b_scale_input + "'");
}

// Runs the engine's tasks on the session's intra-op threads.
TaskRunner intra_op_tasks(OrtKernelContext* context) {
  return [context](void (*task)(void*, size_t), size_t count, void* job) {
    check(ort().KernelContext_ParallelFor(context, task, count, 0, job));
  };
}

void trace_call(TraceFile& file, const FusedGroup& group, const CallShape& shape, const CallResult& call) {
  TraceEvent event;
  event.node = group.name;
  event.K = shape.K;
  event.N = shape.N;
  event.rows = shape.M;
  event.on_device = call.on_device();
  event.reason = route_reason_name(call.reason);
  event.start_us = trace_clock_us(call.start);
  event.duration_us = call.ns / 1000;
  event.launches = call.device_stats.launches;
  event.a_bytes = call.device_stats.a_bytes_synced;
  event.c_bytes = call.device_stats.c_bytes_synced;
  event.c_whole = call.device_stats.c_whole;
  if (call.on_device()) {
    const npu::CallStats& d = call.device_stats;
    event.device_us = (d.upload_ms + d.launch_wait_ms + d.c_sync_ms) * 1000;
    if (d.modelled) event.modelled_us = d.modelled->total_us();
  }
  file.record(event);
}

// One batch entry's counters, a warning for a device failure, and its trace event.
void report_call(SessionContext& session, const FusedGroup& group, const CallShape& shape, const CallResult& call) {
  if (call.reason == RouteReason::Fallback && session.device_warnings.first_time(call.device_error))
    log(session.logger, ORT_LOGGING_LEVEL_WARNING,
        "onebit: " + group.name + ": device call failed, ran on the host: " + call.device_error);
  count_call(session.counters, call);
  if (session.trace_file) trace_call(*session.trace_file, group, shape, call);
}

// A group's output for the node's SwiGLU gates: where it went, and how many values.
struct GroupOutput {
  void* data = nullptr;
  size_t count = 0;
};

// Per group, the output only the node itself reads (a SwiGLU's gate), kept from call to call.
struct NodeScratch {
  std::vector<UninitBuffer<float>> outputs;
  UninitBuffer<float> normed;  // the norm's output
  void trim() {
    for (UninitBuffer<float>& b : outputs) b.trim();
    normed.trim();
  }
};

// `scratch`: where the output goes when the node alone reads it (float: a SwiGLU's gate). `normed`:
// the activation of a group that reads the node's norm.
GroupOutput compute_group(GroupKernel& kernel, SessionContext& session, OrtKernelContext* context,
                          const NormedActivation* normed, UninitBuffer<float>& scratch) {
  GroupPlan& plan = kernel.plan;
  std::optional<ReadInput> b;
  if (kernel.inputs.w)
    b = read_input(context, *kernel.inputs.w, element_type_of(plan.b_type), plan.name, "B '" + plan.b_name + "'");
  const ReadInput x = kernel.inputs.x ? read_input(context, *kernel.inputs.x,
                                                   plan.quantizes_x() ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
                                                                      : element_type_of(plan.x_type),
                                                   plan.name, "activation")
                                      : ReadInput{normed->data, {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, normed->dims}};
  const CallShape shape = call_shape(plan, x.shape.dims, b ? &b->shape.dims : nullptr);

  const KernelOutputs& o = kernel.outputs;
  const size_t values = element_count(shape.y_dims);
  void* y = o.y ? kernel_output(context, *o.y, shape.y_dims) : scratch.get(values);
  const CallOutputs out{y, optional_output<uint8_t>(context, o.x_quantized, x.shape.dims),
                        optional_output<float>(context, o.x_scale, {}),
                        optional_output<uint8_t>(context, o.x_zero_point, {})};
  CallInputs in;
  in.x = x.data;
  in.b = b ? b->data : nullptr;
  read_call_scalars(context, kernel, in);

  const CallResources resources{session.device.get(), &session.policy, intra_op_tasks(context), session.threads_sleep};
  for (const CallResult& call : run_group(plan, resources, shape, in, out)) report_call(session, plan, shape, call);
  count(session.counters, Counter::GroupRuns);
  return {y, values};
}

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo* self, void*, OrtKernelContext* context) noexcept {
  return guarded([&] {
    auto& kernel = *static_cast<FusedKernel*>(self);
    ThreadReused<NodeScratch> scratch;
    if (scratch->outputs.size() < kernel.groups.size()) scratch->outputs.resize(kernel.groups.size());
    std::optional<NormedActivation> normed;
    if (kernel.norm) {
      normed = run_skip_norm(*kernel.norm, context, intra_op_tasks(context), scratch->normed);
      count(kernel.session.counters, Counter::NormRuns);
    }
    std::vector<GroupOutput> outputs;
    for (size_t i = 0; i < kernel.groups.size(); ++i)
      outputs.push_back(
          compute_group(kernel.groups[i], kernel.session, context, normed ? &*normed : nullptr, scratch->outputs[i]));
    for (const SiluGate& gate : kernel.gates) {
      const GroupOutput& g = outputs[gate.gate_group];
      const GroupOutput& up = outputs[gate.up_group];
      // Siblings of one activation with one N: the same shape (compile checked N).
      silu_gate(static_cast<const float*>(g.data), static_cast<float*>(up.data), std::min(g.count, up.count));
      count(kernel.session.counters, Counter::GateRuns);
    }
  });
}

}  // namespace

FusedKernel::FusedKernel(std::vector<GroupKernel> g, std::optional<SkipNormKernel> norm_, std::vector<SiluGate> gates_,
                         SessionContext& s)
    : groups(std::move(g)), norm(std::move(norm_)), gates(std::move(gates_)), session(s) {
  Compute = compute;
}

}  // namespace onebit
