// SPDX-License-Identifier: Apache-2.0
// One call of one fused group, the same for the EP and the probes: prepare the activation,
// choose the route, run the device leg (falling back to the host on any device trouble) or the
// host leg, then the shared epilogue. Returns what happened; count_call() turns it into counters.
#pragma once
#include <cstdint>
#include <string>

#include "engine/counters.h"
#include "engine/fused_group.h"
#include "engine/host_leg.h"
#include "engine/route_policy.h"
#include "engine/session_device.h"

namespace onebit {

// What a call needs from its session.
struct CallSite {
  SessionDevice* device = nullptr;  // null: host only
  const RoutePolicy* policy = nullptr;
  TaskRunner tasks;                 // empty: one thread
};

struct CallResult {
  RouteReason reason = RouteReason::NoDevice;
  npu::CallStats device_stats;  // of a device call (also of a failed one, as far as it got)
  std::string device_error;     // why the device failed (reason Fallback or Busy)
  uint64_t ns = 0;              // the whole call: preparation, route, kernel or device, epilogue
  uint64_t epilogue_ns = 0;     // device route: fold + epilogue after the accumulators came back
  bool on_device() const { return reason == RouteReason::Device; }
};

// Batch entry `batch` of group g (x: M × K rows of it) into acc (M × N scratch) and y (M × N
// outputs), through the group's epilogue. The device leg is tried only for unbatched weights.
CallResult run_call(FusedGroup& g, const CallSite& site, size_t batch, const Activation& x, int32_t* acc, void* y);

// The same through this call's own epilogue (a group whose activation scale changes per call).
CallResult run_call(FusedGroup& g, const CallSite& site, size_t batch, const Activation& x, const Epilogue& epilogue,
                    int32_t* acc, void* y);

// The same for an activation already prepared (quantized straight into the kernels' layout:
// engine/activation_quantize.h); the result's time starts here.
CallResult run_call(FusedGroup& g, const CallSite& site, size_t batch, const PreparedActivation& x,
                    const Epilogue& epilogue, int32_t* acc, void* y);

// Adds a call's route, device work and time to the counters.
void count_call(Counters& counters, const CallResult& call);

}  // namespace onebit
