// SPDX-License-Identifier: Apache-2.0
// The trace file's writer (ep/trace_file) given hostile values, seeded and bounded: node names,
// reasons and a cost model name of random bytes, integers at their limits, times that are NaN,
// ±inf, negative, denormal, huge or random bit patterns. The file must be strict JSON by the
// reference reader (test/npu/strict_json.h) and hold what it was given: strings with invalid
// UTF-8 as U+FFFD, integers exactly, a finite time >= 0 to its 6 digits and any other left out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "ep/trace_file.h"
#include "npu_test_util.h"
#include "strict_json.h"

namespace onebit {
namespace {

using onebit_npu_test::JsonMembers;
using onebit_npu_test::JsonValue;
using onebit_npu_test::StrictJson;

const JsonValue& member(const JsonValue& object, const std::string& key) {
  for (const auto& [k, v] : *std::get<std::shared_ptr<JsonMembers>>(object.v))
    if (k == key) return v;
  static const JsonValue missing{nullptr};
  ADD_FAILURE() << "no key " << key;
  return missing;
}

bool has(const JsonValue& object, const std::string& key) {
  for (const auto& [k, v] : *std::get<std::shared_ptr<JsonMembers>>(object.v))
    if (k == key) return true;
  return false;
}

std::string random_bytes(std::mt19937& rng) {
  std::string s(rng() % 24, '\0');
  for (char& c : s) c = static_cast<char>(rng() % 2 ? rng() % 256 : rng() % 0x24);  // any byte, or controls and '"'
  return s;
}

double hostile_double(std::mt19937& rng) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double kCases[] = {
      std::nan(""), -std::nan(""),           kInf,   -kInf, -1,         -0.0,  0,
      4.9e-324,     2.2250738585072014e-308, 1e-300, 0.5,   123456.789, 1e300, std::numeric_limits<double>::max()};
  if (rng() % 3) return kCases[rng() % std::size(kCases)];
  const uint64_t bits = (uint64_t{rng()} << 32) | rng();  // NaN payloads, denormals, anything
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// The number `written` holds `given` as the writer promised: to 6 significant digits.
void expect_six_digits(double written, double given) {
  EXPECT_LE(std::abs(written - given), 5e-6 * std::abs(given)) << written << " for " << given;
}

TEST(TraceJson, HostileValuesGiveStrictJsonHoldingThem) {
  onebit_npu_test::TempDir tmp;
  std::mt19937 rng(20261206);
  const std::string cost_model = random_bytes(rng) + "\xFF\"\n";
  TraceFile trace(tmp.file("hostile.json"), cost_model);
  constexpr int kEvents = 3000;
  const char* kReasons[] = {"device", "rows<min_device_rows", "a \"quoted\" reason\n", "\xC0\xAF"};
  std::vector<TraceEvent> given;
  for (int i = 0; i < kEvents; ++i) {
    TraceEvent e;
    e.node = random_bytes(rng);
    const int64_t kLimits[] = {std::numeric_limits<int64_t>::min(), -1, 0, 1, std::numeric_limits<int64_t>::max()};
    e.K = kLimits[rng() % 5];
    e.N = kLimits[rng() % 5];
    e.rows = kLimits[rng() % 5];
    e.on_device = rng() % 2;
    e.reason = kReasons[rng() % std::size(kReasons)];
    e.start_us = (uint64_t{rng()} << 32) | rng();
    e.duration_us = std::numeric_limits<uint64_t>::max();
    e.launches = rng();
    e.a_bytes = (uint64_t{rng()} << 32) | rng();
    e.c_whole = rng() % 2;
    e.device_us = hostile_double(rng);
    e.modelled_us = hostile_double(rng);
    trace.record(e);
    given.push_back(e);
  }
  trace.write(Counters{});
  std::ifstream in(trace.path(), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::optional<JsonValue> doc = StrictJson::parse(text.str());
  ASSERT_TRUE(doc) << "not strict JSON: " << trace.path();
  const auto& events = *std::get<std::shared_ptr<onebit_npu_test::JsonArray>>(member(*doc, "traceEvents").v);
  ASSERT_EQ(events.size(), given.size());
  int times = 0, left_out = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    const TraceEvent& e = given[i];
    const JsonValue& args = member(events[i], "args");
    EXPECT_EQ(std::get<std::string>(member(args, "node").v), npu::valid_utf8(e.node));
    EXPECT_EQ(std::get<std::string>(member(args, "reason").v), npu::valid_utf8(e.reason));
    EXPECT_EQ(std::get<double>(member(args, "K").v), static_cast<double>(e.K));
    EXPECT_EQ(std::get<double>(member(args, "rows").v), static_cast<double>(e.rows));
    EXPECT_EQ(std::get<double>(member(events[i], "dur").v), static_cast<double>(e.duration_us));
    EXPECT_EQ(std::get<bool>(member(args, "c_whole").v), e.c_whole);
    for (const auto& [key, value] : {std::pair{"device_us", e.device_us}, {"modelled_us", e.modelled_us}}) {
      const bool shown = std::isfinite(value) && value >= 0;
      ASSERT_EQ(has(args, key), shown) << key << " " << value;
      if (shown) {
        expect_six_digits(std::get<double>(member(args, key).v), value);
        ++times;
      } else {
        ++left_out;
      }
    }
  }
  const JsonValue& other = member(*doc, "otherData");
  EXPECT_EQ(std::get<std::string>(member(other, "cost_model").v), npu::valid_utf8(cost_model));
  std::printf("trace fuzz: %d events, %d times written, %d left out (not finite, or negative)\n", kEvents, times,
              left_out);
  EXPECT_GT(times, 0);
  EXPECT_GT(left_out, 0);
}

}  // namespace
}  // namespace onebit
