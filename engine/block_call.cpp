// SPDX-License-Identifier: Apache-2.0
#include "engine/block_call.h"

#include <algorithm>

#include "engine/intra_op_threads.h"
#include "engine/thread_reused.h"

namespace onebit {

namespace {

// As the int8 host leg: enough tasks to balance a few threads, each a long run of weights.
constexpr int64_t kTasksPerCall = 16;
// One row: the kernel reads four far-apart runs of a task's tiles at once, which only beats one
// stream when the runs are long. Split into tasks of 5 tiles (576x576), each such call ran its
// kernel at about 0.6x the speed of one task over all the tiles, 1 thread: so a one-row task
// gets at least this many bytes, and a power of two of tasks keeps two or four threads even.
constexpr int64_t kMinDecodeTaskBytes = int64_t{64} << 10;

// How many tasks a call of M rows over w splits into.
int64_t task_count(const PackedNBits& w, int64_t M, bool threads_sleep) {
  if (!split_over_threads(w4a8_one_thread_ns(w, M), threads_sleep)) return 1;
  if (M != 1) return std::clamp<int64_t>(w.tiles(), 1, kTasksPerCall);
  const int64_t fit = w.tiles() * w.tile_stride() / kMinDecodeTaskBytes;
  int64_t count = 1;
  while (count * 2 <= std::min(fit, kTasksPerCall)) count *= 2;
  return count;
}

struct TileJob {
  const BlockQuantizedActivation* x;
  const PackedNBits* w;
  const float* bias;
  float* y;
  int64_t tiles_per_task;

  void run(size_t task) const {
    const int64_t t0 = static_cast<int64_t>(task) * tiles_per_task;
    gemm_w4a8_tiles(*x, *w, t0, std::min(t0 + tiles_per_task, w->tiles()), bias, y, w->N);
  }
};

// This thread's quantized activation, its storage kept from call to call unless it grew huge.
struct ReusedBlockActivation {
  BlockQuantizedActivation a;
  void trim() {
    if (a.q.capacity() + 8 * a.scale.capacity() + 4 * a.row_groups.capacity() > kKeptScratchBytes)
      a = BlockQuantizedActivation{};
  }
};

}  // namespace

int64_t block_call_tiles_per_task(const PackedNBits& w, int64_t M, bool threads_sleep) {
  const int64_t tasks = task_count(w, M, threads_sleep);
  // More rows: a multiple of the tiles the kernel runs side by side (pairs on AVX-512) a task.
  const int64_t step = M == 1 ? 1 : w4a8_row_tile_step();
  return std::max<int64_t>(1, ((w.tiles() + tasks - 1) / tasks + step - 1) / step * step);
}

void run_block_call(const FusedGroup& g, int64_t M, const float* x, float* y, const TaskRunner& tasks,
                    bool threads_sleep) {
  const PackedNBits& w = *g.block_weights;
  ThreadReused<ReusedBlockActivation> a;
  quantize_activation_blocks(x, M, w.K, w.block_size, a->a);
  prepare_w4a8_rows(a->a);
  const int64_t per_task = block_call_tiles_per_task(w, M, threads_sleep);
  TileJob job{&a->a, &w, g.block_bias.empty() ? nullptr : g.block_bias.data(), y, per_task};
  const int64_t count = (w.tiles() + per_task - 1) / per_task;
  run_tasks(job, count, tasks);
}

}  // namespace onebit
