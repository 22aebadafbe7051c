// SPDX-License-Identifier: Apache-2.0
// Process-wide BO sync statistics: count, bytes and time per kind of sync. DeviceGemm records
// every sync it makes; with ONEBIT_NPU_C_SYNC_PROF=1 the totals are printed to stderr at process exit
// (labelled as emulator timings when the syncs were made on the emu backend) if any sync was made.
// The statistics live in each shared object that links npu/ (the EP library; the Node addon, whose
// ep-probe drives devices itself): each reports the syncs it made.
#pragma once
#include <cstdint>
#include <string>

namespace onebit::npu {

enum class SyncKind { kAToDevice, kWToDevice, kCFromDeviceNarrowed, kCFromDeviceWhole };
constexpr int kSyncKinds = 4;
const char* sync_kind_name(SyncKind kind);

struct SyncTotals {
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t nanoseconds = 0;
};

void record_sync(SyncKind kind, uint64_t bytes, uint64_t nanoseconds, bool emulated);
SyncTotals sync_totals(SyncKind kind);
void reset_sync_profile();

// The report ONEBIT_NPU_C_SYNC_PROF=1 prints at exit, e.g.
//   onebit-npu sync profile (emulator timings): C from device narrowed: 1764 syncs, 14450688 bytes, 3.1 ms; ...
std::string sync_profile_report();

}  // namespace onebit::npu
