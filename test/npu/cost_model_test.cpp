// SPDX-License-Identifier: Apache-2.0
// The XDNA cost model: its arithmetic against hand-computed cases, monotonic in rows, K and N,
// the original system's finding (on XDNA a one-row call is slower on the device than on the
// host) and the device winning large calls; cost files and their errors.
#include "npu/cost_model.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/json_object.h"

namespace onebit::npu {
namespace {

const std::vector<uint32_t> kBlocks = {32, 4};

CostModel preset(const char* name) {
  Result<CostModel> m = cost_model_for(name);
  EXPECT_TRUE(m.ok()) << name;
  return *m;
}

TEST(CostModel, OneRowOnXdna1ByHand) {
  // 1024x1024: tiles 256 deep × 64 wide, no padding; one row runs as one m4 launch.
  const ModelledCall t = model_rows(preset("xdna1"), 1024, 1024, 1, kBlocks);
  EXPECT_NEAR(t.sync_us, 2 * 10.0 + (1024.0 + 4096.0) / 20e3, 1e-9);
  EXPECT_NEAR(t.launch_us, 50.0, 1e-9);
  // DRAM bound: weights 1 MiB + A 4 rows + C 4 rows × 4 bytes at 51.2 GB/s (compute 1.24 µs).
  EXPECT_NEAR(t.array_us, (1048576.0 + 4 * 1024 + 4 * 1024 * 4) / 51.2e3, 1e-9);
  EXPECT_NEAR(t.total_us(), 91.136, 1e-3);
}

TEST(CostModel, PaddingAndTwoBlocksOnXdna2ByHand) {
  // K=1000 pads to 4 tiles of 256 (1024), N=100 to 2 tiles of 64 (128); 36 rows = m32 + m4.
  const BlockLaunch plan[] = {{0, 32, 32}, {32, 4, 4}};
  const ModelledCall t = model_call(preset("xdna2"), {1000, 100, {256, 64}, plan, 36 * 1000, 36 * 100 * 4});
  EXPECT_NEAR(t.sync_us, 20.0 + (36000.0 + 14400.0) / 20e3, 1e-9);
  EXPECT_NEAR(t.launch_us, 90.0, 1e-9);
  const double m32 = (1024.0 * 128 + 32 * 1000 + 32 * 100 * 4) / 60e3;
  const double m4 = (1024.0 * 128 + 4 * 1000 + 4 * 100 * 4) / 60e3;
  EXPECT_NEAR(t.array_us, m32 + m4, 1e-9);
}

TEST(CostModel, ComputeBoundWhenTheArrayIsSlow) {
  // A cost file with a slow array and fast DRAM: ops decide (2 × 32 × 1024 × 128 ops at 1e-3 TOPS).
  Result<CostModel> m = cost_model_from_json(
      R"({"generation": "slow", "launch_us": 1, "sync_call_us": 2, "sync_gbps": 1, "dram_gbps": 1000, "int8_tops": 0.001})",
      "slow.json");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const BlockLaunch plan[] = {{0, 30, 32}};
  const ModelledCall t = model_call(*m, {1000, 100, {256, 64}, plan, 30 * 1000, 30 * 100 * 4});
  EXPECT_NEAR(t.array_us, 2.0 * 32 * 1024 * 128 / 1e3, 1e-6);
  EXPECT_NEAR(t.sync_us, 4.0 + (30000.0 + 12000.0) / 1e3, 1e-9);
  EXPECT_NEAR(t.launch_us, 1.0, 1e-12);
}

TEST(CostModel, NoRowsCostNothing) { EXPECT_EQ(model_rows(preset("xdna1"), 1024, 1024, 0, kBlocks).total_us(), 0.0); }

TEST(CostModel, MonotonicInRowsKAndN) {
  for (const char* name : {"xdna1", "xdna2"}) {
    const CostModel m = preset(name);
    for (uint32_t K : {576u, 1024u, 3072u}) {
      for (uint32_t N : {192u, 1024u, 3072u}) {
        double previous = 0;
        for (uint32_t rows = 1; rows <= 512; ++rows) {
          const double t = model_rows(m, K, N, rows, kBlocks).total_us();
          EXPECT_GE(t, previous) << name << " " << K << "x" << N << " rows " << rows;
          previous = t;
        }
      }
    }
    for (uint32_t rows : {1u, 4u, 36u, 256u}) {
      double previous = 0;
      for (uint32_t K = 64; K <= 8192; K += 64) {
        const double t = model_rows(m, K, 1024, rows, kBlocks).total_us();
        EXPECT_GE(t, previous) << name << " K " << K << " rows " << rows;
        previous = t;
      }
      previous = 0;
      for (uint32_t N = 64; N <= 8192; N += 64) {
        const double t = model_rows(m, 1024, N, rows, kBlocks).total_us();
        EXPECT_GE(t, previous) << name << " N " << N << " rows " << rows;
        previous = t;
      }
    }
  }
}

// Host per call, ms, measured with `ep-probe --device none --rows 1,256 --repeat 30` (Release,
// AVX2 kernel, one thread, AMD EPYC Zen 4 VM, weights warm in cache across the repeated calls):
// the host arm the route policy compares with on this machine.
struct HostTime {
  uint32_t K, N;
  double one_row_ms, rows_256_ms;
};
constexpr HostTime kQwen3Host[] = {
    {1024, 1024, 0.0324, 8.70},  {1024, 2048, 0.0561, 15.47}, {1024, 3072, 0.0580, 23.03},
    {2048, 1024, 0.0393, 13.70}, {3072, 1024, 0.0566, 22.48},
};

TEST(CostModel, Xdna1LosesOneRowAndWinsLargeCallsOnQwen3Shapes) {
  const CostModel m = preset("xdna1");
  for (const HostTime& h : kQwen3Host) {
    const double one = model_rows(m, h.K, h.N, 1, kBlocks).total_us() / 1e3;
    const double many = model_rows(m, h.K, h.N, 256, kBlocks).total_us() / 1e3;
    EXPECT_GT(one, h.one_row_ms) << h.K << "x" << h.N << ": a launch and its syncs cost more than a one-row GEMV";
    EXPECT_LT(many, h.rows_256_ms) << h.K << "x" << h.N;
  }
}

TEST(CostModel, Xdna2IsFasterThanXdna1) {
  for (const HostTime& h : kQwen3Host)
    for (uint32_t rows : {1u, 32u, 256u})
      EXPECT_LT(model_rows(preset("xdna2"), h.K, h.N, rows, kBlocks).total_us(),
                model_rows(preset("xdna1"), h.K, h.N, rows, kBlocks).total_us());
}

TEST(CostModel, LaunchCostInRows) {
  // xdna1, 1024x1024, DRAM bound: an m32 launch streams 1 MiB + 32 × 5 KiB at 51.2 GB/s = 23.68
  // µs, an m4 launch 1 MiB + 4 × 5 KiB = 20.88 µs: 0.1 µs a row, and every launch pays
  // 50 + 20.88 - 0.4 = 70.48 µs, 705 rows.
  EXPECT_EQ(launch_cost_rows(preset("xdna1"), 1024, 1024, kBlocks), 705u);
  // So 12 rows run as one padded m32 launch, not three m4 launches.
  EXPECT_NEAR(model_rows(preset("xdna1"), 1024, 1024, 12, kBlocks).launch_us, 50.0, 1e-9);
}

TEST(CostModel, UnknownGenerationIsAnError) {
  Result<CostModel> m = cost_model_for("xdna3");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.error().reason.find("xdna3"), std::string::npos);
  EXPECT_NE(m.error().reason.find("expected xdna1, xdna2 or a cost file (*.json)"), std::string::npos)
      << m.error().reason;
}

TEST(CostModel, ReferenceRuleNamesEachGenerationOrAFile) {
  for (const char* name : kCostModelGenerations) {
    EXPECT_TRUE(is_cost_model_reference(name)) << name;
    EXPECT_TRUE(cost_model_for(name).ok()) << name;
    EXPECT_FALSE(is_cost_file(name)) << name;
  }
  for (const char* file : {"costs.json", "/a/b.json", ".json"}) EXPECT_TRUE(is_cost_file(file)) << file;
  for (const char* other : {"", "xdna3", "XDNA1", "costs.JSON", "costs.json5"})
    EXPECT_FALSE(is_cost_model_reference(other)) << other;
}

const char* kFull =
    R"({"generation": "mine", "launch_us": 40, "sync_call_us": 5, "sync_gbps": 25, "dram_gbps": 80, "int8_tops": 10})";

TEST(CostFile, ReadsJsonNumberForms) {
  Result<CostModel> m = cost_model_from_json(
      R"({"generation": "g", "launch_us": 1.5e2, "sync_call_us": 0.25, "sync_gbps": 2E1, "dram_gbps": 5e+1, "int8_tops": 38})",
      "forms.json");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->launch_us, 150);
  EXPECT_EQ(m->sync_call_us, 0.25);
  EXPECT_EQ(m->sync_gbps, 20);
  EXPECT_EQ(m->dram_gbps, 50);
  EXPECT_EQ(m->int8_tops, 38);
}

TEST(CostFile, ReadsEveryKey) {
  Result<CostModel> m = cost_model_from_json(kFull, "mine.json");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->generation, "mine");
  EXPECT_EQ(m->launch_us, 40);
  EXPECT_EQ(m->sync_call_us, 5);
  EXPECT_EQ(m->sync_gbps, 25);
  EXPECT_EQ(m->dram_gbps, 80);
  EXPECT_EQ(m->int8_tops, 10);
}

// The error for `text`, which must name every string of `names`.
void expect_error(const std::string& text, std::initializer_list<const char*> names) {
  Result<CostModel> m = cost_model_from_json(text, "bad.json");
  ASSERT_FALSE(m.ok()) << text;
  EXPECT_EQ(m.error().code, ErrorCode::kInvalidArgument);
  for (const char* name : names)
    EXPECT_NE(m.error().reason.find(name), std::string::npos) << name << " in " << m.error().reason;
}

TEST(CostFile, EachMissingKeyIsNamed) {
  const std::pair<const char*, const char*> entries[] = {{"generation", "\"mine\""}, {"launch_us", "40"},
                                                         {"sync_call_us", "5"},      {"sync_gbps", "25"},
                                                         {"dram_gbps", "80"},        {"int8_tops", "10"}};
  for (const auto& [missing, unused] : entries) {
    std::string text = "{";
    for (const auto& [key, value] : entries)
      if (key != missing) text += std::string(text.size() > 1 ? ", " : "") + "\"" + key + "\": " + value;
    text += "}";
    expect_error(text, {"missing key", (std::string("\"") + missing + "\"").c_str(), "bad.json"});
  }
}

TEST(CostFile, BadValuesAndKeysAreNamed) {
  expect_error(
      R"({"generation": "g", "launch_us": "fifty", "sync_call_us": 5, "sync_gbps": 25, "dram_gbps": 80, "int8_tops": 10})",
      {"\"launch_us\"", "must be a number"});
  expect_error(
      R"({"generation": "g", "launch_us": 50, "sync_call_us": 5, "sync_gbps": 0, "dram_gbps": 80, "int8_tops": 10})",
      {"\"sync_gbps\" is 0, outside [0.001, "});
  // A number too small for a double reads as 0: the message says so rather than "not positive".
  expect_error(
      R"({"generation": "g", "launch_us": 1e-400, "sync_call_us": 5, "sync_gbps": 2, "dram_gbps": 80, "int8_tops": 10})",
      {"\"launch_us\" is 0, outside [0.001, 1e+06] (a number below about 4.9e-324, such as 1e-400, underflows to 0)"});
  expect_error(
      R"({"generation": "g", "launch_us": 50, "sync_call_us": -1, "sync_gbps": 2, "dram_gbps": 80, "int8_tops": 10})",
      {"\"sync_call_us\""});
  expect_error(
      R"({"generation": 3, "launch_us": 50, "sync_call_us": 5, "sync_gbps": 2, "dram_gbps": 80, "int8_tops": 10})",
      {"\"generation\"", "string"});
  expect_error(
      R"({"generation": "g", "launch_us": 50, "sync_call_us": 5, "sync_gbps": 2, "dram_gbps": 80, "int8_tops": 10, "tops": 3})",
      {"unknown key", "\"tops\""});
}

TEST(CostFile, MalformedJsonSaysWhere) {
  expect_error("", {"bad.json:1:1", "expected '{'"});
  expect_error("{\"generation\": \"g\",\n \"launch_us\" 50}",
               {"bad.json:2:14", "expected ':' after key \"launch_us\""});
  expect_error(R"({"generation": "g", "launch_us": [50]})", {"\"launch_us\"", "number or a string"});
  expect_error(R"({"generation": "g", "launch_us": true})", {"\"launch_us\""});
  expect_error(R"({"generation": "g" "launch_us": 1})", {"expected ',' or '}' after the value of \"generation\""});
  expect_error(R"({"generation": "g", "generation": "h"})", {"\"generation\" appears twice"});
  expect_error(R"({"generation": "g"} x)", {"unexpected text"});
  expect_error(R"({"generation": "g)", {"the string value of \"generation\" is not terminated"});
  expect_error(R"({"generation": "g", "launch_us": 5.})", {"\"launch_us\"", "number or a string"});
  expect_error(R"({"generation": "g", "launch_us": +5})", {"\"launch_us\"", "number or a string"});
  expect_error(R"({"generation": "g", "launch_us": 1e999})", {"\"launch_us\"", "out of range"});
  expect_error(R"({"generation": "g", "launch_us": inf})", {"\"launch_us\""});
}

TEST(CostFile, LoadsPresetsAndFiles) {
  EXPECT_EQ(load_cost_model("xdna2")->int8_tops, 38.05);
  const std::string path = ::testing::TempDir() + "cost_model_test.json";
  std::ofstream(path) << kFull;
  Result<CostModel> m = load_cost_model(path);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->generation, "mine");
  std::remove(path.c_str());
  Result<CostModel> missing = load_cost_model(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().reason.find(path), std::string::npos);
}

// Strict JSON where it was loose (cases in the manner of JSON's own test suite): numbers with
// leading zeros refused; every escape, \u with surrogate pairs, accepted; raw control characters,
// bad escapes, lone surrogates and bytes that are not UTF-8 refused.
TEST(CostFile, StrictJsonNumbersStringsAndUtf8) {
  const auto with = [](const std::string& generation, const std::string& launch = "50") {
    return "{\"generation\": " + generation + ", \"launch_us\": " + launch +
           ", \"sync_call_us\": 5, \"sync_gbps\": 2, \"dram_gbps\": 80, \"int8_tops\": 10}";
  };
  for (const char* number : {"0050", "-01", "00", "1.e3", ".5", "0x10", "1_0"})
    expect_error(with("\"g\"", number), {"\"launch_us\""});
  for (const char* number : {"0", "0.5", "5e1", "5E+1", "500e-1"}) {
    Result<CostModel> m = cost_model_from_json(with("\"g\"", number), "ok.json");
    EXPECT_EQ(m.ok(), std::string(number) != "0") << number;  // 0 parses, and is not positive
  }
  Result<CostModel> escaped = cost_model_from_json(with(R"("a\tb\n\/\"\\\u00e9\ud83d\ude00")"), "ok.json");
  ASSERT_TRUE(escaped.ok()) << escaped.error().to_string();
  EXPECT_EQ(escaped->generation, "a\tb\n/\"\\\xC3\xA9\xF0\x9F\x98\x80");
  expect_error(with("\"a\tb\""), {"control character"});
  expect_error(with(R"("a\qb")"), {"invalid escape \\q"});
  expect_error("{\f\"generation\": \"g\"}", {"bad.json:1:2", "expected a key"});  // \f is not JSON whitespace
  expect_error(R"({"x\u0000y": 1})", {"unknown key \"x\\u0000y\"; the keys are generation"});
  expect_error(with(R"("\u12")"), {"invalid \\u escape"});
  expect_error(with(R"("\ud83d")"), {"unpaired surrogate"});
  expect_error(with(R"("\ude00x")"), {"unpaired surrogate"});
  for (const char* bytes : {"\"\xFF\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"", "\"\xE2\x82\""})
    expect_error(with(bytes), {"the string value of \"generation\" is not valid UTF-8"});
}

// Huge or tiny finite constants made the modelled time inf (and the trace invalid JSON): each
// constant is bounded, and inside the bounds the largest call's modelled time is finite.
TEST(CostFile, ConstantsAreBoundedSoThatEveryModelledTimeIsFinite) {
  const auto with = [](const char* key, const char* value) {
    std::string text = "{\"generation\": \"g\"";
    for (const char* k : {"launch_us", "sync_call_us", "sync_gbps", "dram_gbps", "int8_tops"})
      text += std::string(", \"") + k + "\": " + (std::string(k) == key ? value : "10");
    return text + "}";
  };
  expect_error(with("launch_us", "1e308"), {"\"launch_us\" is 1", "e+308, outside [0.001, 1e+06]"});
  expect_error(with("launch_us", "1000000.0000000002"), {"is 1000000.0000000002, outside"});
  expect_error(with("sync_call_us", "1.7e308"), {"\"sync_call_us\"", "outside"});
  expect_error(with("sync_gbps", "1e-308"), {"\"sync_gbps\"", "outside"});
  expect_error(with("int8_tops", "1e300"), {"\"int8_tops\"", "outside"});
  const CostModel extreme{"extreme", 1e6, 1e6, 1e-3, 1e-3, 1e-3};
  const uint32_t big = 1u << 20;  // K, N and rows far past any model
  const ModelledCall t = model_rows(extreme, big, big, big, kBlocks);
  EXPECT_TRUE(std::isfinite(t.sync_us) && std::isfinite(t.launch_us) && std::isfinite(t.array_us));
}

// The file goes through the one hardened reader: a FIFO does not block, /dev/zero and a large
// file are refused by size, a directory is named as one (each used to hang, read 1.1 GB, or say
// "expected '{'").
TEST(CostFile, FifosDevicesDirectoriesAndLargeFilesAreRefusedByPath) {
  const std::string dir = ::testing::TempDir() + "cost_files/";
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "fifo.json", zero = dir + "zero.json", large = dir + "large.json";
  std::filesystem::remove(fifo);
  std::filesystem::remove(zero);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", zero);
  std::ofstream(large) << std::string(100 * 1024, ' ') << kFull;
  std::filesystem::create_directories(dir + "folder.json");
  for (const std::string& path : {fifo, zero, large, dir + "folder.json"}) {
    Result<CostModel> m = load_cost_model(path);
    ASSERT_FALSE(m.ok()) << path;
    EXPECT_EQ(m.error().code, ErrorCode::kIo) << path;
    EXPECT_NE(m.error().reason.find("cannot read cost file: " + path), std::string::npos) << m.error().reason;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace onebit::npu
