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

// Makes a session's counters readable through OnebitEp_GetCounters under its `session_id` option.
void publish_session_counters(const std::string& session_id, const Counters* counters);
void withdraw_session_counters(const std::string& session_id);

}  // namespace onebit
