// SPDX-License-Identifier: Apache-2.0
// The emu device path (DeviceGemm on the emu backend) is bit-identical to a plain reference loop
// for many shapes, every M from 1 to 100, both weight layouts, and worst-case values.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "npu/device_gemm.h"
#include "npu/emu/design_builder.h"
#include "npu/emu/design_cache.h"
#include "npu/emu/emu_device.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

struct Shape {
  uint32_t K, N;
};

using EmuDevicePath = onebit_npu_test::EmuDeviceFixture;

class EmuExactness : public EmuDevicePath, public ::testing::WithParamInterface<Shape> {};

TEST_P(EmuExactness, EveryRowCountFrom1To100MatchesTheReference) {
  const auto [K, N] = GetParam();
  const uint32_t max_rows = 100;
  std::mt19937 rng(K * 7919u + N);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(max_rows) * K);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, max_rows, K, N);

  DesignCache cache(tmp_.file("designs"));
  for (WeightLayout layout : {WeightLayout::kKN, WeightLayout::kNK}) {
    const std::vector<int8_t> w_in = layout == WeightLayout::kKN ? w : onebit_npu_test::transpose(w, K, N);
    auto gemm = DeviceGemm::create(*device_, cache, K, N, w_in.data(), layout);
    ASSERT_TRUE(gemm) << gemm.error().reason;
    for (uint32_t rows = 1; rows <= max_rows; ++rows) {
      std::vector<int32_t> c(size_t(rows) * N, 0x7eadbeef);
      CallStats stats;
      Status s = (*gemm)->run(a.data(), rows, c.data(), &stats);
      ASSERT_TRUE(s) << s.to_string();
      for (size_t i = 0; i < c.size(); ++i)
        ASSERT_EQ(c[i], ref[i]) << "rows " << rows << " row " << i / N << " col " << i % N;
      EXPECT_EQ(stats.a_bytes_synced, uint64_t(rows) * K);
      EXPECT_EQ(stats.launches, plan_blocks(rows, (*gemm)->block_sizes()).size());
    }
  }
}

// Odd sizes, sizes around the tile edges (k_tile 256, n_tile 64) and degenerate ones.
INSTANTIATE_TEST_SUITE_P(Shapes, EmuExactness,
                         ::testing::Values(Shape{1, 1}, Shape{1, 37}, Shape{3, 5}, Shape{17, 9}, Shape{63, 65},
                                           Shape{64, 64}, Shape{100, 70}, Shape{255, 63}, Shape{256, 128},
                                           Shape{257, 129}, Shape{333, 31}, Shape{513, 7}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "K" + to_string(...).
                           std::string name = "K";
                           name += std::to_string(info.param.K);
                           name += "xN";
                           name += std::to_string(info.param.N);
                           return name;
                         });

TEST_F(EmuDevicePath, ProjectionShapeAtDecodeWidth) {
  // 1024x2048 at 36 rows: one m32 launch and one m4 launch.
  const uint32_t K = 1024, N = 2048, rows = 36;
  std::mt19937 rng(36);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(rows) * K);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, rows, K, N);
  DesignCache cache(tmp_.file("designs"));
  auto gemm = DeviceGemm::create(*device_, cache, K, N, w.data(), WeightLayout::kKN);
  ASSERT_TRUE(gemm) << gemm.error().reason;
  std::vector<int32_t> c(size_t(rows) * N);
  CallStats stats;
  ASSERT_TRUE((*gemm)->run(a.data(), rows, c.data(), &stats));
  for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], ref[i]) << i;
  EXPECT_EQ(stats.launches, 2u);
  EXPECT_EQ(stats.padded_rows, 0u);
  EXPECT_TRUE(stats.emulated);
}

TEST_F(EmuDevicePath, WorstCaseValuesAtTheLargestK) {
  // |sum| reaches 131071 × 16384 = 2147467264, just inside int32.
  const uint32_t K = kMaxK, N = 3, rows = 2;
  std::vector<int8_t> a(size_t(rows) * K, -128);
  std::vector<int8_t> w(size_t(K) * N);
  for (size_t k = 0; k < K; ++k) {
    w[k * N + 0] = -128;
    w[k * N + 1] = 127;
    w[k * N + 2] = static_cast<int8_t>(k % 2 ? 127 : -128);
  }
  for (size_t k = 0; k < K; ++k) a[K + k] = 127;  // row 1
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, rows, K, N);
  ASSERT_EQ(ref[0], int64_t(K) * 16384);
  DesignCache cache(tmp_.file("designs"));
  auto gemm = DeviceGemm::create(*device_, cache, K, N, w.data(), WeightLayout::kKN);
  ASSERT_TRUE(gemm) << gemm.error().reason;
  std::vector<int32_t> c(size_t(rows) * N);
  ASSERT_TRUE((*gemm)->run(a.data(), rows, c.data()));
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i], ref[i]) << i;
}

TEST_F(EmuDevicePath, ZeroRowsIsANoOpAndWeightsAreUploadedOnce) {
  DesignCache cache(tmp_.file("designs"));
  std::vector<int8_t> w(40 * 24, 3);
  auto gemm = DeviceGemm::create(*device_, cache, 40, 24, w.data(), WeightLayout::kKN);
  ASSERT_TRUE(gemm);
  EXPECT_EQ((*gemm)->setup_stats().weight_bytes, packed_weight_bytes(40, 24, choose_tiling(40, 24)));
  CallStats stats;
  ASSERT_TRUE((*gemm)->run(nullptr, 0, nullptr, &stats));
  EXPECT_EQ(stats.launches, 0u);
  EXPECT_EQ(stats.c_bytes_synced, 0u);
  // Two calls with the same weights and different A: the weight BO is reused (no re-upload).
  std::vector<int8_t> a1(40, 1), a2(40, 2);
  std::vector<int32_t> c1(24), c2(24);
  ASSERT_TRUE((*gemm)->run(a1.data(), 1, c1.data()));
  ASSERT_TRUE((*gemm)->run(a2.data(), 1, c2.data()));
  EXPECT_EQ(c1, std::vector<int32_t>(24, 40 * 3));
  EXPECT_EQ(c2, std::vector<int32_t>(24, 40 * 6));
}

// Two shapes on one device, called from four threads at once: every result exact.
TEST_F(EmuDevicePath, ConcurrentCallsFromThreads) {
  DesignCache cache(tmp_.file("designs"));
  struct Case {
    uint32_t K, N;
    std::vector<int8_t> w, a;
    std::vector<int64_t> ref;
    std::unique_ptr<DeviceGemm> gemm;
  };
  std::mt19937 rng(44);
  Case cases[2] = {{96, 40, {}, {}, {}, nullptr}, {130, 72, {}, {}, {}, nullptr}};
  for (Case& c : cases) {
    c.w = onebit_npu_test::random_int8(rng, size_t(c.K) * c.N);
    c.a = onebit_npu_test::random_int8(rng, size_t(40) * c.K);
    c.ref = onebit_npu_test::reference_gemm(c.a, c.w, 40, c.K, c.N);
    auto g = DeviceGemm::create(*device_, cache, c.K, c.N, c.w.data(), WeightLayout::kKN);
    ASSERT_TRUE(g) << g.error().reason;
    c.gemm = std::move(g).value();
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Case& c = cases[t % 2];
      for (uint32_t i = 0; i < 20; ++i) {
        const uint32_t rows = 1 + (i * 7 + uint32_t(t)) % 40;
        std::vector<int32_t> out(size_t(rows) * c.N);
        if (!c.gemm->run(c.a.data(), rows, out.data())) ++wrong;
        for (size_t j = 0; j < out.size(); ++j)
          if (out[j] != c.ref[j]) {
            ++wrong;
            break;
          }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace onebit::npu
