// SPDX-License-Identifier: Apache-2.0
// C-sync narrowing: after a call, sync back only the bytes of C the host reads
// (rows × N × 4 from the start of the C BO), not the whole BO (which also holds padding rows and
// capacity for larger calls).
//   ONEBIT_NPU_NO_C_NARROW=1  whole-BO C syncs (to compare against narrowing)
//   ONEBIT_NPU_DBG=1          whole-BO C syncs, and checksum the synced bytes (CallStats::c_checksum,
//                             printed to stderr per call)
#pragma once
#include <cstddef>
#include <cstdint>

namespace onebit::npu {

struct SyncNarrowing {
  bool narrow_c = true;
  bool debug_checksum = false;

  // Reads ONEBIT_NPU_NO_C_NARROW and ONEBIT_NPU_DBG ("1" or any value other than "" / "0" turns
  // them on; the old names as base/npu_env_flag.h says).
  static SyncNarrowing from_env();

  // Bytes of C to sync back for a call of `rows` rows and N columns, given the C BO's size.
  size_t c_sync_bytes(size_t rows, size_t N, size_t c_bo_bytes) const {
    return narrow_c && !debug_checksum ? rows * N * sizeof(int32_t) : c_bo_bytes;
  }
  bool whole_c() const { return !narrow_c || debug_checksum; }
};

}  // namespace onebit::npu
