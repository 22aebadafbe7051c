// SPDX-License-Identifier: Apache-2.0
// The bounded, seeded fuzz run of the cost model's whole loading path: a cost file written with
// every combination of extreme constants (tiny, huge, denormal, at and just past each bound,
// zero, negative) is read by load_cost_model, then its modelled time computed for a call far
// larger than any model. Accepted means every constant inside its bounds and every modelled time
// finite; refused means the error names the file and the first bad key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "npu/cost_model.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

struct Constant {
  const char* key;
  double lo, hi;  // the documented bounds (cost_model.cpp)
};
const Constant kConstants[] = {{"launch_us", 1e-3, 1e6},
                               {"sync_call_us", 1e-3, 1e6},
                               {"sync_gbps", 1e-3, 1e5},
                               {"dram_gbps", 1e-3, 1e5},
                               {"int8_tops", 1e-3, 1e5}};

const double kValues[] = {4.9e-324,
                          2.2250738585072014e-308,
                          1e-308,
                          1e-6,
                          0.00099999999999999991,
                          1e-3,
                          0.5,
                          50,
                          1e5,
                          100000.00000000001,
                          1e6,
                          1000000.0000000001,
                          1e300,
                          1.7976931348623157e308,
                          0,
                          -0.0,
                          -1,
                          -1e308};

TEST(CostFileFuzz, ExtremeConstantsAreRefusedByKeyOrGiveFiniteTimes) {
  onebit_npu_test::TempDir tmp;
  const std::string path = tmp.file("costs.json");
  std::mt19937 rng(20261205);
  constexpr int kFiles = 1500;
  const std::vector<uint32_t> blocks = {32, 4};
  int accepted = 0;
  for (int i = 0; i < kFiles; ++i) {
    double values[std::size(kConstants)];
    std::string text = "{\"generation\": \"fuzz\"";
    const char* first_bad = nullptr;
    for (size_t k = 0; k < std::size(kConstants); ++k) {
      // Mostly values inside every bound (1e-3 to 1e5), so that combinations of extremes are tried.
      values[k] = rng() % 3 ? kValues[5 + rng() % 4] : kValues[rng() % std::size(kValues)];
      char number[40];
      std::snprintf(number, sizeof number, "%.17g", values[k]);
      text += std::string(", \"") + kConstants[k].key + "\": " + number;
      if (first_bad == nullptr && !(values[k] >= kConstants[k].lo && values[k] <= kConstants[k].hi))
        first_bad = kConstants[k].key;
    }
    std::remove(path.c_str());  // a new file, not one truncated: ext4 flushes on that, 2 ms each
    std::ofstream(path) << text << "}";
    const Result<CostModel> model = load_cost_model(path);
    SCOPED_TRACE(text);
    if (first_bad != nullptr) {
      ASSERT_FALSE(model);
      EXPECT_EQ(model.error().code, ErrorCode::kInvalidArgument);
      EXPECT_NE(model.error().reason.find("cost model " + path + ": key \"" + first_bad + "\""), std::string::npos)
          << model.error().reason;
      continue;
    }
    ASSERT_TRUE(model) << model.error().reason;
    ++accepted;
    // K and N far past any model, and many rows (each launch is planned, so not as many).
    for (const auto& [KN, rows] : {std::pair{1u, 1u}, {4096u, 36u}, {1u << 20, 1u << 16}}) {
      const ModelledCall t = model_rows(*model, KN, KN, rows, blocks);
      ASSERT_TRUE(std::isfinite(t.total_us()) && t.total_us() > 0) << KN << " " << rows << ": " << t.total_us();
    }
  }
  std::printf("cost file fuzz: %d files, %d accepted, %d refused\n", kFiles, accepted, kFiles - accepted);
  EXPECT_GT(accepted, kFiles / 10);
  EXPECT_LT(accepted, kFiles - kFiles / 10);
}

}  // namespace
}  // namespace onebit::npu
