// SPDX-License-Identifier: Apache-2.0
#include "fused_kernel.h"

#include <algorithm>
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

    std::vector<int32_t> acc(static_cast<size_t>(M * plan.N));
    const size_t y_step = static_cast<size_t>(M * plan.N) * output_element_size(plan.epilogue.kind);
    for (size_t b = 0; b < plan.weights.size() && M > 0; ++b) {
      const PackedWeights& w = plan.weights[b];
      const Activation a{static_cast<const uint8_t*>(x_data) + b * M * plan.K, plan.x_type, plan.x_zero_point, M};
      const PreparedActivation prepared = prepare_activation(a, plan.K);
      const int64_t per_task = (w.n_blocks() + kTasksPerCall - 1) / kTasksPerCall;
      const ColumnJob job{&plan, &w, &prepared, acc.data(), static_cast<uint8_t*>(y_data) + b * y_step, per_task};
      const auto tasks = static_cast<size_t>((w.n_blocks() + per_task - 1) / per_task);
      check(ort().KernelContext_ParallelFor(context, run_column_task, tasks, 0, const_cast<ColumnJob*>(&job)));
    }
    kernel.session.qdq_runs++;
    process_counters().qdq_runs++;
  });
}

}  // namespace

FusedKernel::FusedKernel(GroupPlan p, Counters& s) : OrtNodeComputeInfo{}, plan(std::move(p)), session(s) {
  ort_version_supported = ORT_API_VERSION;
  CreateState = create_state;
  Compute = compute;
  ReleaseState = release_state;
}

}  // namespace onebit
