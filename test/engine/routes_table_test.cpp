// SPDX-License-Identifier: Apache-2.0
// The routes file: parsing, the "largest listed rows <= M" rule, and malformed lines.
#include "engine/routes_table.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace onebit {
namespace {

TEST(RoutesTable, LargestListedRowsAtOrBelowMDecides) {
  const RoutesTable t = RoutesTable::parse(
      "# onebit routes v1\n1024 2048 1 host\n1024 2048 32 device   # from a probe\n\n1024 2048 128 host\n", "t");
  EXPECT_EQ(t.route(1024, 2048, 1), Route::Host);
  EXPECT_EQ(t.route(1024, 2048, 31), Route::Host);
  EXPECT_EQ(t.route(1024, 2048, 32), Route::Device);
  EXPECT_EQ(t.route(1024, 2048, 127), Route::Device);
  EXPECT_EQ(t.route(1024, 2048, 5000), Route::Host);
}

TEST(RoutesTable, SaysNothingBelowTheSmallestRowsOrForAnotherShape) {
  const RoutesTable t = RoutesTable::parse("64 64 8 device\n", "t");
  EXPECT_EQ(t.route(64, 64, 7), std::nullopt);
  EXPECT_EQ(t.route(64, 128, 8), std::nullopt);
  EXPECT_EQ(t.route(64, 64, 8), Route::Device);
}

TEST(RoutesTable, MalformedLinesNameTheFileAndLine) {
  for (const char* bad : {"64 64 8 gpu\n", "64 64 8\n", "64 64 0 host\n", "0 64 8 host\n", "64 64 8 host extra\n",
                          "64 x 8 host\n", "x 64 8 host\n"}) {
    try {
      RoutesTable::parse(std::string("# header\n") + bad, "routes.txt");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("routes file 'routes.txt' line 2"), std::string::npos) << e.what();
    }
  }
}

TEST(RoutesTable, TwoRoutesForOneShapeAndRowsNameBothLines) {
  try {
    RoutesTable::parse("64 64 1 host\n64 64 4 device\n# again\n64 64 4 host\n", "routes.txt");
    FAIL() << "accepted a contradiction";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "onebit: routes file 'routes.txt' lines 2 and 4 contradict each other: K=64 N=64 rows=4 is "
                 "device on line 2 and host on line 4");
  }
  // The same entry twice agrees with itself: one entry.
  const RoutesTable t = RoutesTable::parse("64 64 4 device\n64 64 4 device\n", "t");
  EXPECT_EQ(t.entries().at({64, 64}).size(), 1u);
  EXPECT_EQ(t.route(64, 64, 4), Route::Device);
}

TEST(RoutesTable, MissingFileNamesThePath) {
  try {
    RoutesTable::load("/nonexistent/routes.txt");
    FAIL() << "loaded a missing file";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/routes.txt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onebit
