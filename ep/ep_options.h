// SPDX-License-Identifier: Apache-2.0
// The EP's provider options (key/value strings), validated once per session.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace onebit {

struct EpOptions {
  // Device to offload to: "auto" picks one if a backend finds one, "none" keeps everything on
  // the host. This build has no device backend yet, so both run on the host.
  std::string device = "auto";
  // Calls with fewer rows than this never go to a device.
  int64_t min_device_rows = 8;
  // Print the counter summary line to stderr when the session is released.
  bool trace = false;
  // Names the session for hosts that read its counters (OnebitEp_GetCounters); empty = unnamed.
  std::string session_id;
};

// Parses `entries` (keys without the "ep.<name>." prefix). Unknown keys and bad values throw
// std::invalid_argument with a message that names the key and lists what is valid.
EpOptions parse_ep_options(const std::map<std::string, std::string>& entries);

// The environment switch ONEBIT_EP_TRACE: unset or "0" = off, anything else = on.
bool trace_from_env();

}  // namespace onebit
