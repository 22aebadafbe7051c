// SPDX-License-Identifier: Apache-2.0
// ONNX MatMul broadcasting between the batch dims of an activation [..., M, K] and those of a
// batched weight [B..., K, N]: numpy rules, dims aligned from the right, a dim of 1
// stretches. E.g. x [1, M, K] with W [3, K, N] gives y [3, M, N]; x [M, K] with W [3, K, N] too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace onebit {

struct BatchBroadcast {
  std::vector<int64_t> dims;  // the output's batch dims
  // For each output batch entry, in row-major order: the activation's and the weight's entry.
  std::vector<size_t> x_entry;
  std::vector<size_t> b_entry;
};

// nullopt when the dims do not broadcast (all dims known, >= 0).
std::optional<BatchBroadcast> broadcast_batches(const std::vector<int64_t>& x_batch,
                                                const std::vector<int64_t>& b_batch);

// Whether dims known only in part (a negative dim, on either side, is symbolic) can broadcast at
// run time.
bool batches_may_broadcast(const std::vector<int64_t>& x_batch, const std::vector<int64_t>& b_batch);

}  // namespace onebit
