// SPDX-License-Identifier: Apache-2.0
// The compute function of one fused node: for each of its groups (one, or sibling projections of
// one input), validate the activation against what was compiled, hand each batch entry to the
// engine (route, host or device, epilogue), count and trace; before them the norm whose output they
// read, after them their SwiGLU gates, if the node has them.
#pragma once
#include "group_plan.h"
#include "kernel_inputs.h"
#include "node_kernel.h"
#include "session_context.h"
#include "skip_norm_call.h"

namespace onebit {

// One group of a fused node: its plan and where its values are among the node's inputs and outputs.
struct GroupKernel {
  GroupPlan plan;
  KernelInputs inputs;
  KernelOutputs outputs;
};

// A SwiGLU gate of the node (ep/silu_gate_match.h): after the groups, the up group's output
// becomes silu(gate) · up; the gate group writes scratch of its own.
struct SiluGate {
  size_t gate_group = 0, up_group = 0;
};

struct FusedKernel : NodeKernel {
  FusedKernel(std::vector<GroupKernel> groups, std::optional<SkipNormKernel> norm, std::vector<SiluGate> gates,
              SessionContext& session);

  std::vector<GroupKernel> groups;
  std::optional<SkipNormKernel> norm;  // run first: its output is the activation of groups without inputs.x
  std::vector<SiluGate> gates;
  SessionContext& session;
};

}  // namespace onebit
