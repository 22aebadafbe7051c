// SPDX-License-Identifier: Apache-2.0
#include "engine/host_leg.h"

#include <algorithm>
#include <cstdint>

namespace onebit {

namespace {

// Enough tasks to balance a few threads, few enough that each streams a long run of weights.
constexpr int64_t kTasksPerCall = 16;
// Each task takes a multiple of this many blocks: the zmm kernel's prefill tile spans two, and
// an odd count per task sent a third of 3072x768's work (48 blocks, 3 a task) through its
// half-as-fast one-block tile (BENCHMARKS.md).
constexpr int64_t kBlocksPerTaskMultiple = 2;

struct ColumnJob {
  const PreparedActivation* x;
  const PackedWeights* w;
  const Epilogue* epilogue;
  const FusedFloatOutput* fused;  // the kernel writes y itself; null: acc, then the epilogue
  int32_t* acc;
  void* y;
  int64_t blocks_per_task;

  void run(size_t task) const {
    const int64_t b0 = static_cast<int64_t>(task) * blocks_per_task;
    const int64_t b1 = std::min(b0 + blocks_per_task, w->n_blocks());
    gemm_q8_blocks(*x, *w, b0, b1, acc, w->N, fused);
    if (fused == nullptr) epilogue->apply_columns(acc, x->M, w->N, b0 * kBlockN, std::min(b1 * kBlockN, w->N), y);
  }
};

}  // namespace

bool streams_float_output(int64_t M, int64_t N, const void* y) {
  constexpr int64_t kStreamBytes = int64_t{1} << 20;
  return M * N * 4 >= kStreamBytes && reinterpret_cast<uintptr_t>(y) % 64 == 0 && (N * 4) % 64 == 0;
}

void run_host(const PreparedActivation& x, const PackedWeights& w, const Epilogue& epilogue, int32_t* acc, void* y,
              const TaskRunner& runner) {
  const int64_t even_share = (w.n_blocks() + kTasksPerCall - 1) / kTasksPerCall;
  const int64_t per_task = (even_share + kBlocksPerTaskMultiple - 1) / kBlocksPerTaskMultiple * kBlocksPerTaskMultiple;
  // A float output in float32 steps comes straight from the kernel's registers: no pass over an
  // int32 M×N, which was a large share of a many-row call (BENCHMARKS.md).
  FusedFloatOutput fused;
  const bool fuse = gemm_q8_fuses_float_output(x, w) && epilogue.fused_float_output(y, fused);
  fused.stream = fuse && streams_float_output(x.M, w.N, y);
  ColumnJob job{&x, &w, &epilogue, fuse ? &fused : nullptr, acc, y, per_task};
  const int64_t tasks = (w.n_blocks() + per_task - 1) / per_task;
  run_tasks(job, tasks, runner);
}

}  // namespace onebit
