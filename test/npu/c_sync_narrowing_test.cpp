// SPDX-License-Identifier: Apache-2.0
// C-sync narrowing: narrowed and whole-BO C syncs give identical results; a narrowed sync moves
// exactly rows × N × 4 bytes; the env switches; the process-wide sync profile and its exit report.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/checksum.h"
#include "npu/device_gemm.h"
#include "npu/emu/design_cache.h"
#include "npu/emu/emu_device.h"
#include "npu/sync_profile.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::ScopedEnv;
using onebit_npu_test::TempDir;

constexpr uint32_t K = 96, N = 40;

std::unique_ptr<Device> open_device_in(const TempDir& tmp) {
  EmuDeviceOptions options;
  options.lock_path = tmp.file("lock");
  auto d = open_emu_device(options);
  return d ? std::move(d).value() : nullptr;
}

std::unique_ptr<DeviceGemm> make_gemm(Device& device, const DesignCache& cache, const std::vector<int8_t>& w,
                                      SyncNarrowing sync, uint32_t initial_rows = 0) {
  GemmOptions options;
  options.sync = sync;
  options.initial_rows = initial_rows;
  auto g = DeviceGemm::create(device, cache, K, N, w.data(), WeightLayout::kKN, options);
  return g ? std::move(g).value() : nullptr;
}

TEST(CSyncNarrowing, NarrowedAndWholeSyncsGiveIdenticalResults) {
  TempDir tmp;
  auto device = open_device_in(tmp);
  ASSERT_TRUE(device);
  DesignCache cache(tmp.file("designs"));
  std::mt19937 rng(5);
  const uint32_t max_rows = 70;
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, K * N);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, max_rows * K);
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, max_rows, K, N);

  auto narrowed = make_gemm(*device, cache, w, {true, false}, 128);
  auto whole = make_gemm(*device, cache, w, {false, false}, 128);
  auto debug = make_gemm(*device, cache, w, {true, true}, 128);
  ASSERT_TRUE(narrowed && whole && debug);
  reset_sync_profile();
  uint64_t narrowed_bytes = 0;
  for (uint32_t rows = 1; rows <= max_rows; ++rows) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    std::vector<int32_t> c_n(rows * N), c_w(rows * N), c_d(rows * N);
    CallStats s_n, s_w, s_d;
    ASSERT_TRUE(narrowed->run(a.data(), rows, c_n.data(), &s_n));
    ASSERT_TRUE(whole->run(a.data(), rows, c_w.data(), &s_w));
    ASSERT_TRUE(debug->run(a.data(), rows, c_d.data(), &s_d));
    EXPECT_EQ(c_n, c_w);
    EXPECT_EQ(c_n, c_d);
    for (size_t i = 0; i < c_n.size(); ++i) ASSERT_EQ(c_n[i], ref[i]);

    EXPECT_FALSE(s_n.c_whole);
    EXPECT_EQ(s_n.c_bytes_synced, uint64_t(rows) * N * 4);  // exactly what the host reads
    EXPECT_TRUE(s_w.c_whole);
    EXPECT_EQ(s_w.c_bytes_synced, uint64_t(128) * N * 4);  // the whole C BO
    EXPECT_TRUE(s_d.c_whole);
    EXPECT_EQ(s_d.c_bytes_synced, uint64_t(128) * N * 4);
    EXPECT_EQ(s_n.a_bytes_synced, uint64_t(rows) * K);
    EXPECT_EQ(s_w.a_bytes_synced, uint64_t(rows) * K);
    narrowed_bytes += uint64_t(rows) * N * 4;
  }
  const SyncTotals n = sync_totals(SyncKind::kCFromDeviceNarrowed);
  const SyncTotals wh = sync_totals(SyncKind::kCFromDeviceWhole);
  EXPECT_EQ(n.count, max_rows);
  EXPECT_EQ(n.bytes, narrowed_bytes);
  EXPECT_EQ(wh.count, 2u * max_rows);
  EXPECT_EQ(wh.bytes, 2u * max_rows * 128 * N * 4);
  EXPECT_EQ(sync_totals(SyncKind::kAToDevice).count, 3u * max_rows);
}

TEST(CSyncNarrowing, DebugChecksumCoversTheWholeCBo) {
  TempDir tmp;
  auto device = open_device_in(tmp);
  DesignCache cache(tmp.file("designs"));
  std::mt19937 rng(6);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, K * N);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, 4 * K);
  auto debug = make_gemm(*device, cache, w, {true, true}, 4);
  ASSERT_TRUE(debug);
  std::vector<int32_t> c(4 * N);
  CallStats s1, s2;
  ASSERT_TRUE(debug->run(a.data(), 4, c.data(), &s1));
  // With capacity 4 rows and 4 rows read, the whole C BO is exactly the result.
  EXPECT_EQ(s1.c_checksum, fnv1a64(c.data(), c.size() * 4));
  ASSERT_TRUE(debug->run(a.data(), 4, c.data(), &s2));
  EXPECT_EQ(s1.c_checksum, s2.c_checksum);
}

TEST(CSyncNarrowing, EnvSwitches) {
  {
    ScopedEnv a("ONEBIT_NPU_NO_C_NARROW", nullptr), b("ONEBIT_NPU_DBG", nullptr);
    const SyncNarrowing s = SyncNarrowing::from_env();
    EXPECT_TRUE(s.narrow_c);
    EXPECT_FALSE(s.debug_checksum);
    EXPECT_EQ(s.c_sync_bytes(3, 10, 4096), 120u);
  }
  {
    ScopedEnv a("ONEBIT_NPU_NO_C_NARROW", "1"), b("ONEBIT_NPU_DBG", "0");
    const SyncNarrowing s = SyncNarrowing::from_env();
    EXPECT_FALSE(s.narrow_c);
    EXPECT_FALSE(s.debug_checksum);
    EXPECT_EQ(s.c_sync_bytes(3, 10, 4096), 4096u);
  }
  {
    ScopedEnv a("ONEBIT_NPU_NO_C_NARROW", ""), b("ONEBIT_NPU_DBG", "1");
    const SyncNarrowing s = SyncNarrowing::from_env();
    EXPECT_TRUE(s.narrow_c);
    EXPECT_TRUE(s.debug_checksum);
    EXPECT_TRUE(s.whole_c());
    EXPECT_EQ(s.c_sync_bytes(3, 10, 4096), 4096u);
  }
}

TEST(CSyncNarrowing, OldSwitchNamesAreReadForOneReleaseWithOneWarning) {
  ScopedEnv a("ONEBIT_NPU_NO_C_NARROW", nullptr), b("ONEBIT_NPU_DBG", nullptr), c("NPU_NO_C_NARROW", "1"),
      d("NPU_DBG", nullptr);
  testing::internal::CaptureStderr();
  const SyncNarrowing first = SyncNarrowing::from_env(), second = SyncNarrowing::from_env();
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "onebit: NPU_NO_C_NARROW is deprecated: set ONEBIT_NPU_NO_C_NARROW (the old name goes in the next "
            "release)\n");
  EXPECT_FALSE(first.narrow_c);
  EXPECT_FALSE(second.narrow_c);
  ScopedEnv set_new("ONEBIT_NPU_NO_C_NARROW", "0");  // the new name, when set, decides
  EXPECT_TRUE(SyncNarrowing::from_env().narrow_c);
}

// ONEBIT_NPU_C_SYNC_PROF=1 prints the totals at process exit, labelled as emulator timings.
// Runs three calls (none without `with_calls`) in a child process with `env` set, exits it normally
// (static destructors: the report) and returns its stderr; the child must exit with status 0.
std::string child_stderr_at_exit(const std::vector<std::pair<const char*, const char*>>& env, bool with_calls = true) {
  int err_pipe[2];
  if (pipe(err_pipe) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    for (const auto& [name, value] : env) setenv(name, value, 1);
    reset_sync_profile();
    if (with_calls) {
      TempDir tmp;
      auto device = open_device_in(tmp);
      DesignCache cache(tmp.file("designs"));
      std::vector<int8_t> w(K * N, 1), a(5 * K, 1);
      auto gemm = make_gemm(*device, cache, w, {true, false});
      std::vector<int32_t> c(5 * N);
      for (int i = 0; i < 3; ++i)
        if (!gemm || !gemm->run(a.data(), 5, c.data())) _exit(3);
    }
    std::exit(0);  // runs static destructors: the report
  }
  close(err_pipe[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = read(err_pipe[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  close(err_pipe[0]);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << ": " << err;
  return err;
}

void expect_report(const std::string& err) {
  EXPECT_NE(err.find("onebit-npu sync profile (emulator timings):"), std::string::npos) << err;
  EXPECT_NE(err.find("C from device narrowed: 3 syncs, " + std::to_string(3 * 5 * N * 4) + " bytes"), std::string::npos)
      << err;
  EXPECT_NE(err.find("A to device: 3 syncs, " + std::to_string(3 * 5 * K) + " bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("C from device whole: 0 syncs"), std::string::npos) << err;
}

TEST(CSyncNarrowing, ProfilePrintsAtExit) { expect_report(child_stderr_at_exit({{"ONEBIT_NPU_C_SYNC_PROF", "1"}})); }

// The old names read at exit, from the report's static destructor: once a use after free (a crash).
TEST(CSyncNarrowing, ProfileUnderTheOldNamesPrintsAtExitAndWarnsOnce) {
  const std::string err = child_stderr_at_exit({{"NPU_C_SYNC_PROF", "1"}, {"NPU_NO_C_NARROW", "0"}});
  expect_report(err);
  EXPECT_NE(err.find("onebit: NPU_C_SYNC_PROF is deprecated: set ONEBIT_NPU_C_SYNC_PROF"), std::string::npos) << err;
  EXPECT_NE(err.find("onebit: NPU_NO_C_NARROW is deprecated"), std::string::npos) << err;
}

// A profile that recorded no sync prints nothing and does not read the switch: in Node the addon
// holds such a twin of the EP library's profile, which once printed an all-zero report and a
// second deprecation warning.
TEST(CSyncNarrowing, ProfileWithoutSyncsStaysSilent) {
  EXPECT_EQ(child_stderr_at_exit({{"ONEBIT_NPU_C_SYNC_PROF", "1"}}, false), "");
  EXPECT_EQ(child_stderr_at_exit({{"NPU_C_SYNC_PROF", "1"}}, false), "");
}

}  // namespace
}  // namespace onebit::npu
