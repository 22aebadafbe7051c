// SPDX-License-Identifier: Apache-2.0
// What one probe measures: a GEMM shape K×N, the rows values to time, how often, on which device.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace onebit::probes {

struct ProbeOptions {
  uint32_t K = 0;
  uint32_t N = 0;
  std::vector<uint32_t> rows = {1, 4, 32, 36};
  uint32_t repeat = 20;        // timed calls per path and rows value (after one untimed warm-up call)
  std::string device = "emu";  // auto | emu | none (ONEBIT_DEVICE overrides, as in the EP)
  std::string designs_dir;     // empty: the default design cache directory
  std::string lock_path;       // empty: the default device lock file
  uint32_t seed = 1;           // operands are a pure function of (K, N, seed)
  std::string cost_model;      // empty, "xdna1", "xdna2" or a cost file: also report each device
                               // call's modelled time on that hardware (npu/cost_model.h)
};

// Invalid options (a zero or too large dimension, no rows, repeat 0, an unknown device name,
// a cost model that is not a generation or a valid cost file).
struct ProbeOptionError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

constexpr uint32_t kMaxProbeRows = 65536;
constexpr uint32_t kMaxProbeRepeat = 100000;
// The largest K both routes hold: the host's int32 bound and the device's.
uint32_t max_probe_k();

// Throws ProbeOptionError naming the bad field and what is valid.
void validate(const ProbeOptions& options);

}  // namespace onebit::probes
