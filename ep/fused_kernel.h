// SPDX-License-Identifier: Apache-2.0
// The compute function of one fused group: validate the activation against what was compiled,
// hand each batch entry to the engine (route, host or device, epilogue), count and trace.
#pragma once
#include "group_plan.h"
#include "kernel_inputs.h"
#include "ort_api.h"
#include "session_context.h"

namespace onebit {

struct FusedKernel : OrtNodeComputeInfo {
  FusedKernel(GroupPlan plan, KernelInputs inputs, KernelOutputs outputs, SessionContext& session);

  GroupPlan plan;
  KernelInputs inputs;
  KernelOutputs outputs;
  SessionContext& session;
};

}  // namespace onebit
