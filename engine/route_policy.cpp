// SPDX-License-Identifier: Apache-2.0
#include "engine/route_policy.h"

namespace onebit {

const char* route_reason_name(RouteReason reason) {
  switch (reason) {
    case RouteReason::NoDevice:
      return "no-device";
    case RouteReason::HostOnlyKind:
      return "host-only-kind";
    case RouteReason::RowsPolicy:
      return "rows<min_device_rows";
    case RouteReason::Routes:
      return "routes";
    case RouteReason::DesignsFailed:
      return "designs-failed";
    case RouteReason::BreakerOpen:
      return "device-breaker-open";
    case RouteReason::Busy:
      return "device-busy";
    case RouteReason::Fallback:
      return "device-fallback";
    case RouteReason::Device:
      return "device";
  }
  return "";
}

RouteReason choose_route(const RoutePolicy& policy, bool has_device, bool has_designs, int64_t K, int64_t N,
                         int64_t M) {
  if (!has_device) return RouteReason::NoDevice;
  if (M < policy.min_device_rows) return RouteReason::RowsPolicy;
  if (policy.routes && policy.routes->route(K, N, M) == Route::Host) return RouteReason::Routes;
  if (!has_designs) return RouteReason::DesignsFailed;
  return RouteReason::Device;
}

}  // namespace onebit
