// SPDX-License-Identifier: Apache-2.0
// The probe's result structure and the exactness check on tiny shapes (never its timings).
#include "probes/shape_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "kernels/gemm_q8_kernels.h"
#include "npu/design.h"
#include "npu/emu/design_cache.h"
#include "npu/emu/failure_injection.h"
#include "npu_test_util.h"
#include "probes/spread.h"

namespace onebit::probes {
namespace {

// A private design cache and lock file, so the test never touches the user's (or contends with
// another test's lock).
class ShapeProbe : public ::testing::Test {
 protected:
  void TearDown() override { npu::set_injected_failure(npu::InjectedFailure::kNone); }
  ProbeOptions options(uint32_t K, uint32_t N) const {
    ProbeOptions o;
    o.K = K;
    o.N = N;
    o.rows = {1, 4, 36};
    o.repeat = 3;
    o.device = "emu";
    o.designs_dir = tmp_.file("designs");
    o.lock_path = tmp_.file("lock");
    return o;
  }
  onebit_npu_test::TempDir tmp_;
  onebit_npu_test::ScopedEnv no_device_override_{"ONEBIT_DEVICE", nullptr};
};

void expect_ordered(const Spread& s) {
  EXPECT_GE(s.min_ms, 0);
  EXPECT_LE(s.min_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.max_ms);
}

TEST_F(ShapeProbe, EmuResultsAreExactAndComplete) {
  const ProbeResult r = run_probe(options(64, 48));
  EXPECT_EQ(r.K, 64u);
  EXPECT_EQ(r.N, 48u);
  EXPECT_EQ(r.repeat, 3u);
  EXPECT_EQ(r.host_kernel, onebit::selected_kernel_name());
  EXPECT_EQ(r.device.requested, "emu");
  EXPECT_EQ(r.device.selected, "emu");
  EXPECT_EQ(r.device.name, "emu");
  EXPECT_TRUE(r.device.emulated);
  EXPECT_EQ(r.device.error, "");
  EXPECT_EQ(r.device.designs_built, 2u);  // m32 and m4, fresh cache
  EXPECT_EQ(r.device.designs_loaded, 2u);
  EXPECT_TRUE(std::filesystem::exists(npu::DesignCache(tmp_.file("designs")).path_of({npu::Target::kEmu, 64, 48, 32})));
  ASSERT_EQ(r.rows.size(), 3u);
  const uint32_t expected_rows[] = {1, 4, 36};
  const uint32_t expected_launches[] = {1, 1, 2};  // 1 = m4, 4 = m4, 36 = m32 + m4
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const RowsResult& row = r.rows[i];
    SCOPED_TRACE("rows " + std::to_string(row.rows));
    EXPECT_EQ(row.rows, expected_rows[i]);
    expect_ordered(row.host);
    ASSERT_TRUE(row.device.has_value());
    expect_ordered(row.device->total);
    expect_ordered(row.device->upload);
    expect_ordered(row.device->launch_wait);
    expect_ordered(row.device->c_sync);
    expect_ordered(row.device->epilogue);
    EXPECT_EQ(row.device->launches, expected_launches[i]);
    EXPECT_EQ(row.device->a_bytes, uint64_t(row.rows) * 64);
    EXPECT_EQ(row.device->c_bytes, uint64_t(row.rows) * 48 * 4);  // narrowed
    EXPECT_FALSE(row.device->c_whole);
    ASSERT_TRUE(row.ratio.has_value());
    EXPECT_NEAR(*row.ratio, row.host.median_ms / row.device->total.median_ms, 1e-12);
    ASSERT_TRUE(row.exact.has_value());
    EXPECT_TRUE(*row.exact);
  }
  // A second probe of the shape reads the cached designs.
  const ProbeResult again = run_probe(options(64, 48));
  EXPECT_EQ(again.device.designs_built, 0u);
  EXPECT_EQ(again.device.designs_loaded, 2u);
}

TEST_F(ShapeProbe, OddShapeIsExact) {
  ProbeOptions o = options(33, 7);
  o.rows = {3, 37};
  const ProbeResult r = run_probe(o);
  ASSERT_EQ(r.rows.size(), 2u);
  for (const RowsResult& row : r.rows) {
    ASSERT_TRUE(row.exact.has_value());
    EXPECT_TRUE(*row.exact) << row.rows;
  }
}

TEST_F(ShapeProbe, NoDeviceGivesOnlyTheHostColumn) {
  ProbeOptions o = options(16, 16);
  o.device = "none";
  const ProbeResult r = run_probe(o);
  EXPECT_EQ(r.device.selected, "none");
  EXPECT_EQ(r.device.error, "");
  for (const RowsResult& row : r.rows) {
    EXPECT_FALSE(row.device.has_value());
    EXPECT_FALSE(row.ratio.has_value());
    EXPECT_FALSE(row.exact.has_value());
    expect_ordered(row.host);
  }
}

TEST_F(ShapeProbe, ADeviceErrorIsReportedAndTheHostColumnStays) {
  npu::set_injected_failure(npu::InjectedFailure::kLaunch);
  const ProbeResult r = run_probe(options(16, 16));
  EXPECT_NE(r.device.error.find("injected launch failure"), std::string::npos) << r.device.error;
  for (const RowsResult& row : r.rows) {
    EXPECT_FALSE(row.device.has_value());
    EXPECT_GT(row.host.max_ms, 0);
  }
}

TEST_F(ShapeProbe, ABadDesignIsRejectedWithItsReason) {
  const npu::DesignCache cache(tmp_.file("designs"));
  std::filesystem::create_directories(cache.version_dir());
  FILE* f = fopen(cache.path_of({npu::Target::kEmu, 16, 16, 32}).c_str(), "wb");
  ASSERT_NE(f, nullptr);
  fputs("not an ELF file", f);
  fclose(f);
  const ProbeResult r = run_probe(options(16, 16));
  EXPECT_NE(r.device.error.find("design"), std::string::npos) << r.device.error;
  EXPECT_FALSE(r.rows.at(0).device.has_value());
}

TEST_F(ShapeProbe, InvalidOptionsThrowWithAReason) {
  ProbeOptions o = options(0, 8);
  EXPECT_THROW(run_probe(o), ProbeOptionError);
  o = options(8, 8);
  o.rows = {};
  EXPECT_THROW(run_probe(o), ProbeOptionError);
  o = options(8, 8);
  o.repeat = 0;
  EXPECT_THROW(run_probe(o), ProbeOptionError);
  o = options(8, 8);
  o.device = "gpu";
  try {
    run_probe(o);
    FAIL() << "no throw";
  } catch (const ProbeOptionError& e) {
    EXPECT_STREQ(e.what(), "device='gpu' is invalid: use auto, emu or none");
  }
}

TEST(Spread, MedianMinMax) {
  const Spread odd = spread_of({3, 1, 2});
  EXPECT_EQ(odd.median_ms, 2);
  EXPECT_EQ(odd.min_ms, 1);
  EXPECT_EQ(odd.max_ms, 3);
  EXPECT_EQ(spread_of({4, 1, 2, 3}).median_ms, 2.5);
  EXPECT_EQ(spread_of({}).max_ms, 0);
}

TEST_F(ShapeProbe, ACostModelGivesTheModelledTimeOfEachRowsValue) {
  ProbeOptions o = options(1024, 1024);
  o.rows = {1, 12};
  o.cost_model = "xdna1";
  const ProbeResult r = run_probe(o);
  EXPECT_EQ(r.device.cost_model, "xdna1");
  ASSERT_EQ(r.rows.size(), 2u);
  for (const RowsResult& row : r.rows) {
    SCOPED_TRACE("rows " + std::to_string(row.rows));
    ASSERT_TRUE(row.device.has_value());
    ASSERT_TRUE(row.device->modelled.has_value());
    const double expected =
        npu::model_rows(*npu::cost_model_for("xdna1"), 1024, 1024, row.rows, std::vector<uint32_t>{32, 4}).total_us();
    EXPECT_DOUBLE_EQ(row.device->modelled->total_us(), expected);
    ASSERT_TRUE(row.modelled_ratio.has_value());
    EXPECT_NEAR(*row.modelled_ratio, row.host.median_ms / (expected / 1e3), 1e-12);
    EXPECT_TRUE(row.exact.value_or(false));
  }
  EXPECT_EQ(r.rows[1].device->launches, 1u);  // 12 rows: one m32 launch as XDNA would run it
}

TEST_F(ShapeProbe, ABadCostModelIsAnOptionError) {
  ProbeOptions o = options(64, 48);
  o.cost_model = "xdna7";
  EXPECT_THROW(run_probe(o), ProbeOptionError);
  o.cost_model = tmp_.file("missing.json");
  try {
    run_probe(o);
    ADD_FAILURE() << "no error";
  } catch (const ProbeOptionError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos) << e.what();
  }
}

TEST_F(ShapeProbe, WithoutACostModelNothingIsModelled) {
  const ProbeResult r = run_probe(options(64, 48));
  EXPECT_EQ(r.device.cost_model, "");
  for (const RowsResult& row : r.rows) {
    EXPECT_FALSE(row.device->modelled.has_value());
    EXPECT_FALSE(row.modelled_ratio.has_value());
  }
}

}  // namespace
}  // namespace onebit::probes
