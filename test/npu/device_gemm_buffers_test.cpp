// SPDX-License-Identifier: Apache-2.0
// DeviceGemm's A and C buffers: kept for the session while they are small, released after a call
// so large that keeping them would pin its memory (host and device copies) until the session ends.
#include <gtest/gtest.h>

#include <random>

#include "npu/device_gemm.h"
#include "npu/emu/design_cache.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

constexpr uint32_t K = 64, N = 64;

TEST(DeviceGemmBuffers, SmallCallsKeepTheirBuffersAHugeOneReleasesThem) {
  onebit_npu_test::TempDir tmp;
  EmuDeviceOptions options;
  options.lock_path = tmp.file("lock");
  auto device = open_emu_device(options);
  ASSERT_TRUE(device);
  std::mt19937 rng(3);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, K * N);
  auto gemm = DeviceGemm::create(**device, DesignCache(tmp.file("designs")), K, N, w.data(), WeightLayout::kKN);
  ASSERT_TRUE(gemm) << gemm.error().to_string();

  // Rows whose A + C buffers exceed the retained size: (K + 4N) bytes per row.
  const uint32_t huge = uint32_t(DeviceGemm::kRetainedBufferBytes / (K + 4 * N)) + 64;
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(huge) * K);
  std::vector<int32_t> c(size_t(huge) * N);

  ASSERT_TRUE((*gemm)->run(a.data(), 36, c.data()));
  EXPECT_EQ((*gemm)->capacity_rows(), 36u);  // 32 + 4: kept for the next call

  ASSERT_TRUE((*gemm)->run(a.data(), huge, c.data()));
  EXPECT_EQ((*gemm)->capacity_rows(), 0u);
  // The huge call's results are right (spot-check its last row), and the device still works.
  const std::vector<int8_t> last(a.end() - K, a.end());
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(last, w, 1, K, N);
  for (uint32_t n = 0; n < N; ++n) EXPECT_EQ(c[size_t(huge - 1) * N + n], ref[n]) << n;
  ASSERT_TRUE((*gemm)->run(a.data(), 4, c.data()));
  EXPECT_EQ((*gemm)->capacity_rows(), 4u);
}

}  // namespace
}  // namespace onebit::npu
