// SPDX-License-Identifier: Apache-2.0
// One batch entry of one call of a fused group (run_group's step): choose the route, run the
// device leg (falling back to the host on any device trouble) or the host leg, then the shared
// epilogue. Returns what happened; count_call() turns it into counters.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "engine/counters.h"
#include "engine/fused_group.h"
#include "engine/host_leg.h"
#include "engine/route_policy.h"
#include "engine/session_device.h"

namespace onebit {

// What a call needs from its session.
struct CallResources {
  SessionDevice* device = nullptr;  // null: host only
  const RoutePolicy* policy = nullptr;
  TaskRunner tasks;  // empty: one thread
  // The session's intra-op threads sleep between calls (intra_op_threads_sleep), so a call split
  // over them first waits for one to wake (split_over_threads).
  bool threads_sleep = false;
};

using CallClock = std::chrono::steady_clock;

// Nanoseconds from start to now.
uint64_t ns_since(CallClock::time_point start);

struct CallResult {
  RouteReason reason = RouteReason::NoDevice;
  npu::CallStats device_stats;  // of a device call (also of a failed one, as far as it got)
  std::string device_error;     // why the device failed (reason Fallback or Busy)
  CallClock::time_point start;  // run_group's: before the activation was prepared
  uint64_t ns = 0;              // the whole call: preparation, route, kernel or device, epilogue
  uint64_t epilogue_ns = 0;     // device route: fold + epilogue after the accumulators came back
  bool on_device() const { return reason == RouteReason::Device; }
};

// The route of a call whose group kind the device has no design for (counted when there is a device).
inline RouteReason host_only_route(const CallResources& resources) {
  return resources.device ? RouteReason::HostOnlyKind : RouteReason::NoDevice;
}

// Batch entry `batch` of group g for the prepared activation x (x.M rows) into acc (M × N scratch)
// and y (M × N outputs) through `epilogue` (the group's, or the call's own when its activation
// scale changes per call). The device leg is tried only for unbatched weights (batched ones are
// host-only). The result's time starts here.
CallResult run_call(FusedGroup& g, const CallResources& resources, size_t batch, const PreparedActivation& x,
                    const Epilogue& epilogue, int32_t* acc, void* y);

// Adds a call's route, device work and time to the counters.
void count_call(Counters& counters, const CallResult& call);

}  // namespace onebit
