// SPDX-License-Identifier: Apache-2.0
#include "engine/group_call.h"

#include <chrono>

#include "engine/device_leg.h"

namespace onebit {

uint64_t ns_since(CallClock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(CallClock::now() - start).count());
}

CallResult run_call(FusedGroup& g, const CallResources& resources, size_t batch, const PreparedActivation& prepared,
                    const Epilogue& epilogue, int32_t* acc, void* y) {
  const auto start = CallClock::now();
  const PackedWeights& w = *g.weights[batch];
  CallResult result;
  result.reason = g.weights.size() == 1 ? choose_route(*resources.policy, resources.device != nullptr,
                                                       g.device.gemm != nullptr, g.K, g.N, prepared.M)
                                        : host_only_route(resources);
  if (result.reason == RouteReason::Device && !resources.device->breaker().allow())
    result.reason = RouteReason::BreakerOpen;
  if (result.reason == RouteReason::Device) {
    DeviceCall call = run_on_device(*resources.device, g.device, prepared, w, acc);
    DeviceBreaker& breaker = resources.device->breaker();
    if (call.reason == RouteReason::Device)
      breaker.record_success();
    else if (call.reason == RouteReason::Fallback)
      breaker.record_failure();
    else
      breaker.record_not_tried();
    result.reason = call.reason;
    result.device_stats = call.stats;
    result.device_error = std::move(call.error);
  }
  if (result.on_device()) {
    const auto epilogue_start = CallClock::now();
    epilogue.apply(acc, prepared.M, g.N, y);
    result.epilogue_ns = ns_since(epilogue_start);
  } else {
    run_host(prepared, w, epilogue, acc, y, resources.tasks);
  }
  result.ns = ns_since(start);
  return result;
}

void count_call(Counters& counters, const CallResult& call) {
  switch (call.reason) {
    case RouteReason::RowsPolicy:
      count(counters, Counter::HostRowsPolicy);
      break;
    case RouteReason::Routes:
      count(counters, Counter::HostRoutes);
      break;
    case RouteReason::DesignsFailed:
    case RouteReason::Fallback:
      count(counters, Counter::DeviceFallbacks);
      break;
    case RouteReason::BreakerOpen:
      count(counters, Counter::DeviceBreakerSkips);
      break;
    case RouteReason::Busy:
      count(counters, Counter::DeviceBusy);
      break;
    case RouteReason::Device:
      count(counters, Counter::DeviceCalls);
      break;
    case RouteReason::HostOnlyKind:
      count(counters, Counter::HostOnlyKind);
      break;
    case RouteReason::NoDevice:
      break;
  }
  if (call.on_device()) {
    count(counters, Counter::DeviceLaunches, call.device_stats.launches);
    count(counters, Counter::ABytesSynced, call.device_stats.a_bytes_synced);
    count(counters, Counter::CBytesSynced, call.device_stats.c_bytes_synced);
    count(counters, call.device_stats.c_whole ? Counter::CSyncsWhole : Counter::CSyncsNarrowed);
  }
  count(counters, call.on_device() ? Counter::DeviceNs : Counter::HostNs, call.ns);
}

}  // namespace onebit
