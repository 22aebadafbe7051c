// SPDX-License-Identifier: Apache-2.0
// DeviceGemm with a cost model: each call reports the modelled time of the launches it really
// ran, blocks are planned with the model's launch cost, and results stay exact.
#include <gtest/gtest.h>

#include <random>

#include "npu/cost_model.h"
#include "npu/device_gemm.h"
#include "npu/emu/design_builder.h"
#include "npu/emu/design_cache.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using ModelledDeviceCall = onebit_npu_test::EmuDeviceFixture;

TEST_F(ModelledDeviceCall, ReportsTheModelOfTheLaunchesRunAndStaysExact) {
  const uint32_t K = 1024, N = 1024;
  std::mt19937 rng(12);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(40) * K);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, 40, K, N);
  DesignCache cache(tmp_.file("designs"));
  GemmOptions options;
  options.cost_model = *cost_model_for("xdna1");
  auto gemm = DeviceGemm::create(*device_, cache, K, N, w.data(), WeightLayout::kKN, options);
  ASSERT_TRUE(gemm) << gemm.error().reason;
  for (uint32_t rows : {1u, 12u, 40u}) {
    std::vector<int32_t> c(size_t(rows) * N);
    CallStats stats;
    ASSERT_TRUE((*gemm)->run(a.data(), rows, c.data(), &stats));
    for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], ref[i]) << rows << " rows, element " << i;
    ASSERT_TRUE(stats.modelled.has_value());
    // The same work computed on its own: the plan with the model's launch cost (705 rows here),
    // A rows × K, C narrowed to rows × N × 4.
    const ModelledCall expected = model_rows(*options.cost_model, K, N, rows, std::vector<uint32_t>{32, 4});
    EXPECT_DOUBLE_EQ(stats.modelled->total_us(), expected.total_us()) << rows;
    EXPECT_DOUBLE_EQ(stats.modelled->launch_us, 50.0 * stats.launches) << rows;
  }
  // 12 rows: one padded m32 launch (three m4 launches without a model); 40 rows: two m32.
  CallStats stats;
  std::vector<int32_t> c(size_t(12) * N);
  ASSERT_TRUE((*gemm)->run(a.data(), 12, c.data(), &stats));
  EXPECT_EQ(stats.launches, 1u);
  EXPECT_EQ(stats.padded_rows, 20u);
}

TEST_F(ModelledDeviceCall, NoModelNoModelledTime) {
  std::mt19937 rng(3);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(64) * 64);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(12) * 64);
  DesignCache cache(tmp_.file("designs"));
  auto gemm = DeviceGemm::create(*device_, cache, 64, 64, w.data(), WeightLayout::kKN);
  ASSERT_TRUE(gemm) << gemm.error().reason;
  std::vector<int32_t> c(size_t(12) * 64);
  CallStats stats;
  ASSERT_TRUE((*gemm)->run(a.data(), 12, c.data(), &stats));
  EXPECT_FALSE(stats.modelled.has_value());
  EXPECT_EQ(stats.launches, 3u);  // the emulator's default plan: 12 = 4 + 4 + 4
}

}  // namespace
}  // namespace onebit::npu
