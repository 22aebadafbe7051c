// SPDX-License-Identifier: Apache-2.0
// Where one call goes: the rows policy (kDeviceMinRows) and the routes table decide before the
// device is tried; the device itself may then be busy or fail. Every reason has its counter.
#pragma once
#include <cstdint>
#include <optional>

#include "engine/ep_options.h"
#include "engine/routes_table.h"

namespace onebit {

enum class RouteReason {
  NoDevice,
  HostOnlyKind,
  RowsPolicy,
  Routes,
  DesignsFailed,
  BreakerOpen,
  Busy,
  Fallback,
  Device
};
const char* route_reason_name(RouteReason reason);

struct RoutePolicy {
  int64_t min_device_rows = kDeviceMinRows;
  std::optional<RoutesTable> routes;
};

// The route of a call of M rows on (K, N) before the device is tried (Device = try it).
// has_device: the session has a device; has_designs: this group's designs loaded.
RouteReason choose_route(const RoutePolicy& policy, bool has_device, bool has_designs, int64_t K, int64_t N, int64_t M);

}  // namespace onebit
