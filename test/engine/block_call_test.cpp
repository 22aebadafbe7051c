// SPDX-License-Identifier: Apache-2.0
// How a MatMulNBits call splits into tasks: one-row calls into a power of two of tasks of at least
// 64 KiB, more rows into up to 16; and when the session's threads sleep between calls, small calls
// not at all. The outputs do not depend on the split (each task writes its own columns): the Python
// tests check them against the contract with threads spinning and sleeping.
#include "engine/block_call.h"

#include <gtest/gtest.h>

#include <string>

#include "kernels/gemm_w4a8_kernels.h"

namespace {

onebit::PackedNBits geometry(int64_t K, int64_t N) {
  onebit::PackedNBits w;
  w.K = K;
  w.N = N;
  return w;  // 4 bits, block 32, no zero points: 20 bytes a weight column and k-block
}

int64_t tasks(const onebit::PackedNBits& w, int64_t M, bool threads_sleep) {
  const int64_t per_task = onebit::block_call_tiles_per_task(w, M, threads_sleep);
  return (w.tiles() + per_task - 1) / per_task;
}

TEST(BlockCallTasks, OneRowTasksHoldAtLeast64KiB) {
  EXPECT_EQ(tasks(geometry(576, 192), 1, false), 1);   // 69 KiB
  EXPECT_EQ(tasks(geometry(576, 576), 1, false), 2);   // 207 KiB
  EXPECT_EQ(tasks(geometry(576, 1536), 1, false), 8);  // 553 KiB
  EXPECT_EQ(tasks(geometry(576, 49152), 1, false), 16);
}

// The estimates in the comments: the AVX-512 VNNI kernel's 100 multiply-adds a ns · the AVX2 and
// AVX-VNNI kernels' 50. The portable kernel's 0.16 makes every call here long: it splits them all.
TEST(BlockCallTasks, SleepingThreadsAreWokenOnlyForLongCalls) {
  if (std::string(onebit::selected_w4a8_kernel().name) == "portable")
    GTEST_SKIP() << "the portable kernel: every call here is estimated at 100 µs or more";
  // Under 100 µs estimated on one thread: one task.
  EXPECT_EQ(tasks(geometry(576, 576), 1, true), 1);    // 21 · 24 µs
  EXPECT_EQ(tasks(geometry(1024, 1024), 1, true), 1);  // 65 · 76 µs
  EXPECT_EQ(tasks(geometry(576, 192), 32, true), 1);   // 41 · 77 µs
  EXPECT_EQ(tasks(geometry(576, 576), 8, true), 1);    // 44 · 70 µs
  // Longer: split as with spinning threads.
  EXPECT_EQ(tasks(geometry(1024, 3072), 1, true), tasks(geometry(1024, 3072), 1, false));  // 195 · 227 µs
  EXPECT_GT(tasks(geometry(1024, 3072), 1, true), 1);
  EXPECT_EQ(tasks(geometry(576, 576), 32, true), tasks(geometry(576, 576), 32, false));  // 123 · 229 µs
  EXPECT_GT(tasks(geometry(576, 576), 32, true), 1);
}

TEST(BlockCallTasks, SleepingThreadsSplitEveryCallOfThePortableKernel) {
  if (std::string(onebit::selected_w4a8_kernel().name) != "portable")
    GTEST_SKIP() << "not the portable kernel (ONEBIT_KERNEL=portable runs it)";
  EXPECT_EQ(tasks(geometry(576, 576), 1, true), tasks(geometry(576, 576), 1, false));  // 2.1 ms
  EXPECT_GT(tasks(geometry(576, 576), 1, true), 1);
}

TEST(BlockCallTasks, ManyRowsTakeUpTo16TasksOfWholeRowTiles) {
  const onebit::PackedNBits w = geometry(576, 576);  // 72 tiles
  const int64_t per_task = onebit::block_call_tiles_per_task(w, 32, false);
  EXPECT_EQ(per_task % onebit::w4a8_row_tile_step(), 0);
  EXPECT_LE(tasks(w, 32, false), 16);
  EXPECT_GE(tasks(w, 32, false), 8);
  EXPECT_EQ(tasks(geometry(576, 8), 32, false), 1);  // one tile
}

}  // namespace
