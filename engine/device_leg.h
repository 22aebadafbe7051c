// SPDX-License-Identifier: Apache-2.0
// The device route of one call: take the lock, narrow the prepared activation to int8, run the
// group's DeviceGemm (A upload + sync, launches + wait, C sync back), fold the zero points into
// the accumulators. On any failure acc is untouched and the caller runs the host.
#pragma once
#include <cstdint>
#include <string>

#include "engine/group_device.h"
#include "engine/route_policy.h"
#include "engine/session_device.h"
#include "kernels/gemm_q8.h"

namespace onebit {

struct DeviceCall {
  RouteReason reason = RouteReason::Device;  // Device on success, else Busy or Fallback
  npu::CallStats stats;
  std::string error;  // for Fallback
};

DeviceCall run_on_device(SessionDevice& device, GroupDevice& group, const PreparedActivation& x,
                         const PackedWeights& weights, int32_t* acc);

}  // namespace onebit
