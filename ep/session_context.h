// SPDX-License-Identifier: Apache-2.0
// What one session's EP and its fused kernels share: options, counters, the device, the
// routes table and the trace file.
#pragma once
#include <memory>
#include <optional>

#include "device_route.h"
#include "ep_options.h"
#include "ort_api.h"
#include "routes_table.h"
#include "session_counters.h"
#include "trace_file.h"
#include "warn_once.h"

namespace onebit {

struct SessionContext {
  EpOptions options;
  const OrtLogger* logger = nullptr;
  Counters counters;
  std::unique_ptr<SessionDevice> device;  // null: host only
  std::optional<RoutesTable> routes;
  std::unique_ptr<TraceFile> trace_file;  // null: no per-call events
  WarnOnce device_warnings;               // each distinct device failure is logged once
};

}  // namespace onebit
