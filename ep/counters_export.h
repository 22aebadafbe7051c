// SPDX-License-Identifier: Apache-2.0
// Live sessions' counters, readable by hosts through OnebitEp_GetCounters (include/onebit_ep.h).
#pragma once
#include <string>

#include "engine/counters.h"

namespace onebit {

// Makes a session's counters readable under its `session_id` option (an empty id: not published).
void publish_session_counters(const std::string& session_id, const Counters* counters);
void withdraw_session_counters(const std::string& session_id);

}  // namespace onebit
