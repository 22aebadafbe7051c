// SPDX-License-Identifier: Apache-2.0
// Per-call events of one session, written at release as Chrome trace-event JSON (opens in
// Perfetto / chrome://tracing; ep-trace summarises it).
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/regular_file.h"
#include "engine/counters.h"

namespace onebit {

struct TraceEvent {
  std::string node;  // the group's name (a copy: the kernel may be gone when the file is written)
  int64_t K = 0, N = 0, rows = 0;
  bool on_device = false;
  const char* reason = "";  // why this route: "device", "rows<min_device_rows", "routes", ...
  uint64_t start_us = 0, duration_us = 0;
  uint32_t launches = 0;
  uint64_t a_bytes = 0, c_bytes = 0;
  bool c_whole = false;
  double device_us = -1;    // a device call: its device part as measured (A upload + launches + C sync)
  double modelled_us = -1;  // a device call under a cost model: that part's modelled time on that hardware
  uint64_t thread = 0;      // set by record(): the thread that ran the call
};

// Microseconds at `at` on a clock shared by every event of the process.
uint64_t trace_clock_us(std::chrono::steady_clock::time_point at);

class TraceFile {
 public:
  // Creates (or empties) the file now, so a bad path fails session creation with its errno; a
  // relative path is resolved against the working directory of this moment. A second session
  // of the process given the same file, by whatever spelling ("t.json", "./t.json", a linked
  // folder), writes <stem>.2.json, and so on: the first such name no trace of the process has (one
  // given "t.2.json" while another writes it gets "t.2.2.json"); a refused path takes no number. Throws
  // std::invalid_argument naming the path and the errno. cost_model: the modelled generation the events' modelled_us
  // are for (empty: none).
  explicit TraceFile(const std::string& path, std::string cost_model = {});

  // Thread-safe; events past kMaxEvents are dropped (and counted in the file).
  void record(const TraceEvent& event);
  // Strict JSON whatever the events hold: every string through npu::json_string, a time that is
  // not a finite number >= 0 left out (test/engine/trace_json_test.cpp).
  // Writes the events and the counters into a file beside it, renamed over it: whoever else
  // writes the same file, it holds one whole trace. Throws std::runtime_error on I/O errors.
  void write(const Counters& counters) const;
  const std::string& path() const { return path_; }

  // At the cap, with node names of ~100 characters: ~29 MB held, a ~35 MB file (measured; docs/options.md).
  static constexpr size_t kMaxEvents = 100'000;

 private:
  std::string path_;  // absolute, its folder resolved
  std::string cost_model_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  uint64_t dropped_ = 0;
};

}  // namespace onebit
