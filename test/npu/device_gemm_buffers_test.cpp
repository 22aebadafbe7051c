// SPDX-License-Identifier: Apache-2.0
// DeviceGemm's A and C buffers: kept for the session while they are small, released after a call
// so large that keeping them would pin its memory (host and device copies) until the session ends.
// Its W buffer: read back value by value (uploaded_from, what a shared store matches by), and
// taken from the store it is given.
#include <gtest/gtest.h>

#include <algorithm>
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

TEST(DeviceGemmBuffers, UploadedWeightsReadBackOnlyFromTheirOwnValues) {
  onebit_npu_test::TempDir tmp;
  EmuDeviceOptions options;
  options.lock_path = tmp.file("lock");
  auto device = open_emu_device(options);
  ASSERT_TRUE(device);
  constexpr uint32_t k = 37, n = 21;  // padding in both tile directions
  std::mt19937 rng(4);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, k * n);
  const Tiling tiling{16, 8};
  Result<DeviceWeights> up = upload_weights(**device, w.data(), WeightLayout::kKN, k, n, tiling);
  ASSERT_TRUE(up) << up.error().to_string();
  EXPECT_EQ(up->bo->size(), packed_weight_bytes(k, n, tiling));
  EXPECT_TRUE(uploaded_from(*up, w.data(), WeightLayout::kKN, k, n));
  // The same matrix given N×K reads back from the same bytes.
  EXPECT_TRUE(uploaded_from(*up, onebit_npu_test::transpose(w, k, n).data(), WeightLayout::kNK, k, n));
  for (size_t i : {size_t(0), size_t(k * n / 2), size_t(k * n - 1)}) {
    std::vector<int8_t> changed = w;
    changed[i] = static_cast<int8_t>(changed[i] + 1);
    EXPECT_FALSE(uploaded_from(*up, changed.data(), WeightLayout::kKN, k, n)) << i;
  }
  EXPECT_FALSE(uploaded_from(*up, w.data(), WeightLayout::kNK, k, n));  // read as its transpose
  EXPECT_FALSE(uploaded_from(*up, w.data(), WeightLayout::kKN, n, k));  // another shape
}

// A store that hands every DeviceGemm the one upload it made first.
struct OneUpload final : WeightStore {
  std::shared_ptr<const DeviceWeights> held;
  int uploads = 0;
  Result<std::shared_ptr<const DeviceWeights>> weights(Device& device, const int8_t* w, WeightLayout layout, uint32_t k,
                                                       uint32_t n, const Tiling& tiling) override {
    if (!held) {
      Result<DeviceWeights> up = upload_weights(device, w, layout, k, n, tiling);
      if (!up) return up.error();
      held = std::make_shared<const DeviceWeights>(std::move(up).value());
      ++uploads;
    }
    return held;
  }
};

TEST(DeviceGemmBuffers, TwoGemmsOfOneStoreReadOneWeightBufferAndKeepTheirOwnAAndC) {
  onebit_npu_test::TempDir tmp;
  EmuDeviceOptions options;
  options.lock_path = tmp.file("lock");
  auto device = open_emu_device(options);
  ASSERT_TRUE(device);
  std::mt19937 rng(5);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, K * N);
  DesignCache cache(tmp.file("designs"));
  OneUpload store;
  auto first = DeviceGemm::create(**device, cache, K, N, w.data(), WeightLayout::kKN, {}, store);
  auto second = DeviceGemm::create(**device, cache, K, N, w.data(), WeightLayout::kKN, {}, store);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(store.uploads, 1);
  EXPECT_EQ(&(*first)->weights(), &(*second)->weights());
  // Each computes with its own A and C, one call after the other and interleaved by rows.
  for (uint32_t rows : {36u, 5u}) {
    const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(rows) * K);
    const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, rows, K, N);
    std::vector<int32_t> c1(size_t(rows) * N), c2(size_t(rows) * N);
    ASSERT_TRUE((*first)->run(a.data(), rows, c1.data()));
    ASSERT_TRUE((*second)->run(a.data(), rows, c2.data()));
    EXPECT_TRUE(std::equal(c1.begin(), c1.end(), ref.begin())) << rows;
    EXPECT_EQ(c1, c2) << rows;
  }
  EXPECT_EQ((*first)->capacity_rows(), 36u);  // its own A and C kept the 36-row call's size
  EXPECT_EQ((*second)->capacity_rows(), 36u);
}

}  // namespace
}  // namespace onebit::npu
