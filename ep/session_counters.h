// SPDX-License-Identifier: Apache-2.0
// Tracing counters kept per session (one EP instance) and process-wide.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace onebit {

struct Counters {
  std::atomic<uint64_t> qdq_runs{0};  // fused-group executions
  std::atomic<uint64_t> groups{0};    // fused groups compiled

  // "onebit: qdq runs=N groups=N"
  std::string summary_line() const;
};

// Counters summed over every session of this process.
Counters& process_counters();

}  // namespace onebit
