// SPDX-License-Identifier: Apache-2.0
// What one session's EP and its fused kernels share: options, counters, the device, the route
// policy, the trace file and the packed-weights cache folder.
#pragma once
#include <atomic>
#include <memory>
#include <optional>

#include "base/warn_once.h"
#include "engine/counters.h"
#include "engine/ep_options.h"
#include "engine/packed_cache.h"
#include "engine/route_policy.h"
#include "engine/session_device.h"
#include "ort_api.h"
#include "trace_file.h"

namespace onebit {

struct SessionContext {
  EpOptions options;
  const OrtLogger* logger = nullptr;
  Counters counters;
  std::unique_ptr<SessionDevice> device;  // null: host only
  RoutePolicy policy;
  std::unique_ptr<TraceFile> trace_file;       // null: no per-call events
  WarnOnce device_warnings;                    // each distinct device failure is logged once
  std::atomic<bool> warned_no_designs{false};  // a group without device designs was logged as a warning
  std::optional<PackedCache> packed_cache;     // option packed_cache_dir; none: packed weights stay in the process
  bool threads_sleep = false;                  // CallResources'
};

}  // namespace onebit
