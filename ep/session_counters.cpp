// SPDX-License-Identifier: Apache-2.0
#include "session_counters.h"

namespace onebit {

std::string Counters::summary_line() const {
  return "onebit: qdq runs=" + std::to_string(qdq_runs.load()) + " groups=" + std::to_string(groups.load());
}

Counters& process_counters() {
  static Counters counters;
  return counters;
}

}  // namespace onebit
