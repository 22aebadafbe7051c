// SPDX-License-Identifier: Apache-2.0
// The cross-process device lock: never blocks, names the holder, is released when the holder
// dies, and the per-call / per-session lease policies.
#include "npu/device_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>

#include "npu/device_gemm.h"
#include "npu/emu/design_cache.h"
#include "npu/emu/emu_device.h"
#include "npu/lock_policy.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::TempDir;
using Clock = std::chrono::steady_clock;

// Waits for a child with a deadline, so a hang fails the test instead of hanging it.
int wait_child(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  while (Clock::now() < deadline) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    usleep(2000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;  // hung
}

TEST(DeviceLock, SecondHolderIsBusyAndTheReasonNamesTheFirst) {
  TempDir tmp;
  DeviceLock first(tmp.file("npu.lock")), second(tmp.file("npu.lock"));
  ASSERT_TRUE(first.try_lock());
  EXPECT_TRUE(first.try_lock());  // already held: ok
  EXPECT_TRUE(first.held());
  Status s = second.try_lock();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::kBusy);
  EXPECT_NE(s.reason().find("pid " + std::to_string(getpid())), std::string::npos) << s.reason();
  EXPECT_FALSE(second.held());
  first.unlock();
  EXPECT_TRUE(second.try_lock());
}

TEST(DeviceLock, AnotherProcessGetsBusyWithoutBlocking) {
  TempDir tmp;
  const std::string path = tmp.file("npu.lock");
  DeviceLock held(path);
  ASSERT_TRUE(held.try_lock());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    DeviceLock mine(path);
    const auto start = Clock::now();
    Status s = mine.try_lock();
    const bool quick = Clock::now() - start < std::chrono::seconds(1);
    _exit(!s && s.code() == ErrorCode::kBusy && quick ? 0 : 1);
  }
  EXPECT_EQ(wait_child(child), 0);
  held.unlock();
  const pid_t second = fork();
  ASSERT_GE(second, 0);
  if (second == 0) {
    DeviceLock mine(path);
    _exit(mine.try_lock() ? 0 : 1);  // free now
  }
  EXPECT_EQ(wait_child(second), 0);
}

// A child holds the device for a session and runs device calls in a loop; killing it mid-run
// releases the lock.
TEST(DeviceLock, KillingTheHolderMidRunReleasesTheLock) {
  TempDir tmp;
  const std::string path = tmp.file("npu.lock");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    EmuDeviceOptions options;
    options.lock_path = path;
    auto device = open_emu_device(options);
    DesignCache cache(tmp.file("designs"));
    std::vector<int8_t> w(256 * 128, 1), a(36 * 256, 1);
    auto gemm = DeviceGemm::create(**device, cache, 256, 128, w.data(), WeightLayout::kKN);
    if (!gemm) _exit(2);
    LockHolds holds(**device);
    DeviceLease lease(holds, LockPolicy::kPerSession);
    std::vector<int32_t> c(36 * 128);
    for (int i = 0;; ++i) {
      if (!lease.begin_call()) _exit(3);
      if (!(*gemm)->run(a.data(), 36, c.data()) || c[0] != 256) _exit(4);
      lease.end_call();
      if (i == 0 && write(ready[1], "r", 1) != 1) _exit(5);
    }
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "child never got the device";
  close(ready[0]);

  DeviceLock mine(path);
  Status busy = mine.try_lock();
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.code(), ErrorCode::kBusy);
  EXPECT_NE(busy.reason().find("pid " + std::to_string(child)), std::string::npos) << busy.reason();

  ASSERT_EQ(kill(child, SIGKILL), 0);
  EXPECT_EQ(wait_child(child), 128 + SIGKILL);
  EXPECT_TRUE(mine.try_lock());
}

// Two processes, each making 150 device calls under a per-call lease: every call either runs on
// the device with the right result or finds the device busy; nobody hangs.
TEST(DeviceLock, TwoProcessesContendPerCall) {
  TempDir tmp;
  const std::string path = tmp.file("npu.lock");
  const std::string designs = tmp.file("designs");
  {  // build the designs once, before forking (the children then only read them)
    DesignCache cache(designs);
    ASSERT_TRUE(cache.get({Target::kEmu, 64, 32, 32}));
    ASSERT_TRUE(cache.get({Target::kEmu, 64, 32, 4}));
  }
  int results[2][2];
  pid_t children[2];
  for (int p = 0; p < 2; ++p) {
    ASSERT_EQ(pipe(results[p]), 0);
    children[p] = fork();
    ASSERT_GE(children[p], 0);
    if (children[p] == 0) {
      alarm(30);  // a hang kills the child
      close(results[p][0]);
      EmuDeviceOptions options;
      options.lock_path = path;
      auto device = open_emu_device(options);
      DesignCache cache(designs);
      std::mt19937 rng(100 + p);
      const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, 64 * 32);
      const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, 36 * 64);
      const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, 36, 64, 32);
      auto gemm = DeviceGemm::create(**device, cache, 64, 32, w.data(), WeightLayout::kKN);
      if (!gemm) _exit(2);
      LockHolds holds(**device);
      DeviceLease lease(holds, LockPolicy::kPerCall);
      int ran = 0, busy = 0;
      for (int i = 0; i < 150; ++i) {
        Status s = lease.begin_call();
        if (!s) {
          if (s.code() != ErrorCode::kBusy) _exit(3);
          ++busy;
          continue;
        }
        std::vector<int32_t> c(36 * 32);
        if (!(*gemm)->run(a.data(), 36, c.data())) _exit(4);
        lease.end_call();
        for (size_t j = 0; j < c.size(); ++j)
          if (c[j] != ref[j]) _exit(5);
        ++ran;
      }
      const int counts[2] = {ran, busy};
      if (write(results[p][1], counts, sizeof counts) != sizeof counts) _exit(6);
      _exit(0);
    }
    close(results[p][1]);
  }
  int total_ran = 0;
  for (int p = 0; p < 2; ++p) {
    int counts[2] = {-1, -1};
    EXPECT_EQ(read(results[p][0], counts, sizeof counts), static_cast<ssize_t>(sizeof counts));
    close(results[p][0]);
    EXPECT_EQ(wait_child(children[p]), 0) << "child " << p;
    EXPECT_EQ(counts[0] + counts[1], 150);
    total_ran += counts[0];
    std::printf("process %d: %d calls on the device, %d found it busy\n", p, counts[0], counts[1]);
  }
  EXPECT_GT(total_ran, 0);
}

TEST(DeviceLease, PerCallReleasesBetweenCallsPerSessionKeeps) {
  TempDir tmp;
  EmuDeviceOptions options;
  options.lock_path = tmp.file("npu.lock");
  auto a = open_emu_device(options);
  auto b = open_emu_device(options);  // a second user of the same array (its own lock description)
  ASSERT_TRUE(a && b);
  LockHolds holds(**a);
  {
    DeviceLease lease(holds, LockPolicy::kPerCall);
    ASSERT_TRUE(lease.begin_call());
    EXPECT_EQ((*b)->try_lock().code(), ErrorCode::kBusy);
    ASSERT_TRUE(lease.begin_call());  // a second call in flight (another thread)
    lease.end_call();
    EXPECT_EQ((*b)->try_lock().code(), ErrorCode::kBusy);  // one call still running
    lease.end_call();
    EXPECT_FALSE((*a)->locked());
    ASSERT_TRUE((*b)->try_lock());
    EXPECT_EQ(lease.begin_call().code(), ErrorCode::kBusy);
    (*b)->unlock();
  }
  {
    DeviceLease lease(holds, LockPolicy::kPerSession);
    ASSERT_TRUE(lease.begin_call());
    lease.end_call();
    EXPECT_TRUE((*a)->locked());
    EXPECT_EQ((*b)->try_lock().code(), ErrorCode::kBusy);
  }  // the lease ends: released
  EXPECT_TRUE((*b)->try_lock());
}

// Sessions sharing one opened device (engine/shared_device.h) each have a lease on its holds: one
// session's end of a call never unlocks the array under another's call or per-session hold.
TEST(DeviceLease, LeasesOfOneDeviceReleaseTheLockWithTheLastHold) {
  TempDir tmp;
  EmuDeviceOptions options;
  options.lock_path = tmp.file("npu.lock");
  auto shared = open_emu_device(options);
  auto other = open_emu_device(options);  // another process's use of the array
  ASSERT_TRUE(shared && other);
  LockHolds holds(**shared);
  DeviceLease first(holds, LockPolicy::kPerCall), second(holds, LockPolicy::kPerCall);
  ASSERT_TRUE(first.begin_call());
  ASSERT_TRUE(second.begin_call());
  first.end_call();
  EXPECT_TRUE((*shared)->locked());  // the second session's call is still running
  EXPECT_EQ((*other)->try_lock().code(), ErrorCode::kBusy);
  second.end_call();
  EXPECT_FALSE((*shared)->locked());
  {
    DeviceLease kept(holds, LockPolicy::kPerSession);
    ASSERT_TRUE(kept.begin_call());
    kept.end_call();
    ASSERT_TRUE(first.begin_call());
    first.end_call();
    EXPECT_TRUE((*shared)->locked());  // the per-session lease still holds it
    EXPECT_EQ((*other)->try_lock().code(), ErrorCode::kBusy);
  }
  EXPECT_FALSE((*shared)->locked());
  EXPECT_TRUE((*other)->try_lock());
  EXPECT_EQ(first.begin_call().code(), ErrorCode::kBusy);
}

TEST(DeviceLock, RemovedOrReplacedWhileHeldIsNoticedAtTheNextCall) {
  TempDir tmp;
  const std::string path = tmp.file("npu.lock");
  for (const bool replace : {false, true}) {
    DeviceLock first(path), second(path);
    ASSERT_TRUE(first.try_lock());
    ASSERT_EQ(::unlink(path.c_str()), 0);
    if (replace) std::ofstream(path) << "someone else's file\n";
    // The second finds the path free of any lock and takes it on the file now there ...
    ASSERT_TRUE(second.try_lock()) << "replace=" << replace;
    // ... and the first, at its next call, finds that file locked instead of trusting its old one.
    Status s = first.try_lock();
    ASSERT_FALSE(s) << "replace=" << replace;
    EXPECT_EQ(s.code(), ErrorCode::kBusy);
    EXPECT_NE(s.reason().find("pid " + std::to_string(getpid())), std::string::npos) << s.reason();
    EXPECT_FALSE(first.held());
    second.unlock();
    EXPECT_TRUE(first.try_lock());
    first.unlock();
    ::unlink(path.c_str());
  }
}

TEST(DeviceLock, LockFileMustBeARegularFile) {
  TempDir tmp;
  const std::string fifo = tmp.file("npu.lock");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  DeviceLock lock(fifo);
  Status s = lock.try_lock();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_EQ(s.reason(), "cannot open device lock: " + fifo + ": a FIFO, expected a regular file");
}

TEST(DeviceLock, PathAndErrors) {
  const char* saved = std::getenv("XDG_RUNTIME_DIR");
  const std::string keep = saved ? saved : "";
  setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
  EXPECT_EQ(default_lock_path(), "/run/user/4242/onebit-npu.lock");
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(default_lock_path(), "/tmp/onebit-npu.lock");
  if (saved) setenv("XDG_RUNTIME_DIR", keep.c_str(), 1);

  DeviceLock nowhere("/nonexistent-dir-for-onebit-test/onebit-npu.lock");
  Status s = nowhere.try_lock();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_NE(s.reason().find("cannot open device lock"), std::string::npos);

  EXPECT_EQ(*lock_policy_from_name("call"), LockPolicy::kPerCall);
  EXPECT_EQ(*lock_policy_from_name("session"), LockPolicy::kPerSession);
  EXPECT_FALSE(lock_policy_from_name("forever"));
}

}  // namespace
}  // namespace onebit::npu
