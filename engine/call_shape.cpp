// SPDX-License-Identifier: Apache-2.0
#include "engine/call_shape.h"

#include <string>

#include "engine/dims.h"
#include "engine/invalid_call.h"

namespace onebit {

namespace {

// Checks a per-call B against what was compiled; sets the call's K, N and weight batch dims.
void read_call_operand_dims(const FusedGroup& g, const std::vector<int64_t>& b, CallShape& shape) {
  auto fail = [&](const std::string& why) {
    throw InvalidCall("onebit: " + g.name + ": B '" + g.b_name + "' of shape " + shape_string(b) + " " +
                      qtype_name(g.b_type) + " " + why);
  };
  if (b.size() < 2 || b.size() > 4) fail("has an unsupported rank");
  shape.b_batch.assign(b.begin(), b.end() - 2);
  shape.K = b[b.size() - 2];
  shape.N = b.back();
  if (shape.K > kMaxK) fail("has K > " + std::to_string(kMaxK) + " (int32 accumulators could overflow)");
  // The bias was sized for the declared N; a B whose N differs at run time (its declared shape was
  // wrong) would read past it. ORT fails such a call too.
  const size_t bias = g.epilogue.bias.size() + g.epilogue.bias32.size();
  if (bias != 0 && static_cast<size_t>(shape.N) != bias)
    fail("has N=" + std::to_string(shape.N) + " but the bias has " + std::to_string(bias) + " values");
}

}  // namespace

CallShape call_shape(const FusedGroup& g, const std::vector<int64_t>& x_dims, const std::vector<int64_t>* b_dims) {
  CallShape shape;
  shape.x_dims = x_dims;
  if (b_dims) {
    read_call_operand_dims(g, *b_dims, shape);
  } else {
    shape.K = g.K;
    shape.N = g.N;
    shape.b_batch = g.b_batch;
  }
  auto fail = [&](const std::string& why) {
    throw InvalidCall("onebit: " + g.name + ": activation of shape " + shape_string(x_dims) + " " +
                      (g.quantizes_x() ? "float" : qtype_name(g.x_type)) + " " + why);
  };
  if (x_dims.size() < g.x_min_rank || x_dims.size() > g.x_max_rank) fail("has an unsupported rank");
  if (x_dims.back() != shape.K) fail("does not match the weight's K=" + std::to_string(shape.K));
  if (shape.b_batch.empty()) {
    // A 2-D weight: every leading dim is rows.
    shape.M = 1;
    for (size_t i = 0; i + 1 < x_dims.size(); ++i) shape.M *= x_dims[i];
    shape.batches = {{}, {0}, {0}};
    shape.y_dims = x_dims;
  } else {
    const std::vector<int64_t> x_batch(x_dims.begin(), x_dims.end() - 2);
    auto batches = broadcast_batches(x_batch, shape.b_batch);
    if (!batches) fail("does not broadcast with the weight's batch dims " + shape_string(shape.b_batch));
    shape.M = x_dims[x_dims.size() - 2];
    shape.batches = std::move(*batches);
    shape.y_dims = shape.batches.dims;
    shape.y_dims.insert(shape.y_dims.end(), {shape.M, shape.K});
  }
  shape.y_dims.back() = shape.N;
  return shape;
}

}  // namespace onebit
