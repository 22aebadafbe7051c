// SPDX-License-Identifier: Apache-2.0
// Where a call goes before the device is tried: no device, rows policy, routes table, designs.
#include "engine/route_policy.h"

#include <gtest/gtest.h>

namespace onebit {
namespace {

TEST(RoutePolicy, RowsPolicyKeepsSmallCallsOnTheHost) {
  RoutePolicy p;
  p.min_device_rows = 8;
  EXPECT_EQ(choose_route(p, true, true, 64, 64, 7), RouteReason::RowsPolicy);
  EXPECT_EQ(choose_route(p, true, true, 64, 64, 8), RouteReason::Device);
  EXPECT_EQ(choose_route(p, false, true, 64, 64, 100), RouteReason::NoDevice);
}

TEST(RoutePolicy, RoutesTableThenDesigns) {
  RoutePolicy p;
  p.min_device_rows = 0;
  p.routes = RoutesTable::parse("64 64 1 host\n64 64 32 device\n", "t");
  EXPECT_EQ(choose_route(p, true, true, 64, 64, 4), RouteReason::Routes);
  EXPECT_EQ(choose_route(p, true, true, 64, 64, 32), RouteReason::Device);
  EXPECT_EQ(choose_route(p, true, false, 64, 64, 32), RouteReason::DesignsFailed);
  // Below the table's smallest rows, or another shape: the rows policy alone decides.
  EXPECT_EQ(choose_route(p, true, true, 64, 64, 0), RouteReason::Device);
  EXPECT_EQ(choose_route(p, true, true, 128, 64, 2), RouteReason::Device);
}

TEST(RoutePolicy, EveryReasonHasAName) {
  for (RouteReason r : {RouteReason::NoDevice, RouteReason::RowsPolicy, RouteReason::Routes, RouteReason::DesignsFailed,
                        RouteReason::BreakerOpen, RouteReason::Busy, RouteReason::Fallback, RouteReason::Device})
    EXPECT_STRNE(route_reason_name(r), "");
}

}  // namespace
}  // namespace onebit
