// SPDX-License-Identifier: Apache-2.0
// The compute function of one fused group: validate the activation, gemm_q8, epilogue.
#pragma once
#include "group_plan.h"
#include "ort_api.h"
#include "session_counters.h"

namespace onebit {

struct FusedKernel : OrtNodeComputeInfo {
  FusedKernel(GroupPlan plan, Counters& session);

  GroupPlan plan;
  Counters& session;
};

}  // namespace onebit
