// SPDX-License-Identifier: Apache-2.0
#include "npu/sync_profile.h"

#include <atomic>
#include <cstdio>

#include "base/npu_env_flag.h"

namespace onebit::npu {

namespace {

struct Counters {
  std::atomic<uint64_t> count{0}, bytes{0}, nanoseconds{0};
};

Counters g_counters[kSyncKinds];
std::atomic<bool> g_any_emulated{false};
std::atomic<bool> g_any_real{false};

bool any_sync_recorded() { return g_any_emulated.load() || g_any_real.load(); }

// Prints the report at exit when ONEBIT_NPU_C_SYNC_PROF is set (a static object: its destructor runs
// at exit, or when a shared library holding it is unloaded). Each shared object linking npu/ holds
// a profile of its own (in Node: the EP library for sessions, the addon for ep-probe), so only one
// that recorded syncs reports: a session's numbers print once, not beside an all-zero twin, and the
// switch (with its old name's warning) is read once.
struct ExitReport {
  ~ExitReport() {
    if (any_sync_recorded() && npu_env_flag("C_SYNC_PROF")) std::fprintf(stderr, "%s\n", sync_profile_report().c_str());
  }
};
ExitReport g_exit_report;

}  // namespace

const char* sync_kind_name(SyncKind kind) {
  switch (kind) {
    case SyncKind::kAToDevice:
      return "A to device";
    case SyncKind::kWToDevice:
      return "W to device";
    case SyncKind::kCFromDeviceNarrowed:
      return "C from device narrowed";
    case SyncKind::kCFromDeviceWhole:
      return "C from device whole";
  }
  return "?";
}

void record_sync(SyncKind kind, uint64_t bytes, uint64_t nanoseconds, bool emulated) {
  Counters& c = g_counters[static_cast<int>(kind)];
  c.count.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.nanoseconds.fetch_add(nanoseconds, std::memory_order_relaxed);
  (emulated ? g_any_emulated : g_any_real).store(true, std::memory_order_relaxed);
}

SyncTotals sync_totals(SyncKind kind) {
  const Counters& c = g_counters[static_cast<int>(kind)];
  return {c.count.load(), c.bytes.load(), c.nanoseconds.load()};
}

void reset_sync_profile() {
  for (Counters& c : g_counters) {
    c.count = 0;
    c.bytes = 0;
    c.nanoseconds = 0;
  }
  g_any_emulated = false;
  g_any_real = false;
}

std::string sync_profile_report() {
  std::string label = g_any_emulated && !g_any_real ? " (emulator timings)"
                      : g_any_emulated              ? " (partly emulator timings)"
                                                    : "";
  std::string text = "onebit-npu sync profile" + label + ":";
  const char* sep = " ";
  for (int k = 0; k < kSyncKinds; ++k) {
    const SyncTotals t = sync_totals(static_cast<SyncKind>(k));
    char line[160];
    std::snprintf(line, sizeof line, "%s%s: %llu syncs, %llu bytes, %.3f ms", sep,
                  sync_kind_name(static_cast<SyncKind>(k)), static_cast<unsigned long long>(t.count),
                  static_cast<unsigned long long>(t.bytes), double(t.nanoseconds) / 1e6);
    text += line;
    sep = "; ";
  }
  return text;
}

}  // namespace onebit::npu
