// SPDX-License-Identifier: Apache-2.0
#include "engine/ep_options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "npu/device_select.h"
#include "npu/lock_policy.h"

namespace onebit {

namespace {

std::string valid_keys() {
  std::string list;
  for (const char* key : kOptionKeys) list += (list.empty() ? "" : ", ") + std::string(key);
  return list;
}

std::invalid_argument bad_value(const std::string& key, const std::string& value, const std::string& valid) {
  return option_error(key, value, "expected " + valid);
}

int64_t parse_int(const std::string& key, const std::string& value, int64_t min,
                  int64_t max = std::numeric_limits<int64_t>::max()) {
  size_t used = 0;
  long long number = min - 1;
  try {
    number = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || number < min || number > max)
    throw bad_value(key, value,
                    max == std::numeric_limits<int64_t>::max()
                        ? "an integer >= " + std::to_string(min)
                        : "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  return number;
}

// "0"/"false" = off, "1"/"true" = on, a path (is_trace_path) = on and write a trace file there.
void parse_trace(const std::string& key, const std::string& value, EpOptions& options) {
  if (value == "0" || value == "false") return;
  options.trace = true;
  if (value == "1" || value == "true") return;
  if (!is_trace_path(value))
    throw bad_value(key, value, std::string("0, 1, or a trace file path (") + kTracePathRule + ")");
  options.trace_file = value;
  options.trace_file_from = key;
}

// A switch in the environment: unset, empty or `on` is true, `off` false, anything else an error.
bool env_switch(const char* name, const char* on, const char* off) {
  const char* env = std::getenv(name);
  const std::string value = env == nullptr ? "" : env;
  if (value.empty() || value == on) return true;
  if (value == off) return false;
  throw std::invalid_argument("onebit: " + std::string(name) + "=" + value + " is invalid: use " + on + " or " + off);
}

// A packed_cache_dir value: an existing directory this process may write into, else an error
// naming `key`, the value and why (the cache is opt-in: a folder that cannot be used is a mistake
// to report, not to work around silently).
std::string checked_cache_dir(const std::string& key, const std::string& value) {
  struct statx info{};  // statx, not stat: stat binds to glibc 2.33, and the EP must load on 2.28
  std::string why;
  if (value.empty() || value.find('\0') != std::string::npos)
    why = "empty";
  else if (::statx(AT_FDCWD, value.c_str(), 0, STATX_TYPE, &info) != 0)
    why = std::strerror(errno);
  else if (!S_ISDIR(info.stx_mode))
    why = "not a directory";
  else if (::access(value.c_str(), W_OK | X_OK) != 0)
    why = std::string("not writable: ") + std::strerror(errno);
  if (!why.empty()) throw bad_value(key, value, "an existing writable directory (" + why + ")");
  return value;
}

}  // namespace

std::invalid_argument option_error(const std::string& key, const std::string& value, std::string reason) {
  constexpr std::string_view kOurs = "onebit: ";
  if (reason.starts_with(kOurs)) reason.erase(0, kOurs.size());
  return std::invalid_argument(kOptionErrorPrefix + key + "='" + value + "' is invalid; " + reason);
}

bool is_trace_path(std::string_view value) {
  return value.starts_with("/") || value.starts_with("./") || value.starts_with("../") ||
         (value.size() > 5 && value.ends_with(".json"));
}

EpOptions parse_ep_options(const std::map<std::string, std::string>& entries) {
  EpOptions options;
  for (const auto& [key, value] : entries) {
    if (key == "device") {
      if (!npu::is_device_option(value)) throw bad_value(key, value, npu::kDeviceOptionsText);
      options.device = value;
    } else if (key == "min_device_rows") {
      options.min_device_rows = parse_int(key, value, 0);
    } else if (key == "designs_dir") {
      options.designs_dir = value;
    } else if (key == "routes") {
      options.routes = value;
    } else if (key == "device_lock") {
      if (!npu::lock_policy_from_name(value)) throw bad_value(key, value, "call or session");
      options.device_lock = value;
    } else if (key == "device_timeout_ms") {
      options.device_timeout_ms = parse_int(key, value, 1, EpOptions::kMaxDeviceTimeoutMs);
    } else if (key == "trace") {
      parse_trace(key, value, options);
    } else if (key == "session_id") {
      options.session_id = value;
    } else if (key == "cost_model") {
      npu::Result<npu::CostModel> model = npu::load_cost_model(value);
      if (!model) throw bad_value(key, value, "xdna1, xdna2 or a readable cost file (*.json): " + model.error().reason);
      options.cost_model = *model;
    } else if (key == "matmul_nbits_accuracy") {
      if (value != kNbitsAccuracyValues[0] && value != kNbitsAccuracyValues[1])
        throw bad_value(key, value, "level4 or any");
      options.nbits_any_accuracy = value == kNbitsAccuracyValues[1];
    } else if (key == "packed_cache_dir") {
      options.packed_cache_dir = checked_cache_dir(key, value);
    } else if (key == "packed_cache_max_mb") {
      options.packed_cache_max_mb = parse_int(key, value, 1, EpOptions::kMaxPackedCacheMb);
    } else {
      throw std::invalid_argument("onebit: unknown option '" + key + "'; valid options are: " + valid_keys());
    }
  }
  const char* env = std::getenv("ONEBIT_EP_TRACE");
  if (env != nullptr && *env != '\0') parse_trace("ONEBIT_EP_TRACE", env, options);
  options.activation_matmuls = activation_matmuls_from_env();
  // ONEBIT_SHARE_WEIGHTS=0: no packed weights shared between sessions; ONEBIT_ATTENTION=ort: no
  // GroupQueryAttention claimed.
  options.share_weights = env_switch("ONEBIT_SHARE_WEIGHTS", "1", "0");
  options.claim_attention = env_switch("ONEBIT_ATTENTION", "onebit", "ort");
  const char* cache_env = std::getenv("ONEBIT_PACKED_CACHE_DIR");
  if (options.packed_cache_dir.empty() && cache_env != nullptr && *cache_env != '\0')
    options.packed_cache_dir = checked_cache_dir("ONEBIT_PACKED_CACHE_DIR", cache_env);
  return options;
}

}  // namespace onebit
