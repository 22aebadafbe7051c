// SPDX-License-Identifier: Apache-2.0
#include "engine/group_run.h"

#include <chrono>
#include <new>
#include <stdexcept>
#include <string>

#include "engine/activation_quantize.h"
#include "engine/activation_scale.h"
#include "engine/block_call.h"
#include "engine/call_operand.h"
#include "engine/dims.h"
#include "engine/thread_reused.h"

namespace onebit {

namespace {

// This call's quantized activation, zero points and epilogue: the group's, or those the call
// brings or computes. The quantized values and the epilogue live in this thread's reused scratch.
struct CallActivation {
  const uint8_t* data = nullptr;  // the quantized activation, unless `prepared` holds it
  int32_t zero_point = 0;
  int32_t b_zero_point = 0;  // a per-call B's
  const Epilogue* epilogue = nullptr;
  // A float activation of one batch entry, quantized straight into the kernels' layout.
  std::optional<ThreadReused<ReusedActivation>> prepared;
  ThreadReused<UninitBuffer<uint8_t>> quantized;  // what this call quantized otherwise
  ThreadReused<Epilogue> own_epilogue;            // used when the activation scale is per call
};

// Quantizes a float activation: into the kernels' layout over the call's tasks when the call has
// one batch entry, else into a plain buffer that each entry prepares. Writes x_q too when other
// nodes read it (else null). Returns the scale and zero point it quantized with.
DynamicQuantization quantize_call_activation(const FusedGroup& g, const float* x, const CallShape& shape, uint8_t* x_q,
                                             const TaskRunner& tasks, CallActivation& a) {
  const ConstantQuantization constant{g.x_quantize, g.x_zero_point};
  const ConstantQuantization* fixed = g.x_source == ActivationSource::QuantizeLinear ? &constant : nullptr;
  if (shape.batches.x_entry.size() == 1) {
    a.prepared.emplace();
    return quantize_activation(x, shape.M, shape.K, fixed, selected_k_group(), (*a.prepared)->a, x_q, tasks);
  }
  const size_t count = element_count(shape.x_dims);
  uint8_t* quantized = x_q ? x_q : a.quantized->get(count);
  a.data = quantized;
  if (fixed == nullptr) return dynamic_quantize(x, count, quantized);
  quantize_linear(x, count, fixed->quantize.scale, fixed->quantize.zero_point, quantized);
  return fixed->quantize;
}

void call_activation(const FusedGroup& g, const CallShape& shape, const CallInputs& in, const CallOutputs& out,
                     const TaskRunner& tasks, CallActivation& a) {
  a.data = static_cast<const uint8_t*>(in.x);
  a.zero_point = in.x_zero_point.value_or(g.x_zero_point);
  a.b_zero_point = in.b_zero_point.value_or(g.b_zero_point);
  a.epilogue = &g.epilogue;
  if (g.quantizes_x()) {
    const DynamicQuantization q =
        quantize_call_activation(g, static_cast<const float*>(in.x), shape, out.x_quantized, tasks, a);
    if (g.x_source == ActivationSource::DynamicQuantizeLinear) {
      if (out.x_scale) *out.x_scale = q.scale;
      if (out.x_zero_point) *out.x_zero_point = static_cast<uint8_t>(q.zero_point);
      a.zero_point = q.zero_point;
      epilogue_for_activation_scale(g, q.scale, *a.own_epilogue);
      a.epilogue = &*a.own_epilogue;
      return;
    }
  }
  if (!in.x_scale) return;
  if (in.b_scale)
    epilogue_for_scales(g.epilogue, *in.x_scale, {&*in.b_scale, 1}, *a.own_epilogue);
  else
    epilogue_for_activation_scale(g, *in.x_scale, *a.own_epilogue);
  a.epilogue = &*a.own_epilogue;
}

}  // namespace

std::vector<CallResult> run_group(FusedGroup& g, const CallResources& resources, const CallShape& shape,
                                  const CallInputs& in, const CallOutputs& out) {
  std::vector<CallResult> results;
  try {
    auto start = CallClock::now();
    if (g.x_source == ActivationSource::PerKBlock) {
      if (shape.empty()) return results;
      run_block_call(g, shape.M, static_cast<const float*>(in.x), static_cast<float*>(out.y), resources.tasks,
                     resources.threads_sleep);
      CallResult call;
      call.reason = host_only_route(resources);
      call.start = start;
      call.ns = ns_since(start);
      results.push_back(call);
      return results;
    }
    CallActivation a;
    call_activation(g, shape, in, out, resources.tasks, a);
    if (shape.empty()) return results;
    FusedGroup* group = &g;
    FusedGroup call_b;  // a per-call B, packed for this call; host only (see call_operand.h)
    std::optional<CallResources> host_resources;
    if (in.b != nullptr) {
      call_b = pack_call_operand({in.b, g.b_type, a.b_zero_point, shape.K, shape.N, element_count(shape.b_batch)});
      call_b.name = g.name;
      group = &call_b;
      host_resources.emplace(CallResources{nullptr, resources.policy, resources.tasks});
    }
    ThreadReused<UninitBuffer<int32_t>> acc_buffer;
    int32_t* acc = acc_buffer->get(static_cast<size_t>(shape.M * shape.N));
    const size_t y_step = static_cast<size_t>(shape.M * shape.N) * output_element_size(g.epilogue.kind);
    ThreadReused<ReusedActivation> entry;  // each entry's rows, when `a` holds none prepared
    results.reserve(shape.batches.x_entry.size());
    for (size_t o = 0; o < shape.batches.x_entry.size(); ++o) {
      if (o > 0) start = CallClock::now();
      if (!a.prepared) {
        const Activation rows{a.data + shape.batches.x_entry[o] * shape.M * shape.K, g.x_type, a.zero_point, shape.M};
        prepare_activation(rows, shape.K, selected_k_group(), entry->a);
      }
      CallResult call = run_call(*group, host_resources ? *host_resources : resources, shape.batches.b_entry[o],
                                 a.prepared ? (*a.prepared)->a : entry->a, *a.epilogue, acc,
                                 static_cast<uint8_t*>(out.y) + o * y_step);
      if (host_resources) call.reason = host_only_route(resources);
      call.start = start;
      call.ns = ns_since(start);
      results.push_back(std::move(call));
    }
  } catch (const std::bad_alloc&) {
    throw std::runtime_error("onebit: " + g.name + ": out of memory for a call of " + std::to_string(shape.M) +
                             " rows (" + std::to_string(shape.M * shape.N * 4) + " bytes of int32 accumulators)");
  }
  return results;
}

}  // namespace onebit
