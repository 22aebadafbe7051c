// SPDX-License-Identifier: Apache-2.0
#include "engine/counters.h"

namespace onebit {

namespace {

constexpr CounterName kNames[] = {
    {"qdq_runs", "qdq runs"},
    {"groups", "groups"},
    {"host_rows_policy", "host-rows policy"},
    {"host_routes", "host routes"},
    {"device_fallbacks", "device fallbacks"},
    {"device_busy", "device-busy"},
    {"device_breaker_skips", "device-breaker skips"},
    {"device_calls", "device calls"},
    {"device_launches", "launches"},
    {"a_bytes_synced", "A bytes"},
    {"c_bytes_synced", "C bytes"},
    {"c_syncs_narrowed", "C syncs narrowed"},
    {"c_syncs_whole", "C syncs whole"},
    {"designs_built", "designs built"},
    {"designs_loaded", "designs loaded"},
    {"designs_failed", "designs failed"},
    {"host_only_kind", "host-only kind"},
    {"host_ns", "host ns"},
    {"device_ns", "device ns"},
};
static_assert(std::size(kNames) == static_cast<size_t>(Counter::Count), "one name per counter");

}  // namespace

const CounterName& counter_name(Counter c) { return kNames[static_cast<size_t>(c)]; }

std::string Counters::summary_line() const {
  std::string line = "onebit:";
  for (size_t i = 0; i < static_cast<size_t>(Counter::Count); ++i) {
    const auto c = static_cast<Counter>(i);
    line += std::string(" ") + counter_name(c).label + "=" + std::to_string(get(c));
  }
  return line;
}

std::string Counters::summary_json() const {
  std::string json = "{";
  for (size_t i = 0; i < static_cast<size_t>(Counter::Count); ++i) {
    const auto c = static_cast<Counter>(i);
    json += std::string(i ? ", " : "") + "\"" + counter_name(c).id + "\": " + std::to_string(get(c));
  }
  return json + "}";
}

Counters& process_counters() {
  static Counters counters;
  return counters;
}

}  // namespace onebit
