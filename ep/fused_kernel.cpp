// SPDX-License-Identifier: Apache-2.0
#include "fused_kernel.h"

#include <chrono>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "engine/activation_quantize.h"
#include "engine/activation_scale.h"
#include "engine/batch_broadcast.h"
#include "engine/call_operand.h"
#include "engine/group_call.h"
#include "engine/thread_reused.h"
#include "kernels/dynamic_quantize.h"
#include "kernel_inputs.h"

namespace onebit {

namespace {

using Clock = std::chrono::steady_clock;

// The weight a call multiplies by: the compiled one's dims, or those of this call's B.
struct WeightDims {
  std::vector<int64_t> batch;
  int64_t K = 0;
  int64_t N = 0;
};

// Checks a non-constant B against what was compiled.
WeightDims call_operand_dims(const GroupPlan& plan, const TensorShape& b) {
  auto fail = [&](const std::string& why) {
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + plan.name + ": B '" + plan.w_input + "' of shape " +
                                             shape_string(b.dims) + " " + type_name(b.type) + " " + why);
  };
  const ONNXTensorElementDataType type = element_type_of(plan.w_type);
  if (b.type != type) fail("has the wrong type; compiled for " + type_name(type));
  if (b.dims.size() < 2 || b.dims.size() > 4) fail("has an unsupported rank");
  WeightDims w{{b.dims.begin(), b.dims.end() - 2}, b.dims[b.dims.size() - 2], b.dims.back()};
  if (w.K > kMaxK) fail("has K > " + std::to_string(kMaxK) + " (int32 accumulators could overflow)");
  // The bias was sized for the declared N; a B whose N differs at run time (its declared shape was
  // wrong) would read past it. ORT fails such a call too.
  const size_t bias = plan.epilogue.bias.size() + plan.epilogue.bias32.size();
  if (bias != 0 && static_cast<size_t>(w.N) != bias)
    fail("has N=" + std::to_string(w.N) + " but the bias has " + std::to_string(bias) + " values");
  return w;
}

// How one call maps onto the packed weights: M rows per entry, the output's dims, and for a
// batched weight which activation entry meets which weight entry (ONNX MatMul broadcasting).
struct CallShape {
  int64_t M = 0;
  std::vector<int64_t> y_dims;
  BatchBroadcast batches;  // a 2-D weight: one entry, 0 with 0
};

// Checks the activation against what was compiled and against the weight w.
CallShape call_shape(const GroupPlan& plan, const TensorShape& x, const WeightDims& w) {
  auto fail = [&](const std::string& why) {
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + plan.name + ": activation of shape " + shape_string(x.dims) + " " +
                                             type_name(x.type) + " " + why);
  };
  const ONNXTensorElementDataType type =
      plan.quantizes_x || plan.quantizes_x_static ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT : element_type_of(plan.x_type);
  if (x.type != type) fail("has the wrong type; compiled for " + type_name(type));
  if (x.dims.size() < plan.min_rank || x.dims.size() > plan.max_rank) fail("has an unsupported rank");
  if (x.dims.back() != w.K) fail("does not match the weight's K=" + std::to_string(w.K));
  CallShape shape;
  if (w.batch.empty()) {
    // A 2-D weight: every leading dim is rows.
    shape.M = 1;
    for (size_t i = 0; i + 1 < x.dims.size(); ++i) shape.M *= x.dims[i];
    shape.batches = {{}, {0}, {0}};
    shape.y_dims = x.dims;
  } else {
    const std::vector<int64_t> x_batch(x.dims.begin(), x.dims.end() - 2);
    auto batches = broadcast_batches(x_batch, w.batch);
    if (!batches) fail("does not broadcast with the weight's batch dims " + shape_string(w.batch));
    shape.M = x.dims[x.dims.size() - 2];
    shape.batches = std::move(*batches);
    shape.y_dims = shape.batches.dims;
    shape.y_dims.insert(shape.y_dims.end(), {shape.M, w.K});
  }
  shape.y_dims.back() = w.N;
  return shape;
}

void* output_data(OrtKernelContext* context, size_t index, const std::vector<int64_t>& dims) {
  OrtValue* value = nullptr;
  check(ort().KernelContext_GetOutput(context, index, dims.data(), dims.size(), &value));
  void* data = nullptr;
  check(ort().GetTensorMutableData(value, &data));
  return data;
}

// This call's quantized activation, zero points and epilogue: the compiled ones, or those of a
// quantize_dynamic group (read from its inputs, or computed here when it fuses its DQL). The
// quantized values and the epilogue live in this thread's reused scratch.
struct CallActivation {
  const uint8_t* data = nullptr;  // the quantized activation, unless `prepared` holds it
  int32_t zero_point = 0;
  int32_t w_zero_point = 0;  // a non-constant B's
  const Epilogue* epilogue = nullptr;
  // A float activation of one batch entry, quantized straight into the kernels' layout.
  std::optional<ThreadReused<ReusedActivation>> prepared;
  ThreadReused<UninitBuffer<uint8_t>> quantized;  // what this call quantized otherwise
  ThreadReused<Epilogue> own_epilogue;            // used when the activation scale is per call
};

// Quantizes a fused (Dynamic)QuantizeLinear's float input: into the kernels' layout over the
// call's tasks when the call has one batch entry (of `rows` rows of K), else into a plain buffer
// that each entry prepares. Returns the scale and zero point it quantized with.
DynamicQuantization quantize_call_activation(const GroupPlan& plan, const float* x, size_t count, int64_t rows,
                                             int64_t K, bool one_entry, uint8_t* x_quantized_out,
                                             const TaskRunner& tasks, CallActivation& a) {
  const ConstantQuantization constant{{plan.q_scale, plan.q_zero_point}, plan.x_zero_point};
  const ConstantQuantization* fixed = plan.quantizes_x_static ? &constant : nullptr;
  if (one_entry) {
    a.prepared.emplace();
    return quantize_activation(x, rows, K, fixed, selected_k_group(), (*a.prepared)->a, x_quantized_out, tasks);
  }
  uint8_t* quantized = x_quantized_out ? x_quantized_out : a.quantized->get(count);
  a.data = quantized;
  if (fixed == nullptr) return dynamic_quantize(x, count, quantized);
  quantize_linear(x, count, fixed->quantize.scale, fixed->quantize.zero_point, quantized);
  return fixed->quantize;
}

// `x_quantized_out`: where a fused (Dynamic)QuantizeLinear writes when other nodes read its output too.
void call_activation(const FusedKernel& kernel, OrtKernelContext* context, const OrtValue* x, const TensorShape& x_shape,
                     size_t count, const CallShape& shape, uint8_t* x_quantized_out, const TaskRunner& tasks,
                     CallActivation& a) {
  const GroupPlan& plan = kernel.plan;
  const void* data = nullptr;
  check(ort().GetTensorData(x, &data));
  a.data = static_cast<const uint8_t*>(data);
  a.zero_point = plan.x_zero_point;
  a.w_zero_point = plan.w_zero_point;
  a.epilogue = &plan.epilogue;
  if (plan.quantizes_x || plan.quantizes_x_static) {
    const DynamicQuantization q =
        quantize_call_activation(plan, static_cast<const float*>(data), count, shape.M, x_shape.dims.back(),
                                 shape.batches.x_entry.size() == 1, x_quantized_out, tasks, a);
    if (plan.quantizes_x) {
      const KernelOutputs& out = kernel.outputs;
      if (out.x_scale) *static_cast<float*>(output_data(context, *out.x_scale, {})) = q.scale;
      if (out.x_zero_point)
        *static_cast<uint8_t*>(output_data(context, *out.x_zero_point, {})) = static_cast<uint8_t>(q.zero_point);
      a.zero_point = q.zero_point;
      epilogue_for_activation_scale(plan, q.scale, *a.own_epilogue);
      a.epilogue = &*a.own_epilogue;
      return;
    }
  }
  const KernelInputs& in = kernel.inputs;
  if (in.x_zero_point)
    a.zero_point = read_zero_point(context, *in.x_zero_point, plan.x_type, plan,
                                   "activation zero point '" + plan.x_zero_point_input + "'");
  if (in.w_zero_point)
    a.w_zero_point = read_zero_point(context, *in.w_zero_point, plan.w_type, plan,
                                     "B zero point '" + plan.w_zero_point_input + "'");
  if (!in.x_scale) return;
  const float x_scale = read_scale(context, *in.x_scale, plan, "activation scale '" + plan.x_scale_input + "'");
  if (in.w_scale) {
    const float w_scale = read_scale(context, *in.w_scale, plan, "B scale '" + plan.w_scale_input + "'");
    epilogue_for_scales(plan.epilogue, x_scale, {&w_scale, 1}, *a.own_epilogue);
  } else {
    epilogue_for_activation_scale(plan, x_scale, *a.own_epilogue);
  }
  a.epilogue = &*a.own_epilogue;
}

OrtStatus* ORT_API_CALL create_state(OrtNodeComputeInfo* self, OrtNodeComputeContext*, void** state) noexcept {
  *state = self;
  return nullptr;
}

void ORT_API_CALL release_state(OrtNodeComputeInfo*, void*) noexcept {}

// Runs the engine's tasks on the session's intra-op threads.
TaskRunner intra_op_tasks(OrtKernelContext* context) {
  return [context](void (*task)(void*, size_t), size_t count, void* job) {
    check(ort().KernelContext_ParallelFor(context, task, count, 0, job));
  };
}

void trace_call(TraceFile& file, const FusedGroup& group, int64_t rows, uint64_t start_us, const CallResult& call) {
  TraceEvent event;
  event.node = group.name;
  event.K = group.K;
  event.N = group.N;
  event.rows = rows;
  event.on_device = call.on_device();
  event.reason = route_reason_name(call.reason);
  event.start_us = start_us;
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

// One batch entry of `group` (the kernel's plan, or this call's packed B) through the engine,
// then its counters, a warning for a device failure, and its trace event; its time counts from
// `start`, before its activation was quantized or prepared.
void run_batch(SessionContext& session, FusedGroup& group, const CallSite& site, size_t batch,
               const PreparedActivation& a, const Epilogue& epilogue, int32_t* acc, void* y, Clock::time_point start) {
  CallResult call = run_call(group, site, batch, a, epilogue, acc, y);
  call.ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  if (call.reason == RouteReason::Fallback && session.device_warnings.first_time(call.device_error))
    log(session.logger, ORT_LOGGING_LEVEL_WARNING,
        "onebit: " + group.name + ": device call failed, ran on the host: " + call.device_error);
  count_call(session.counters, call);
  if (session.trace_file) trace_call(*session.trace_file, group, a.M, trace_clock_us(start), call);
}

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo* self, void*, OrtKernelContext* context) noexcept {
  return guarded([&] {
    auto& kernel = *static_cast<FusedKernel*>(self);
    const GroupPlan& plan = kernel.plan;
    const OrtValue* x = kernel_input(context, kernel.inputs.x);
    const TensorShape x_shape = shape_of(x);
    const OrtValue* b = kernel.inputs.w ? kernel_input(context, *kernel.inputs.w) : nullptr;
    const WeightDims w = b ? call_operand_dims(plan, shape_of(b)) : WeightDims{plan.batch, plan.K, plan.N};
    const CallShape shape = call_shape(plan, x_shape, w);
    const int64_t M = shape.M;
    void* y_data = output_data(context, kernel.outputs.y, shape.y_dims);
    uint8_t* x_quantized_out = nullptr;
    if (kernel.outputs.x_quantized)
      x_quantized_out = static_cast<uint8_t*>(output_data(context, *kernel.outputs.x_quantized, x_shape.dims));

    CallSite site{kernel.session.device.get(), &kernel.session.policy, intra_op_tasks(context)};
    try {
      auto start = Clock::now();
      size_t x_count = 1;
      for (int64_t d : x_shape.dims) x_count *= static_cast<size_t>(d);
      CallActivation x_call;
      call_activation(kernel, context, x, x_shape, x_count, shape, x_quantized_out, site.tasks, x_call);
      const Epilogue& epilogue = *x_call.epilogue;
      const bool empty = M == 0 || w.N == 0;  // a non-constant B may have N = 0
      FusedGroup* group = &kernel.plan;
      FusedGroup call_b;  // a non-constant B, packed for this call; host only (see call_operand.h)
      if (b != nullptr && !empty) {
        size_t entries = 1;
        for (int64_t d : w.batch) entries *= static_cast<size_t>(d);
        const void* b_data = nullptr;
        check(ort().GetTensorData(b, &b_data));
        call_b = pack_call_operand({b_data, plan.w_type, x_call.w_zero_point, w.K, w.N, entries});
        call_b.name = plan.name;
        group = &call_b;
        site.device = nullptr;
      }
      ThreadReused<UninitBuffer<int32_t>> acc_buffer;
      int32_t* acc = acc_buffer->get(static_cast<size_t>(M * w.N));
      const size_t y_step = static_cast<size_t>(M * w.N) * output_element_size(plan.epilogue.kind);
      ThreadReused<ReusedActivation> entry;  // each entry's rows, when x_call holds none prepared
      for (size_t o = 0; o < shape.batches.x_entry.size() && !empty; ++o) {
        if (o > 0) start = Clock::now();
        if (!x_call.prepared) {
          const Activation rows{x_call.data + shape.batches.x_entry[o] * M * w.K, plan.x_type, x_call.zero_point, M};
          prepare_activation(rows, w.K, selected_k_group(), entry->a);
        }
        run_batch(kernel.session, *group, site, shape.batches.w_entry[o], x_call.prepared ? (*x_call.prepared)->a : entry->a,
                  epilogue, acc, static_cast<uint8_t*>(y_data) + o * y_step, start);
      }
    } catch (const std::bad_alloc&) {
      throw OrtError(ORT_FAIL, "onebit: " + plan.name + ": out of memory for a call of " + std::to_string(M) +
                                   " rows (" + std::to_string(M * w.N * 4) + " bytes of int32 accumulators)");
    }
    count(kernel.session.counters, Counter::QdqRuns);
  });
}

}  // namespace

FusedKernel::FusedKernel(GroupPlan p, KernelInputs i, KernelOutputs o, SessionContext& s)
    : OrtNodeComputeInfo{}, plan(std::move(p)), inputs(i), outputs(o), session(s) {
  ort_version_supported = ORT_API_VERSION;
  CreateState = create_state;
  Compute = compute;
  ReleaseState = release_state;
}

}  // namespace onebit
