// SPDX-License-Identifier: Apache-2.0
// Tracing counters kept per session (one EP instance) and process-wide.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace onebit {

enum class Counter {
  GroupRuns,           // fused-group executions: every run adds one per group the EP claimed
  Groups,              // fused groups compiled
  HostRowsPolicy,      // calls kept on the host: fewer rows than min_device_rows
  HostRoutes,          // calls kept on the host by the routes table
  DeviceFallbacks,     // calls meant for the device that ran on the host after a device error
  DeviceBusy,          // calls that found the device held by another process
  DeviceBreakerSkips,  // calls kept on the host while the device's circuit breaker is open
  DeviceCalls,         // calls that ran on the device
  DeviceLaunches,
  ABytesSynced,
  CBytesSynced,
  CSyncsNarrowed,  // C syncs of only the rows read (rows × N × 4 bytes)
  CSyncsWhole,     // C syncs of the whole buffer (ONEBIT_NPU_NO_C_NARROW, ONEBIT_NPU_DBG)
  DesignsBuilt,
  DesignsLoaded,
  DesignsFailed,      // shapes whose designs could not be had: their calls run on the host
  DeviceWeightBytes,  // weight bytes packed and uploaded to the device (none for weights found there)
  HostOnlyKind,       // calls kept on the host: the device has no design for their group kind
  PackedCacheHits,    // weights mapped from the packed-weights cache folder instead of packed
  PackedCacheWrites,  // weights packed and written to the packed-weights cache folder
  HostNs,             // time in host calls (gemm_q8 + epilogue)
  DeviceNs,           // time in device calls (upload, launches, syncs, epilogue)
  AttentionRuns,      // GroupQueryAttention executions on the EP (ep/attention_kernel.h)
  GateRuns,           // SwiGLU gates computed with their gate and up projections (ep/silu_gate_match.h)
  NormRuns,  // SkipSimplifiedLayerNormalization computed before the projections reading it (ep/skip_norm_match.h)
  Count
};

// The counter's one name, snake_case: in the trace line, the trace file, OnebitEp_GetCounters and
// (camel-cased) the TypeScript counters.
const char* counter_name(Counter c);

class Counters {
 public:
  void add(Counter c, uint64_t n = 1) { values_[index(c)].fetch_add(n, std::memory_order_relaxed); }
  uint64_t get(Counter c) const { return values_[index(c)].load(std::memory_order_relaxed); }

  // "onebit: group_runs=N groups=N host_rows_policy=N ..."
  std::string summary_line() const;
  // {"group_runs": N, ...}
  std::string summary_json() const;

 private:
  static size_t index(Counter c) { return static_cast<size_t>(c); }
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Counter::Count)> values_{};
};

// Counters summed over every session of this process.
Counters& process_counters();

// Adds to a session's counters and to the process-wide ones.
inline void count(Counters& session, Counter c, uint64_t n = 1) {
  session.add(c, n);
  process_counters().add(c, n);
}

}  // namespace onebit
