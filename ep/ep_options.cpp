// SPDX-License-Identifier: Apache-2.0
#include "ep_options.h"

#include <cstdlib>
#include <stdexcept>

namespace onebit {

namespace {

constexpr const char* kValidKeys = "device, min_device_rows, trace, session_id";

std::invalid_argument bad_value(const std::string& key, const std::string& value, const std::string& valid) {
  return std::invalid_argument("onebit: option " + key + "='" + value + "' is invalid; expected " + valid);
}

bool parse_flag(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  throw bad_value(key, value, "0, 1, true or false");
}

int64_t parse_rows(const std::string& key, const std::string& value) {
  size_t used = 0;
  long long rows = -1;
  try {
    rows = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || rows < 0) throw bad_value(key, value, "a non-negative integer");
  return rows;
}

}  // namespace

EpOptions parse_ep_options(const std::map<std::string, std::string>& entries) {
  EpOptions options;
  for (const auto& [key, value] : entries) {
    if (key == "device") {
      if (value != "auto" && value != "none") throw bad_value(key, value, "auto or none (this build has no device backend)");
      options.device = value;
    } else if (key == "min_device_rows") {
      options.min_device_rows = parse_rows(key, value);
    } else if (key == "trace") {
      options.trace = parse_flag(key, value);
    } else if (key == "session_id") {
      options.session_id = value;
    } else {
      throw std::invalid_argument("onebit: unknown option '" + key + "'; valid options are: " + kValidKeys);
    }
  }
  options.trace = options.trace || trace_from_env();
  return options;
}

bool trace_from_env() {
  const char* value = std::getenv("ONEBIT_EP_TRACE");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

}  // namespace onebit
