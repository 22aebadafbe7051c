// SPDX-License-Identifier: Apache-2.0
// Which fused float outputs the host route streams past the caches: large ones only (1 MiB and up),
// and only where streaming stores can write them (y 64-byte aligned, rows a multiple of 64 bytes).
// The streamed values themselves are checked against the epilogue in the kernel tests.
#include "engine/host_leg.h"

#include <gtest/gtest.h>

namespace {

alignas(64) float aligned[16];

TEST(HostLeg, StreamsOnlyLargeAlignedFloatOutputs) {
  EXPECT_TRUE(onebit::streams_float_output(1024, 1536, aligned));       // 6 MiB
  EXPECT_TRUE(onebit::streams_float_output(128, 3072, aligned));        // 1.5 MiB
  EXPECT_TRUE(onebit::streams_float_output(256, 1024, aligned));        // exactly 1 MiB
  EXPECT_FALSE(onebit::streams_float_output(255, 1024, aligned));       // just under
  EXPECT_FALSE(onebit::streams_float_output(128, 1536, aligned));       // 768 KiB: stays in cache
  EXPECT_FALSE(onebit::streams_float_output(1, 49152, aligned));        // one decode row
  EXPECT_FALSE(onebit::streams_float_output(1024, 1536, aligned + 1));  // y not 64-byte aligned
  EXPECT_FALSE(onebit::streams_float_output(4096, 1000, aligned));      // rows of 4000 bytes
  EXPECT_FALSE(onebit::streams_float_output(0, 1536, aligned));
}

}  // namespace
