// SPDX-License-Identifier: Apache-2.0
// One GEMM shape (K, N) on a device: its designs (one per block size), the packed weights
// uploaded once into one BO (its own, or one a WeightStore shares between DeviceGemms of the
// device: device_weights.h), and A / C BOs of its own, reused across calls. Per call:
//   A rows -> A BO, sync to device (rows × K bytes only)
//   launches covering the rows (block_plan.h), queued together, then waited for
//   C synced back (rows × N × 4 bytes, or the whole BO under ONEBIT_NPU_NO_C_NARROW / ONEBIT_NPU_DBG)
//   C rows -> the caller's buffer
// computing C[m, n] = sum_k A[m, k] * W[k, n] exactly in int32 (A and W int8; the caller has
// shifted uint8 operands and folds zero points in afterwards).
//
// Errors come back as Status (kDesign at creation; kLaunch, kTimeout, kSync, ... per call): the
// caller then runs that call on the host. A failed call leaves the object usable; runs it
// launched are cancelled before run() returns. run() is serialised internally, so one object
// may be shared by threads. The Device must outlive the DeviceGemm.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "base/error.h"
#include "npu/block_plan.h"
#include "npu/cost_model.h"
#include "npu/design.h"
#include "npu/design_source.h"
#include "npu/device.h"
#include "npu/device_weights.h"
#include "npu/sync_narrowing.h"
#include "npu/weight_layout.h"

namespace onebit::npu {

struct GemmOptions {
  std::vector<uint32_t> block_sizes = {32, 4};
  uint32_t launch_cost_rows = kDefaultLaunchCostRows;
  std::chrono::milliseconds wait_timeout{30000};  // for all launches of one call
  SyncNarrowing sync = SyncNarrowing::from_env();
  uint32_t initial_rows = 0;  // A / C BO capacity to allocate up front (they grow on demand)
  // Set: every call also reports its modelled time on that hardware, and blocks are planned
  // with the model's launch cost (launch_cost_rows), as that hardware would run them.
  std::optional<CostModel> cost_model;
};

// Once per shape (per session).
struct GemmSetupStats {
  uint32_t designs_built = 0;   // cache misses: generated and written
  uint32_t designs_loaded = 0;  // designs loaded onto the device (built or read)
  uint64_t weight_bytes = 0;    // packed weight BO, synced once (by this object or the store's first user)
  double weight_upload_ms = 0;  // getting it from the store: packing and upload, or a lookup
};

// Per call, for the EP's counters and traces. Times are wall-clock around the device calls
// (for the emu backend: emulator timings, see `emulated`).
struct CallStats {
  uint32_t rows = 0;
  uint32_t launches = 0;
  uint32_t padded_rows = 0;     // rows computed past `rows` by the last block
  uint64_t a_bytes_synced = 0;  // rows × K
  uint64_t c_bytes_synced = 0;  // rows × N × 4 when narrowed, else the whole C BO
  bool c_whole = false;
  uint64_t c_checksum = 0;    // FNV-1a of the synced C bytes (ONEBIT_NPU_DBG only)
  double upload_ms = 0;       // A copy + sync
  double launch_wait_ms = 0;  // launches + waits
  double c_sync_ms = 0;       // C sync + copy out
  bool emulated = false;
  std::optional<ModelledCall> modelled;  // with GemmOptions::cost_model: the same work on that hardware
};

class DeviceGemm {
 public:
  // Gets the designs for (K, N) and every block size from `source` (the emu cache builds them on
  // a miss), loads them, and takes `w` (K×N or N×K int8, per `layout`) packed into their tiling
  // and uploaded from `store`.
  static Result<std::unique_ptr<DeviceGemm>> create(Device& device, const DesignSource& source, uint32_t K, uint32_t N,
                                                    const int8_t* w, WeightLayout layout,
                                                    const GemmOptions& options = {},
                                                    WeightStore& store = own_weights());
  // The same from designs the caller already holds (one per block size, same K, N and tiling).
  static Result<std::unique_ptr<DeviceGemm>> create_from_designs(Device& device, const std::vector<Design>& designs,
                                                                 const int8_t* w, WeightLayout layout,
                                                                 const GemmOptions& options = {},
                                                                 WeightStore& store = own_weights());

  // c[rows × N] = a[rows × K] · W. rows == 0 is a no-op.
  Status run(const int8_t* a, uint32_t rows, int32_t* c, CallStats* stats = nullptr);

  uint32_t K() const { return K_; }
  uint32_t N() const { return N_; }
  std::span<const uint32_t> block_sizes() const { return block_sizes_; }
  // Rows the A and C buffers hold now: they grow to the largest call, and are released after a
  // call whose buffers exceed kRetainedBufferBytes.
  uint32_t capacity_rows() const { return capacity_rows_; }
  static constexpr size_t kRetainedBufferBytes = size_t(64) << 20;
  const GemmSetupStats& setup_stats() const { return setup_; }
  // The uploaded weights its launches read (shared with other DeviceGemms when the store shares).
  const DeviceWeights& weights() const { return *weights_; }

 private:
  DeviceGemm(Device& device, const GemmOptions& options) : device_(device), options_(options) {}
  Status ensure_capacity(uint32_t rows);
  Status run_locked(const int8_t* a, uint32_t rows, int32_t* c, CallStats& stats,
                    std::chrono::steady_clock::time_point deadline);

  Device& device_;
  GemmOptions options_;
  uint32_t K_ = 0, N_ = 0;
  Tiling tiling_;
  std::vector<uint32_t> block_sizes_;
  std::vector<std::shared_ptr<LoadedDesign>> designs_;  // parallel to block_sizes_
  std::shared_ptr<const DeviceWeights> weights_;
  std::unique_ptr<BufferObject> a_bo_, c_bo_;
  uint32_t capacity_rows_ = 0;
  GemmSetupStats setup_;
  // One call at a time; a queued call waits for `idle_` within its own deadline.
  std::mutex mutex_;
  std::condition_variable idle_;
  bool running_ = false;
};

}  // namespace onebit::npu
