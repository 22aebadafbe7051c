// SPDX-License-Identifier: Apache-2.0
// The EP's provider options: defaults, every key, and the messages of bad keys and values.
#include "engine/ep_options.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine/route_policy.h"

namespace onebit {
namespace {

std::string error_of(const std::map<std::string, std::string>& entries) {
  try {
    parse_ep_options(entries);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

class EpOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ONEBIT_EP_TRACE");
    unsetenv("ONEBIT_PACKED_CACHE_DIR");
  }
};

TEST_F(EpOptionsTest, DefaultsAreTheDocumentedOnes) {
  const EpOptions o = parse_ep_options({});
  EXPECT_EQ(o.device, "auto");
  EXPECT_EQ(o.min_device_rows, kDeviceMinRows);
  EXPECT_EQ(o.device_lock, "call");
  EXPECT_EQ(o.device_timeout_ms, 30000);
  EXPECT_FALSE(o.trace);
  EXPECT_TRUE(o.trace_file.empty());
  EXPECT_TRUE(o.routes.empty());
  EXPECT_FALSE(o.cost_model.has_value());
  EXPECT_FALSE(o.nbits_any_accuracy);
  EXPECT_TRUE(o.packed_cache_dir.empty());
  EXPECT_EQ(o.packed_cache_max_mb, 2048);
}

TEST_F(EpOptionsTest, EveryKeyIsRead) {
  const EpOptions o = parse_ep_options({{"device", "emu"},
                                        {"min_device_rows", "0"},
                                        {"designs_dir", "/d"},
                                        {"routes", "/r.txt"},
                                        {"device_lock", "session"},
                                        {"device_timeout_ms", "250"},
                                        {"trace", "/tmp/t.json"},
                                        {"session_id", "s1"},
                                        {"cost_model", "xdna2"},
                                        {"matmul_nbits_accuracy", "any"}});
  EXPECT_EQ(o.device, "emu");
  EXPECT_EQ(o.min_device_rows, 0);
  EXPECT_EQ(o.designs_dir, "/d");
  EXPECT_EQ(o.routes, "/r.txt");
  EXPECT_EQ(o.device_lock, "session");
  EXPECT_EQ(o.device_timeout_ms, 250);
  EXPECT_TRUE(o.trace);
  EXPECT_EQ(o.trace_file, "/tmp/t.json");
  EXPECT_EQ(o.session_id, "s1");
  ASSERT_TRUE(o.cost_model.has_value());
  EXPECT_EQ(o.cost_model->generation, "xdna2");
  EXPECT_EQ(o.cost_model->int8_tops, 38.05);
  EXPECT_TRUE(o.nbits_any_accuracy);
  EXPECT_FALSE(parse_ep_options({{"matmul_nbits_accuracy", "level4"}}).nbits_any_accuracy);
  const std::string bad = error_of({{"matmul_nbits_accuracy", "4"}});
  EXPECT_NE(bad.find("matmul_nbits_accuracy='4' is invalid; expected level4 or any"), std::string::npos) << bad;
}

TEST_F(EpOptionsTest, BadCostModelNamesTheOptionAndTheReason) {
  const std::string unknown = error_of({{"cost_model", "xdna9"}});
  EXPECT_NE(unknown.find("cost_model='xdna9'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown device generation"), std::string::npos) << unknown;
  const std::string path = ::testing::TempDir() + "ep_options_cost.json";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(R"({"generation": "g", "launch_us": 50})", f);
  fclose(f);
  const std::string incomplete = error_of({{"cost_model", path}});
  remove(path.c_str());
  EXPECT_NE(incomplete.find("cost_model="), std::string::npos) << incomplete;
  EXPECT_NE(incomplete.find("missing key \"sync_call_us\""), std::string::npos) << incomplete;
  const std::string missing = error_of({{"cost_model", "/nonexistent/cost.json"}});
  EXPECT_NE(missing.find("cannot read cost file: /nonexistent/cost.json"), std::string::npos) << missing;
}

TEST_F(EpOptionsTest, UnknownKeyListsTheValidOnes) {
  const std::string e = error_of({{"devise", "emu"}});
  EXPECT_NE(e.find("unknown option 'devise'"), std::string::npos) << e;
  for (const char* key : kOptionKeys) EXPECT_NE(e.find(key), std::string::npos) << key << " missing from: " << e;
}

TEST_F(EpOptionsTest, BadValuesNameTheKeyAndWhatIsValid) {
  EXPECT_NE(error_of({{"device", "gpu"}}).find("device='gpu' is invalid; expected auto, emu or none"),
            std::string::npos);
  EXPECT_NE(error_of({{"min_device_rows", "-1"}}).find("min_device_rows='-1'"), std::string::npos);
  EXPECT_NE(error_of({{"min_device_rows", "8x"}}).find("an integer >= 0"), std::string::npos);
  EXPECT_NE(error_of({{"device_timeout_ms", "0"}}).find("device_timeout_ms='0'"), std::string::npos);
  EXPECT_NE(error_of({{"device_lock", "forever"}}).find("call or session"), std::string::npos);
  EXPECT_NE(error_of({{"trace", "yes"}}).find("trace='yes'"), std::string::npos);
  EXPECT_NE(error_of({{"trace", "run"}})
                .find("expected 0, 1, or a trace file path (absolute, starting with ./ or ../, "
                      "or ending in .json)"),
            std::string::npos);
}

TEST_F(EpOptionsTest, OptionErrorsStartWithTheKeyInOneForm) {
  // The form the Node addon reads the option's key from (kOptionErrorPrefix).
  EXPECT_EQ(error_of({{"device", "gpu"}}), "onebit: option device='gpu' is invalid; expected auto, emu or none");
  EXPECT_STREQ(option_error("routes", "/r.txt", "onebit: cannot read routes file: /r.txt: gone").what(),
               "onebit: option routes='/r.txt' is invalid; cannot read routes file: /r.txt: gone");
  EXPECT_STREQ(option_error("trace", "t.json", "why").what(), "onebit: option trace='t.json' is invalid; why");
  EXPECT_EQ(std::string(option_error("trace", "t.json", "why").what()).rfind(kOptionErrorPrefix, 0), 0u);
}

TEST(TracePathRule, TellsPathsFromTypos) {
  for (const char* path : {"/t", "./t", "../t", "./", "a.json", "dir/run.json"})
    EXPECT_TRUE(is_trace_path(path)) << path;
  for (const char* typo : {"", "yes", "on", "t", "dir/run", ".json", "~/t", ".t"})
    EXPECT_FALSE(is_trace_path(typo)) << typo;
}

TEST_F(EpOptionsTest, TraceForms) {
  EXPECT_FALSE(parse_ep_options({{"trace", "0"}}).trace);
  EXPECT_TRUE(parse_ep_options({{"trace", "1"}}).trace);
  EXPECT_TRUE(parse_ep_options({{"trace", "1"}}).trace_file.empty());
  EXPECT_EQ(parse_ep_options({{"trace", "run.json"}}).trace_file, "run.json");
  // Explicitly relative paths are paths too (they used to be refused here and taken by the Node package).
  EXPECT_EQ(parse_ep_options({{"trace", "./run.trace"}}).trace_file, "./run.trace");
  EXPECT_EQ(parse_ep_options({{"trace", "../out/run"}}).trace_file, "../out/run");
  EXPECT_EQ(parse_ep_options({{"trace", "/tmp/run"}}).trace_file, "/tmp/run");
  setenv("ONEBIT_EP_TRACE", "1", 1);
  EXPECT_TRUE(parse_ep_options({}).trace);
  unsetenv("ONEBIT_EP_TRACE");
}

TEST_F(EpOptionsTest, ShareWeightsFromTheEnvironment) {
  unsetenv("ONEBIT_SHARE_WEIGHTS");
  EXPECT_TRUE(parse_ep_options({}).share_weights);
  setenv("ONEBIT_SHARE_WEIGHTS", "0", 1);
  EXPECT_FALSE(parse_ep_options({}).share_weights);
  setenv("ONEBIT_SHARE_WEIGHTS", "1", 1);
  EXPECT_TRUE(parse_ep_options({}).share_weights);
  setenv("ONEBIT_SHARE_WEIGHTS", "off", 1);
  const std::string bad = error_of({});
  EXPECT_EQ(bad, "onebit: ONEBIT_SHARE_WEIGHTS=off is invalid: use 1 or 0");
  unsetenv("ONEBIT_SHARE_WEIGHTS");
}

TEST_F(EpOptionsTest, AttentionFromTheEnvironment) {
  unsetenv("ONEBIT_ATTENTION");
  EXPECT_TRUE(parse_ep_options({}).claim_attention);
  setenv("ONEBIT_ATTENTION", "ort", 1);
  EXPECT_FALSE(parse_ep_options({}).claim_attention);
  setenv("ONEBIT_ATTENTION", "onebit", 1);
  EXPECT_TRUE(parse_ep_options({}).claim_attention);
  setenv("ONEBIT_ATTENTION", "cpu", 1);
  EXPECT_EQ(error_of({}), "onebit: ONEBIT_ATTENTION=cpu is invalid: use onebit or ort");
  unsetenv("ONEBIT_ATTENTION");
}

TEST_F(EpOptionsTest, PackedCacheDirIsAWritableDirectory) {
  const std::string dir = ::testing::TempDir();
  const EpOptions o = parse_ep_options({{"packed_cache_dir", dir}, {"packed_cache_max_mb", "64"}});
  EXPECT_EQ(o.packed_cache_dir, dir);
  EXPECT_EQ(o.packed_cache_max_mb, 64);
  const std::string file = dir + "ep_options_not_a_dir";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  const std::string not_dir = error_of({{"packed_cache_dir", file}});
  remove(file.c_str());
  EXPECT_NE(not_dir.find("packed_cache_dir='" + file +
                         "' is invalid; expected an existing writable directory (not a directory)"),
            std::string::npos)
      << not_dir;
  const std::string missing = error_of({{"packed_cache_dir", "/nonexistent/cache"}});
  EXPECT_NE(missing.find("(No such file or directory)"), std::string::npos) << missing;
  EXPECT_NE(error_of({{"packed_cache_dir", ""}}).find("packed_cache_dir='' is invalid"), std::string::npos);
  EXPECT_NE(error_of({{"packed_cache_max_mb", "0"}})
                .find("packed_cache_max_mb='0' is invalid; expected an integer from 1 to 1073741824"),
            std::string::npos);
  // The environment gives it to sessions that do not set it, checked alike.
  setenv("ONEBIT_PACKED_CACHE_DIR", dir.c_str(), 1);
  EXPECT_EQ(parse_ep_options({}).packed_cache_dir, dir);
  const std::string option_dir = dir + "ep_options_cache";
  ASSERT_TRUE(mkdir(option_dir.c_str(), 0755) == 0 || errno == EEXIST);
  EXPECT_EQ(parse_ep_options({{"packed_cache_dir", option_dir}}).packed_cache_dir, option_dir);  // the option wins
  rmdir(option_dir.c_str());
  setenv("ONEBIT_PACKED_CACHE_DIR", "/nonexistent/cache", 1);
  EXPECT_NE(error_of({}).find("ONEBIT_PACKED_CACHE_DIR='/nonexistent/cache' is invalid"), std::string::npos);
  unsetenv("ONEBIT_PACKED_CACHE_DIR");
}

}  // namespace
}  // namespace onebit
