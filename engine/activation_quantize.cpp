// SPDX-License-Identifier: Apache-2.0
#include "engine/activation_quantize.h"

#include <algorithm>
#include <array>

namespace onebit {

namespace {

// Below this many values a task costs more to hand to another thread than it saves.
constexpr int64_t kMinValuesPerTask = int64_t{1} << 15;
constexpr int64_t kMaxTasks = 8;

int64_t task_count(int64_t values, int64_t max_tasks) {
  return std::clamp<int64_t>(values / kMinValuesPerTask, 1, std::min(kMaxTasks, max_tasks));
}

struct RangeJob {
  const float* x;
  int64_t count;
  int64_t per_task;
  std::array<FloatRange, kMaxTasks> parts;
  void run(size_t i) {
    const int64_t begin = static_cast<int64_t>(i) * per_task;
    parts[i] = float_range(x + begin, static_cast<size_t>(std::min(per_task, count - begin)));
  }
};

struct RowsJob {
  const float* x;
  DynamicQuantization q;
  PreparedActivation* a;
  uint8_t* x_q;
  int64_t rows_per_task;
  void run(size_t i) const {
    const int64_t begin = static_cast<int64_t>(i) * rows_per_task;
    quantize_rows_prepared(x, begin, std::min(begin + rows_per_task, a->M), q.scale, q.zero_point, *a, x_q);
  }
};

}  // namespace

DynamicQuantization quantize_activation(const float* x, int64_t M, int64_t K, const ConstantQuantization* constant,
                                        KGroup group, PreparedActivation& a, uint8_t* x_q, const TaskRunner& tasks) {
  const int64_t values = M * K;
  DynamicQuantization q;
  if (constant != nullptr) {
    q = constant->quantize;
  } else {
    const int64_t range_tasks = task_count(values, kMaxTasks);
    RangeJob range{x, values, (values + range_tasks - 1) / range_tasks, {}};
    run_tasks(range, range_tasks, tasks);
    for (int64_t i = 1; i < range_tasks; ++i) range.parts[0].merge(range.parts[static_cast<size_t>(i)]);
    q = dynamic_quantization_for(range.parts[0]);
  }
  shape_prepared_activation(M, K, QType::Uint8, constant != nullptr ? constant->read_zero_point : q.zero_point, group,
                            a);
  if (M == 0) return q;
  const int64_t row_tasks = task_count(values, M);
  const int64_t rows_per_task = (M + row_tasks - 1) / row_tasks;
  RowsJob rows{x, q, &a, x_q, rows_per_task};
  run_tasks(rows, (M + rows_per_task - 1) / rows_per_task, tasks);
  return q;
}

}  // namespace onebit
