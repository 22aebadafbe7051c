// SPDX-License-Identifier: Apache-2.0
// One call of a MatMulNBits group (W4A8, kernels/gemm_w4a8.h): the float activation quantized per
// row and K-block once, then the packed column tiles split over the call's tasks, each writing its
// columns of y with the bias. Host only: the device has no block-scaled design (its calls count as
// host calls with no device leg).
#pragma once
#include <cstdint>

#include "engine/fused_group.h"
#include "engine/host_leg.h"

namespace onebit {

// How many of w's tiles each task of a call of M rows takes (at least 1; w.tiles() or more: one task).
int64_t block_call_tiles_per_task(const PackedNBits& w, int64_t M, bool threads_sleep);

// y (M × N floats) for x (M × K floats) through g's block weights; threads_sleep: the tasks'
// threads sleep between calls (CallResources), so small calls stay on this thread.
void run_block_call(const FusedGroup& g, int64_t M, const float* x, float* y, const TaskRunner& tasks,
                    bool threads_sleep);

}  // namespace onebit
