// SPDX-License-Identifier: Apache-2.0
// The bounded, seeded fuzz runs of the cost file's JSON parser (npu/json_object) and of the JSON
// string writer (npu/utf8), each checked against the independent reference reader strict_json.h:
// a fixed table of cases in the manner of JSON's own test suite (y_ accepted, n_ refused), then
// mutants of a valid cost file. The sanitizer job runs these under ASan + UBSan, which turns an
// out-of-bounds read into a failure; ctest's time limit turns a hang into one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/json_object.h"
#include "base/utf8.h"
#include "strict_json.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::JsonMembers;
using onebit_npu_test::JsonValue;
using onebit_npu_test::StrictJson;

// What parse_json_object should make of `text` by the reference reader: the members when the
// text is one object of numbers and strings with no key twice, else nullopt.
std::optional<JsonObject> expected_object(const std::string& text) {
  const std::optional<JsonValue> doc = StrictJson::parse(text);
  if (!doc) return std::nullopt;
  const auto* members = std::get_if<std::shared_ptr<JsonMembers>>(&doc->v);
  if (members == nullptr) return std::nullopt;
  JsonObject object;
  for (const auto& [key, value] : **members) {
    JsonScalar scalar;
    if (const double* d = std::get_if<double>(&value.v))
      scalar = *d;
    else if (const std::string* s = std::get_if<std::string>(&value.v))
      scalar = *s;
    else
      return std::nullopt;
    if (!object.emplace(key, scalar).second) return std::nullopt;
  }
  return object;
}

// parse_json_object agrees with the reference on `text`; a refusal names the file and a line
// and column inside the text. Returns whether it was accepted.
bool check_against_reference(const std::string& text) {
  const Result<JsonObject> parsed = parse_json_object(text, "fuzz.json");
  const std::optional<JsonObject> expected = expected_object(text);
  EXPECT_EQ(parsed.ok(), expected.has_value())
      << "text: " << json_string(text) << (parsed.ok() ? "" : "\nerror: " + parsed.error().reason);
  if (parsed.ok() && expected) {
    EXPECT_EQ(*parsed, *expected) << json_string(text);
    for (const auto& [key, value] : *parsed)
      if (const double* d = std::get_if<double>(&value)) {
        EXPECT_TRUE(std::isfinite(*d)) << key;
      }
  }
  if (!parsed.ok()) {
    // "fuzz.json:LINE:COLUMN: what", the position inside the text, and no control character (a
    // NUL would cut the message short where it crosses a C API).
    const std::string& reason = parsed.error().reason;
    size_t line = 0, column = 0, end = 0;
    EXPECT_EQ(std::sscanf(reason.c_str(), "fuzz.json:%zu:%zu: %zn", &line, &column, &end), 2) << reason;
    EXPECT_GT(end, 0u) << reason;
    EXPECT_LT(end, reason.size()) << reason;
    EXPECT_LE(line, 1 + size_t(std::count(text.begin(), text.end(), '\n'))) << reason;
    EXPECT_LE(column, text.size() + 1) << reason;
    EXPECT_TRUE(is_valid_utf8(reason)) << json_string(reason);
    EXPECT_TRUE(std::none_of(reason.begin(), reason.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
        << json_string(reason);
  }
  return parsed.ok();
}

struct Case {
  const char* name;
  std::string text;
};

// y_: strict JSON that must be accepted (values checked against the reference reader).
const Case kAccepted[] = {
    {"y_object_empty", "{}"},
    {"y_object_whitespace", " \t\r\n{ \"a\" : 1 }\n"},
    {"y_number_minus_zero", R"({"a": -0})"},
    {"y_number_zero_fraction", R"({"a": 0.0e0})"},
    {"y_number_exponent_forms", R"({"a": 1E+2, "b": 1e-2, "c": 1E2})"},
    {"y_number_min_denormal", R"({"a": 4.9e-324})"},
    {"y_number_underflow_to_zero", R"({"a": 1e-400})"},
    {"y_number_max_double", R"({"a": 1.7976931348623157e308})"},
    {"y_number_long_mantissa", R"({"a": 12345678901234567890123456789012345678901234567890})"},
    {"y_string_escapes", R"({"a": "\"\\\/\b\f\n\r\t"})"},
    {"y_string_u_escapes", R"({"a": "\u0000\u001f\u00e9\uFFFF"})"},
    {"y_string_surrogate_pair", R"({"a": "\ud834\udd1e"})"},
    {"y_string_utf8_every_length", "{\"a\": \"\x7F\xC2\x80\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\"}"},
    {"y_string_nul_escape_in_key", R"({"a\u0000b": "x"})"},
    {"y_string_empty_key", R"({"": ""})"},
};

// n_: anything else, refused.
const Case kRefused[] = {
    {"n_empty", ""},
    {"n_only_space", " \n"},
    {"n_not_an_object", "[1]"},
    {"n_bom", "\xEF\xBB\xBF{}"},
    {"n_form_feed_space", "{\f}"},
    {"n_vertical_tab_space", "{\v}"},
    {"n_nbsp_space", "{\xC2\xA0}"},
    {"n_trailing_comma", R"({"a": 1,})"},
    {"n_missing_value", R"({"a":})"},
    {"n_single_quotes", "{'a': 1}"},
    {"n_unquoted_key", "{a: 1}"},
    {"n_two_objects", "{}{}"},
    {"n_truncated", R"({"a": 1)"},
    {"n_nested_object", R"({"a": {}})"},
    {"n_array_value", R"({"a": []})"},
    {"n_literal_true", R"({"a": true})"},
    {"n_literal_null", R"({"a": null})"},
    {"n_duplicate_key", R"({"a": 1, "a": 1})"},
    {"n_duplicate_key_by_escape", R"({"a": 1, "\u0061": 2})"},
    {"n_number_leading_zero", R"({"a": 0050})"},
    {"n_number_minus_leading_zero", R"({"a": -01})"},
    {"n_number_plus", R"({"a": +1})"},
    {"n_number_dot_first", R"({"a": .5})"},
    {"n_number_dot_last", R"({"a": 5.})"},
    {"n_number_exponent_empty", R"({"a": 1e})"},
    {"n_number_exponent_sign_only", R"({"a": 1e+})"},
    {"n_number_minus_only", R"({"a": -})"},
    {"n_number_hex", R"({"a": 0x10})"},
    {"n_number_nan", R"({"a": NaN})"},
    {"n_number_infinity", R"({"a": -Infinity})"},
    {"n_number_overflow", R"({"a": 1e999})"},
    {"n_number_negative_overflow", R"({"a": -1e309})"},
    {"n_number_huge_exponent", R"({"a": 1e400000000000000000000})"},
    {"n_string_raw_tab", "{\"a\": \"\t\"}"},
    {"n_string_raw_newline", "{\"a\": \"\n\"}"},
    {"n_string_raw_nul", std::string("{\"a\": \"\0\"}", 9)},
    {"n_string_bad_escape", R"({"a": "\x41"})"},
    {"n_string_escape_at_end", R"({"a": "\)"},
    {"n_string_short_u_escape", R"({"a": "\u12"})"},
    {"n_string_bad_hex", R"({"a": "\u12G4"})"},
    {"n_string_lone_high_surrogate", R"({"a": "\ud800"})"},
    {"n_string_lone_low_surrogate", R"({"a": "\udc00"})"},
    {"n_string_reversed_surrogates", R"({"a": "\udc00\ud800"})"},
    {"n_string_high_then_not_low", R"({"a": "\ud800\u0041"})"},
    {"n_string_invalid_byte", "{\"a\": \"\xFF\"}"},
    {"n_string_lone_continuation", "{\"a\": \"\x80\"}"},
    {"n_string_overlong_slash", "{\"a\": \"\xC0\xAF\"}"},
    {"n_string_overlong_three", "{\"a\": \"\xE0\x80\xAF\"}"},
    {"n_string_utf8_surrogate", "{\"a\": \"\xED\xA0\x80\"}"},
    {"n_string_past_10ffff", "{\"a\": \"\xF4\x90\x80\x80\"}"},
    {"n_string_truncated_sequence", "{\"a\": \"\xE2\x82\"}"},
    {"n_key_invalid_utf8", "{\"\xFE\": 1}"},
    {"n_deep_nesting", "{\"a\": " + std::string(100'000, '[') + "}"},
};

TEST(JsonTable, AcceptedCasesParseToTheReferenceValues) {
  for (const Case& c : kAccepted) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(expected_object(c.text)) << "the reference refuses it";
    EXPECT_TRUE(check_against_reference(c.text));
  }
  // Values by hand, where the reference and the parser could share a mistake.
  const Result<JsonObject> numbers =
      parse_json_object(R"({"z": -0, "d": 4.9e-324, "u": 1e-400, "m": 1.7976931348623157e308})", "t");
  ASSERT_TRUE(numbers) << numbers.error().reason;
  EXPECT_TRUE(std::signbit(std::get<double>(numbers->at("z"))));
  EXPECT_EQ(std::get<double>(numbers->at("d")), 4.9e-324);
  EXPECT_EQ(std::get<double>(numbers->at("u")), 0.0);
  EXPECT_EQ(std::get<double>(numbers->at("m")), 1.7976931348623157e308);
  const Result<JsonObject> strings = parse_json_object(R"({"a\u0000b": "\ud834\udd1e\t"})", "t");
  ASSERT_TRUE(strings) << strings.error().reason;
  EXPECT_EQ(std::get<std::string>(strings->at(std::string("a\0b", 3))), "\xF0\x9D\x84\x9E\t");
}

TEST(JsonTable, RefusedCasesSayWhatAndWhere) {
  for (const Case& c : kRefused) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(expected_object(c.text)) << "the reference accepts it";
    EXPECT_FALSE(check_against_reference(c.text));
  }
  // A few messages exactly: each names the file, the line and column, and the key.
  const auto error = [](const std::string& text) { return parse_json_object(text, "f.json").error().reason; };
  EXPECT_EQ(error(R"({"a": 0050})"), "f.json:1:7: the value of \"a\" must be a number or a string");
  EXPECT_EQ(error(R"({"a": 1e999})"), "f.json:1:12: the value of \"a\" is out of range");
  EXPECT_EQ(error("{\"a\": \"\t\"}"), "f.json:1:8: the string value of \"a\" holds a control character");
  EXPECT_EQ(error(R"({"a": "\ud800"})"), "f.json:1:14: the string value of \"a\" has an unpaired surrogate escape");
  EXPECT_EQ(error("{\"a\":\n \"\xFF\"}"), "f.json:2:3: the string value of \"a\" is not valid UTF-8");
  // A key is quoted as JSON in messages: its \u0000 used to be a raw NUL, which ends the message
  // where it crosses a C API.
  EXPECT_EQ(error(R"({"a\u0000b": [1]})"), "f.json:1:14: the value of \"a\\u0000b\" must be a number or a string");
  EXPECT_EQ(error(R"({"a": 1, "a": 2})"), "f.json:1:16: key \"a\" appears twice");
}

const std::string kCostFile =
    "{\n  \"generation\": \"mine\",\n  \"launch_us\": 40,\n  \"sync_call_us\": 5.5,\n  \"sync_gbps\": 2.5e1,\n"
    "  \"dram_gbps\": 80,\n  \"int8_tops\": 10\n}\n";

// Pieces a mutation inserts: the hard cases of the table, as fragments.
const std::vector<std::string> kFragments = {"0050",
                                             "-0",
                                             "1e999",
                                             "-1e309",
                                             "1e-400",
                                             "4.9e-324",
                                             "1e400000000000000000000",
                                             "1.",
                                             ".5",
                                             "+1",
                                             "0x1",
                                             "NaN",
                                             "Infinity",
                                             "\\t",
                                             "\\u0000",
                                             "\\ud800",
                                             "\\udc00\\ud800",
                                             "\\ud83d\\ude00",
                                             "\\u12",
                                             "\\",
                                             "\t",
                                             std::string(1, '\0'),
                                             "\x01",
                                             "\xFF",
                                             "\x80",
                                             "\xC0\xAF",
                                             "\xED\xA0\x80",
                                             "\xF4\x90\x80\x80",
                                             "\xE2\x82",
                                             "\xEF\xBB\xBF",
                                             "\f",
                                             "\"",
                                             "\"a\": 1,",
                                             "\"launch_us\": 1,",
                                             "{",
                                             "}",
                                             "[",
                                             "]",
                                             ",",
                                             ":",
                                             "true",
                                             "null",
                                             std::string(200, '['),
                                             std::string(5000, 'x'),
                                             std::string(70'000, ' ')};

std::string mutate(std::string text, std::mt19937& rng) {
  const auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const size_t at = pick(text.size() + 1);
  switch (pick(6)) {
    case 0:  // a byte replaced
      if (at < text.size()) text[at] = static_cast<char>(pick(256));
      break;
    case 1:  // a bit flipped
      if (at < text.size()) text[at] = static_cast<char>(text[at] ^ (1 << pick(8)));
      break;
    case 2:  // truncated
      text.resize(at);
      break;
    case 3:  // a hard case inserted
      text.insert(at, kFragments[pick(kFragments.size())]);
      break;
    case 4:  // a range deleted
      text.erase(at, pick(8) + 1);
      break;
    default:  // a range repeated
      text.insert(at, text.substr(at, pick(16) + 1));
      break;
  }
  return text;
}

// Each mutant is parsed into finite values equal to the reference's, or refused with an error
// naming where; never a crash, a hang or a read outside the text.
TEST(JsonFuzz, CostFileMutantsAgreeWithTheReference) {
  std::mt19937 rng(20261203);
  constexpr int kMutants = 20000;
  int accepted = 0;
  for (int i = 0; i < kMutants; ++i) {
    std::string text = mutate(kCostFile, rng);
    for (int more = i % 4; more > 0; --more) text = mutate(text, rng);
    if (check_against_reference(text)) ++accepted;
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "stopped at mutant " << i;
      return;
    }
  }
  std::printf("json fuzz: %d mutants, %d accepted, %d refused\n", kMutants, accepted, kMutants - accepted);
  EXPECT_GT(accepted, kMutants / 20);  // the mutations reach values as well as syntax
}

// The string writer: whatever bytes it is given, its output is one strict JSON string holding
// those bytes with each byte that does not start a well-formed sequence as U+FFFD.
TEST(JsonFuzz, StringWriterOutputIsStrictJsonAndRoundTrips) {
  std::mt19937 rng(20261204);
  constexpr int kStrings = 20000;
  int changed = 0;
  for (int i = 0; i < kStrings; ++i) {
    std::string bytes(std::uniform_int_distribution<size_t>(0, 40)(rng), '\0');
    for (char& b : bytes)
      b = static_cast<char>(rng() % (i % 2 ? 256 : 0x24));  // odd: any byte; even: controls, '"', '#'
    if (i % 3 == 0 && !bytes.empty()) bytes.insert(rng() % bytes.size(), kFragments[rng() % kFragments.size()]);
    const std::string written = json_string(bytes);
    const std::optional<JsonValue> read = StrictJson::parse(written);
    ASSERT_TRUE(read) << written;
    const std::string* text = std::get_if<std::string>(&read->v);
    ASSERT_NE(text, nullptr) << written;
    EXPECT_EQ(*text, valid_utf8(bytes)) << written;
    ASSERT_TRUE(is_valid_utf8(*text));
    if (is_valid_utf8(bytes)) {
      EXPECT_EQ(*text, bytes) << written;
    } else {
      ++changed;
    }
    // And as a value of the cost file's parser, which must agree.
    const Result<JsonObject> object = parse_json_object("{\"k\": " + written + "}", "w");
    ASSERT_TRUE(object) << object.error().reason;
    EXPECT_EQ(std::get<std::string>(object->at("k")), *text);
  }
  std::printf("json string fuzz: %d strings, %d held invalid UTF-8 (written as U+FFFD)\n", kStrings, changed);
  EXPECT_GT(changed, 0);
}

}  // namespace
}  // namespace onebit::npu
