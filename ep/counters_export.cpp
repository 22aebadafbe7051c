// SPDX-License-Identifier: Apache-2.0
// The library's own C entry points (include/onebit_ep.h) beside the ORT factory functions, so a
// host (our Node addon) can read a live session's counters as numbers instead of parsing the trace line. Sessions are
// named by the `session_id` provider option the host passes; the registry only holds sessions that have one.
#include "counters_export.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "onebit_ep.h"
#include "ort_api.h"

namespace onebit {

namespace {

std::mutex registry_mutex;
std::map<std::string, const Counters*>& registry() {
  static std::map<std::string, const Counters*> sessions;
  return sessions;
}

}  // namespace

void publish_session_counters(const std::string& session_id, const Counters* counters) {
  if (session_id.empty()) return;
  std::lock_guard lock(registry_mutex);
  registry()[session_id] = counters;
}

void withdraw_session_counters(const std::string& session_id) {
  if (session_id.empty()) return;
  std::lock_guard lock(registry_mutex);
  registry().erase(session_id);
}

}  // namespace onebit

extern "C" {

const char* OnebitEp_Version(void) { return ONEBIT_EP_VERSION; }

int64_t OnebitEp_GetCounters(const char* session_id, OnebitEpCounter* out, size_t capacity) {
  std::lock_guard lock(onebit::registry_mutex);
  const onebit::Counters* counters = &onebit::process_counters();
  if (session_id != nullptr && *session_id != '\0') {
    auto it = onebit::registry().find(session_id);
    if (it == onebit::registry().end()) return -1;
    counters = it->second;
  }
  const auto count = static_cast<size_t>(onebit::Counter::Count);
  for (size_t i = 0; i < count && i < capacity; ++i) {
    const auto c = static_cast<onebit::Counter>(i);
    out[i] = {onebit::counter_name(c), counters->get(c)};
  }
  return static_cast<int64_t>(count);
}
}
