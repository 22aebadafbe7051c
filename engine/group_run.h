// SPDX-License-Identifier: Apache-2.0
// The engine's entry point for one call of a fused group, the same for the EP and the probes:
// views of the call's tensors in; the activation quantized or prepared, a per-call B packed, the
// call's epilogue, then each batch entry through run_call (route, host or device, epilogue);
// the outputs written and each entry's result out. The caller reads tensors, allocates the
// outputs (call_shape says their dims first), counts and traces.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/call_shape.h"
#include "engine/group_call.h"

namespace onebit {

// One call's inputs, as the caller read them (types checked against the group's).
struct CallInputs {
  const void* x = nullptr;  // float for a group that quantizes its activation, else x_type
  const void* b = nullptr;  // a per-call B (b_type, shape.b_batch × K × N), else null
  // Per-call scalars read from the fused node's inputs; nullopt: the group's constant.
  std::optional<float> x_scale, b_scale;
  std::optional<int32_t> x_zero_point, b_zero_point;
};

// Where the call writes: y (shape.y_dims of the group's output kind), and what the group's
// quantizer produces when other nodes read it too (else null): the quantized activation
// (shape.x_dims uint8), DynamicQuantizeLinear's scale and zero point.
struct CallOutputs {
  void* y = nullptr;
  uint8_t* x_quantized = nullptr;
  float* x_scale = nullptr;
  uint8_t* x_zero_point = nullptr;
};

// Runs the call; one result per batch entry run (none for an empty call), each timed from
// before its activation was quantized or prepared. Throws std::runtime_error naming the group
// when the call's scratch cannot be allocated.
std::vector<CallResult> run_group(FusedGroup& g, const CallResources& resources, const CallShape& shape,
                                  const CallInputs& in, const CallOutputs& out);

}  // namespace onebit
