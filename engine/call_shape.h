// SPDX-License-Identifier: Apache-2.0
// How one call's activation (and a per-call B) map onto a group: rows per batch entry, the
// output's dims, and which activation entry meets which weight entry (ONNX MatMul broadcasting).
// Known before the call runs, so the caller can allocate the output first.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/batch_broadcast.h"
#include "engine/fused_group.h"

namespace onebit {

struct CallShape {
  int64_t M = 0;  // rows per batch entry
  int64_t K = 0;  // the weight's: the compiled one's, or this call's B's
  int64_t N = 0;
  std::vector<int64_t> b_batch;
  std::vector<int64_t> x_dims;
  std::vector<int64_t> y_dims;
  BatchBroadcast batches;  // a 2-D weight: one entry, 0 with 0

  bool empty() const { return M == 0 || N == 0; }  // a per-call B may have N = 0
};

// The shape of a call of g with an activation of x_dims and, for a group whose B comes per call,
// a B of b_dims (else null). Throws InvalidCall naming the group, the operand and why.
CallShape call_shape(const FusedGroup& g, const std::vector<int64_t>& x_dims, const std::vector<int64_t>* b_dims);

}  // namespace onebit
