// SPDX-License-Identifier: Apache-2.0
#include "engine/counters.h"

namespace onebit {

namespace {

constexpr const char* kNames[] = {
    "group_runs",
    "groups",
    "host_rows_policy",
    "host_routes",
    "device_fallbacks",
    "device_busy",
    "device_breaker_skips",
    "device_calls",
    "device_launches",
    "a_bytes_synced",
    "c_bytes_synced",
    "c_syncs_narrowed",
    "c_syncs_whole",
    "designs_built",
    "designs_loaded",
    "designs_failed",
    "device_weight_bytes",
    "host_only_kind",
    "packed_cache_hits",
    "packed_cache_writes",
    "host_ns",
    "device_ns",
    "attention_runs",
    "gate_runs",
    "norm_runs",
};
static_assert(std::size(kNames) == static_cast<size_t>(Counter::Count), "one name per counter");

}  // namespace

const char* counter_name(Counter c) { return kNames[static_cast<size_t>(c)]; }

std::string Counters::summary_line() const {
  std::string line = "onebit:";
  for (size_t i = 0; i < static_cast<size_t>(Counter::Count); ++i) {
    const auto c = static_cast<Counter>(i);
    line += std::string(" ") + counter_name(c) + "=" + std::to_string(get(c));
  }
  return line;
}

std::string Counters::summary_json() const {
  std::string json = "{";
  for (size_t i = 0; i < static_cast<size_t>(Counter::Count); ++i) {
    const auto c = static_cast<Counter>(i);
    json += std::string(i ? ", " : "") + "\"" + counter_name(c) + "\": " + std::to_string(get(c));
  }
  return json + "}";
}

Counters& process_counters() {
  static Counters counters;
  return counters;
}

}  // namespace onebit
