// SPDX-License-Identifier: Apache-2.0
#include "fused_kernel.h"

#include <algorithm>
#include <new>
#include <string>
#include <vector>

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

// One call's work, split by column blocks so the session's intra-op threads share it. Each
// task computes its columns' accumulators and runs the epilogue on them while they are hot.
struct ColumnJob {
  const GroupPlan* plan;
  const PackedWeights* weights;
  const PreparedActivation* x;
  int32_t* acc;  // M×N
  void* y;       // M×N outputs
  int64_t blocks_per_task;

  void run(size_t task) const {
    const int64_t b0 = static_cast<int64_t>(task) * blocks_per_task;
    const int64_t b1 = std::min(b0 + blocks_per_task, weights->n_blocks());
    gemm_q8_blocks(*x, *weights, b0, b1, acc, plan->N);
    plan->epilogue.apply_columns(acc, x->M, plan->N, b0 * kBlockN, std::min(b1 * kBlockN, plan->N), y);
  }
};

void run_column_task(void* job, size_t task) { static_cast<const ColumnJob*>(job)->run(task); }

// Enough tasks to balance a few threads, few enough that each streams a long run of weights.
constexpr int64_t kTasksPerCall = 16;

void count_route(Counters& counters, RouteReason reason) {
  switch (reason) {
    case RouteReason::RowsPolicy: count(counters, Counter::HostRowsPolicy); break;
    case RouteReason::Routes: count(counters, Counter::HostRoutes); break;
    case RouteReason::DesignsFailed:
    case RouteReason::Fallback: count(counters, Counter::DeviceFallbacks); break;
    case RouteReason::Busy: count(counters, Counter::DeviceBusy); break;
    case RouteReason::Device: count(counters, Counter::DeviceCalls); break;
    case RouteReason::NoDevice: break;
  }
}

void count_device_call(Counters& counters, const npu::CallStats& stats) {
  count(counters, Counter::DeviceLaunches, stats.launches);
  count(counters, Counter::ABytesSynced, stats.a_bytes_synced);
  count(counters, Counter::CBytesSynced, stats.c_bytes_synced);
  count(counters, stats.c_whole ? Counter::CSyncsWhole : Counter::CSyncsNarrowed);
}

// One batch entry: M rows against one packed weight, on the device when the route allows and
// the device succeeds, else on the host; then the epilogue into y.
void run_batch(FusedKernel& kernel, OrtKernelContext* context, const PackedWeights& w, const Activation& a,
               int32_t* acc, void* y) {
  SessionContext& session = kernel.session;
  const GroupPlan& plan = kernel.plan;
  const uint64_t start = trace_clock_us();
  const PreparedActivation prepared = prepare_activation(a, plan.K);
  const bool single = plan.weights.size() == 1;
  RouteReason reason = single ? choose_route(session.device.get(), kernel.device, session.options, session.routes,
                                             plan.K, plan.N, a.M)
                              : RouteReason::NoDevice;
  DeviceCallResult device_call;
  if (reason == RouteReason::Device) {
    device_call = run_on_device(*session.device, kernel.device, prepared, w, acc);
    reason = device_call.reason;
    if (reason == RouteReason::Fallback && session.device_warnings.first_time(device_call.error))
      log(session.logger, ORT_LOGGING_LEVEL_WARNING, "onebit: " + plan.name + ": device call failed, ran on the host: " +
                                                         device_call.error);
  }
  count_route(session.counters, reason);
  if (reason == RouteReason::Device) {
    count_device_call(session.counters, device_call.stats);
    plan.epilogue.apply(acc, a.M, plan.N, y);
  } else {
    const int64_t per_task = (w.n_blocks() + kTasksPerCall - 1) / kTasksPerCall;
    const ColumnJob job{&plan, &w, &prepared, acc, y, per_task};
    const auto tasks = static_cast<size_t>((w.n_blocks() + per_task - 1) / per_task);
    check(ort().KernelContext_ParallelFor(context, run_column_task, tasks, 0, const_cast<ColumnJob*>(&job)));
  }
  const uint64_t elapsed = trace_clock_us() - start;
  const bool on_device = reason == RouteReason::Device;
  count(session.counters, on_device ? Counter::DeviceNs : Counter::HostNs, elapsed * 1000);
  if (session.trace_file) {
    TraceEvent event;
    event.node = plan.name;
    event.K = plan.K;
    event.N = plan.N;
    event.rows = a.M;
    event.on_device = on_device;
    event.reason = route_reason_name(reason);
    event.start_us = start;
    event.duration_us = elapsed;
    event.launches = device_call.stats.launches;
    event.a_bytes = device_call.stats.a_bytes_synced;
    event.c_bytes = device_call.stats.c_bytes_synced;
    event.c_whole = device_call.stats.c_whole;
    session.trace_file->record(event);
  }
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

    try {
      std::vector<int32_t> acc(static_cast<size_t>(M * plan.N));
      const size_t y_step = static_cast<size_t>(M * plan.N) * output_element_size(plan.epilogue.kind);
      for (size_t b = 0; b < plan.weights.size() && M > 0; ++b) {
        const Activation a{static_cast<const uint8_t*>(x_data) + b * M * plan.K, plan.x_type, plan.x_zero_point, M};
        run_batch(kernel, context, plan.weights[b], a, acc.data(), static_cast<uint8_t*>(y_data) + b * y_step);
      }
    } catch (const std::bad_alloc&) {
      throw OrtError(ORT_FAIL, "onebit: " + plan.name + ": out of memory for a call of " + std::to_string(M) +
                                   " rows (" + std::to_string(M * plan.N * 4) + " bytes of int32 accumulators)");
    }
    count(kernel.session.counters, Counter::QdqRuns);
  });
}

}  // namespace

FusedKernel::FusedKernel(GroupPlan p, GroupDevice d, SessionContext& s)
    : OrtNodeComputeInfo{}, plan(std::move(p)), device(std::move(d)), session(s) {
  ort_version_supported = ORT_API_VERSION;
  CreateState = create_state;
  Compute = compute;
  ReleaseState = release_state;
}

}  // namespace onebit
