// SPDX-License-Identifier: Apache-2.0
// One probe of a GEMM shape K×N through the engine's own per-call entry point (run_group, as the
// EP runs each call): for each rows value, the host route and the whole device route timed per call (median, min–max
// over `repeat` calls, after one untimed warm-up call each, the two routes alternating call by call), the device's
// breakdown, the ratio host/device, and whether both routes gave identical outputs on every call.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "npu/cost_model.h"
#include "probes/probe_options.h"
#include "probes/spread.h"

namespace onebit::probes {

struct DeviceRowsResult {
  Spread total;              // the whole device route per call: activation preparation, int8 narrowing,
                             // lock, A upload + sync, launches + wait, C sync, zero-point fold, epilogue
  Spread upload;             // A upload + sync
  Spread launch_wait;        // launches + wait
  Spread c_sync;             // C sync back
  Spread epilogue;           // host epilogue on the device's accumulators (after the fold)
  uint32_t launches = 0;     // per call
  uint32_t padded_rows = 0;  // rows computed past `rows` by the last block
  uint64_t a_bytes = 0;      // synced per call
  uint64_t c_bytes = 0;      // synced per call
  bool c_whole = false;      // whole-BO C syncs (ONEBIT_NPU_NO_C_NARROW / ONEBIT_NPU_DBG)
  std::optional<npu::ModelledCall> modelled;  // with a cost model: the call on that hardware
};

struct RowsResult {
  uint32_t rows = 0;
  Spread host;
  std::optional<DeviceRowsResult> device;  // absent without a device or after a device error
  std::optional<double> ratio;             // host median / device median
  std::optional<double> modelled_ratio;    // host median / modelled device time (with a cost model)
  std::optional<bool> exact;               // device accumulators == host accumulators, every call
};

struct DeviceInfo {
  std::string requested;  // the option: auto | emu | none
  std::string selected;   // what it resolved to: emu | none
  std::string reason;     // why (e.g. "option device=emu", "ONEBIT_DEVICE=none")
  std::string name;       // backend name when opened
  bool emulated = false;  // timings are those of an emulator
  std::string error;      // set when the device could not be used (or failed mid-probe)
  std::string designs_dir;
  uint32_t designs_built = 0;
  uint32_t designs_loaded = 0;
  uint64_t weight_bytes = 0;
  double setup_ms = 0;     // designs + weight upload, once
  std::string cost_model;  // the modelled generation (CostModel::generation), empty without one
};

struct ProbeResult {
  uint32_t K = 0, N = 0;
  uint32_t repeat = 0;
  uint32_t seed = 0;
  uint32_t host_threads = 1;
  std::string host_kernel;  // avx512vnni | avxvnni | avx2 | portable
  DeviceInfo device;
  std::vector<RowsResult> rows;
  // The EP's counters of the probe's device calls (warm-up included): what a session with
  // min_device_rows=0 counts for the same calls. Name (snake_case) and value.
  std::vector<std::pair<std::string, uint64_t>> device_counters;
};

// Throws ProbeOptionError for invalid options; device trouble is reported in the result.
ProbeResult run_probe(const ProbeOptions& options);

}  // namespace onebit::probes
