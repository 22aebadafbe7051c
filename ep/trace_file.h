// SPDX-License-Identifier: Apache-2.0
// Per-call events of one session, written at release as Chrome trace-event JSON (opens in
// Perfetto / chrome://tracing; ep-trace summarises it).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

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
  uint64_t thread = 0;  // set by record(): the thread that ran the call
};

// Microseconds on a clock shared by every event of the process.
uint64_t trace_clock_us();

class TraceFile {
 public:
  // cost_model: the modelled generation the events' modelled_us are for (empty: none).
  explicit TraceFile(std::string path, std::string cost_model = {})
      : path_(std::move(path)), cost_model_(std::move(cost_model)) {}

  // Thread-safe; events past kMaxEvents are dropped (and counted in the file).
  void record(const TraceEvent& event);
  // Writes the events and the counters; a second session of the process writing to the same
  // path writes <stem>.2.json, and so on. Returns the path written, or throws on I/O errors.
  std::string write(const Counters& counters) const;

  static constexpr size_t kMaxEvents = 1'000'000;

 private:
  std::string path_;
  std::string cost_model_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  uint64_t dropped_ = 0;
};

}  // namespace onebit
