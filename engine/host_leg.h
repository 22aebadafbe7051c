// SPDX-License-Identifier: Apache-2.0
// The host route of one call: gemm_q8 split by column blocks into tasks, each followed by the
// epilogue of its columns while its accumulators are hot.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/epilogue.h"
#include "kernels/gemm_q8.h"

namespace onebit {

// Runs `count` tasks of a job, task(job, i) for each i, possibly in parallel, returning when all
// are done. The EP passes one over ORT's intra-op pool; empty runs them in this thread.
using TaskRunner = std::function<void(void (*task)(void* job, size_t index), size_t count, void* job)>;

// Runs job.run(i) for i in [0, count): over the runner when there is more than one, else (or
// with no runner) one after the other in this thread.
template <class Job>
void run_tasks(Job& job, int64_t count, const TaskRunner& runner) {
  if (count == 1 || !runner) {
    for (int64_t i = 0; i < count; ++i) job.run(static_cast<size_t>(i));
    return;
  }
  runner([](void* j, size_t i) { static_cast<Job*>(j)->run(i); }, static_cast<size_t>(count), &job);
}

// Whether a fused float output of M×N at y is written with streaming stores: from 1 MiB (a core's
// L2) y cannot stay in the caches with the call's activation and weights, and written through them
// it evicts them (the calls with such outputs got faster: BENCHMARKS.md). Needs y 64-byte aligned
// and rows a multiple of 64 bytes.
bool streams_float_output(int64_t M, int64_t N, const void* y);

// acc (x.M × N) and y (x.M × N outputs) for the activation x against the packed weights w.
void run_host(const PreparedActivation& x, const PackedWeights& w, const Epilogue& epilogue, int32_t* acc, void* y,
              const TaskRunner& runner);

}  // namespace onebit
