// SPDX-License-Identifier: Apache-2.0
#include "fused_kernel.h"

#include <new>
#include <string>
#include <vector>

#include "engine/group_call.h"

namespace onebit {

namespace {

struct TensorShape {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims;
};

TensorShape shape_of(const OrtValue* value) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  check(ort().GetTensorTypeAndShape(value, &info));
  TensorShape s;
  size_t rank = 0;
  OrtStatus* status = ort().GetTensorElementType(info, &s.type);
  if (status == nullptr) status = ort().GetDimensionsCount(info, &rank);
  s.dims.resize(rank);
  if (status == nullptr && rank) status = ort().GetDimensions(info, s.dims.data(), rank);
  ort().ReleaseTensorTypeAndShapeInfo(info);
  check(status);
  return s;
}

ONNXTensorElementDataType element_type_of(QType t) {
  return t == QType::Int8 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 : ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
}

// Checks the activation against what was compiled; returns the rows per batch entry (M).
int64_t rows_of(const GroupPlan& plan, const TensorShape& x) {
  auto fail = [&](const std::string& why) {
    throw OrtError(ORT_INVALID_ARGUMENT, "onebit: " + plan.name + ": activation of shape " + shape_string(x.dims) + " " +
                                             type_name(x.type) + " " + why);
  };
  if (x.type != element_type_of(plan.x_type)) fail("has the wrong type; compiled for " + type_name(element_type_of(plan.x_type)));
  if (x.dims.size() < plan.min_rank || x.dims.size() > plan.max_rank) fail("has an unsupported rank");
  if (x.dims.back() != plan.K) fail("does not match the weight's K=" + std::to_string(plan.K));
  for (size_t i = 0; i < plan.batch.size(); ++i)
    if (x.dims[i] != plan.batch[i]) fail("does not match the weight's batch dims " + shape_string(plan.batch));
  int64_t rows = 1;
  for (size_t i = plan.batch.size(); i + 1 < x.dims.size(); ++i) rows *= x.dims[i];
  return rows;
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

void trace_call(TraceFile& file, const GroupPlan& plan, int64_t rows, uint64_t start_us, const CallResult& call) {
  TraceEvent event;
  event.node = plan.name;
  event.K = plan.K;
  event.N = plan.N;
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

// One batch entry through the engine, then its counters, a warning for a device failure, and
// its trace event.
void run_batch(FusedKernel& kernel, const CallSite& site, size_t batch, const Activation& a, int32_t* acc, void* y) {
  SessionContext& session = kernel.session;
  const uint64_t start_us = trace_clock_us();
  const CallResult call = run_call(kernel.plan, site, batch, a, acc, y);
  if (call.reason == RouteReason::Fallback)
    log(session.logger, ORT_LOGGING_LEVEL_WARNING,
        "onebit: " + kernel.plan.name + ": device call failed, ran on the host: " + call.device_error);
  count_call(session.counters, call);
  if (session.trace_file) trace_call(*session.trace_file, kernel.plan, a.M, start_us, call);
}

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo* self, void*, OrtKernelContext* context) noexcept {
  return guarded([&] {
    auto& kernel = *static_cast<FusedKernel*>(self);
    const GroupPlan& plan = kernel.plan;
    const OrtValue* x = nullptr;
    check(ort().KernelContext_GetInput(context, 0, &x));
    const TensorShape x_shape = shape_of(x);
    const int64_t M = rows_of(plan, x_shape);

    std::vector<int64_t> y_dims = x_shape.dims;
    y_dims.back() = plan.N;
    OrtValue* y = nullptr;
    check(ort().KernelContext_GetOutput(context, 0, y_dims.data(), y_dims.size(), &y));
    const void* x_data = nullptr;
    void* y_data = nullptr;
    check(ort().GetTensorData(x, &x_data));
    check(ort().GetTensorMutableData(y, &y_data));

    const CallSite site{kernel.session.device.get(), &kernel.session.policy, intra_op_tasks(context)};
    try {
      std::vector<int32_t> acc(static_cast<size_t>(M * plan.N));
      const size_t y_step = static_cast<size_t>(M * plan.N) * output_element_size(plan.epilogue.kind);
      for (size_t b = 0; b < plan.weights.size() && M > 0; ++b) {
        const Activation a{static_cast<const uint8_t*>(x_data) + b * M * plan.K, plan.x_type, plan.x_zero_point, M};
        run_batch(kernel, site, b, a, acc.data(), static_cast<uint8_t*>(y_data) + b * y_step);
      }
    } catch (const std::bad_alloc&) {
      throw OrtError(ORT_FAIL, "onebit: " + plan.name + ": out of memory for a call of " + std::to_string(M) +
                                   " rows (" + std::to_string(M * plan.N * 4) + " bytes of int32 accumulators)");
    }
    count(kernel.session.counters, Counter::QdqRuns);
  });
}

}  // namespace

FusedKernel::FusedKernel(GroupPlan p, SessionContext& s) : OrtNodeComputeInfo{}, plan(std::move(p)), session(s) {
  ort_version_supported = ORT_API_VERSION;
  CreateState = create_state;
  Compute = compute;
  ReleaseState = release_state;
}

}  // namespace onebit
