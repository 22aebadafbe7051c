// SPDX-License-Identifier: Apache-2.0
// The compute function of one fused group: validate the activation, route the call to the
// device or the host gemm_q8, run the shared epilogue, count.
#pragma once
#include "device_route.h"
#include "group_plan.h"
#include "ort_api.h"
#include "session_context.h"

namespace onebit {

struct FusedKernel : OrtNodeComputeInfo {
  FusedKernel(GroupPlan plan, GroupDevice device, SessionContext& session);

  GroupPlan plan;
  GroupDevice device;  // the group's device leg (empty without a device)
  SessionContext& session;
};

}  // namespace onebit
