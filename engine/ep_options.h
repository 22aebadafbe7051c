// SPDX-License-Identifier: Apache-2.0
// The EP's provider options (key/value strings), validated once per session.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/activation_matmul_policy.h"
#include "npu/cost_model.h"

namespace onebit {

// Calls with fewer rows never touch the device unless the session says otherwise (option
// min_device_rows): below it a launch and its syncs cost more than the host kernel.
constexpr int64_t kDeviceMinRows = 8;

// The provider option keys, as ORT passes them (snake_case); the Node package's camelCase options
// map onto these.
constexpr std::array<const char*, 12> kOptionKeys = {"device",
                                                     "min_device_rows",
                                                     "designs_dir",
                                                     "routes",
                                                     "device_lock",
                                                     "device_timeout_ms",
                                                     "trace",
                                                     "session_id",
                                                     "cost_model",
                                                     "matmul_nbits_accuracy",
                                                     "packed_cache_dir",
                                                     "packed_cache_max_mb"};

// A value of one option that the EP cannot use starts its message with these words and the key:
// "onebit: option <key>='<value>' is invalid; <reason>". The Node addon finds them inside ORT's
// wrapper text to throw OnebitOptionError naming the option (bindings/ep_error.cpp).
constexpr const char* kOptionErrorPrefix = "onebit: option ";
// That error; a leading "onebit: " of `reason` (a message of the reader that refused the value)
// is dropped.
std::invalid_argument option_error(const std::string& key, const std::string& value, std::string reason);

// Values of matmul_nbits_accuracy: "level4" (default) claims the MatMulNBits nodes whose
// accuracy_level is 4, the level that lets a runtime quantize their activations to int8; "any"
// claims every level, quantizing activations where the model asked for float accuracy.
constexpr std::array<const char*, 2> kNbitsAccuracyValues = {"level4", "any"};

struct EpOptions {
  // Offload device (npu::kDeviceOptions): "auto" takes a real NPU if a backend finds one (none in
  // this build), "emu" the emulated array, "none" keeps everything on the host. ONEBIT_DEVICE overrides.
  std::string device = "auto";
  // Calls with fewer rows than this never go to the device.
  int64_t min_device_rows = kDeviceMinRows;
  // Where designs are cached; empty = the user's cache directory.
  std::string designs_dir;
  // A routes file from ep-probe --save-routes; empty = none.
  std::string routes;
  // Device lock (npu::kLockPolicyNames): "call" (taken per call, default) or "session" (kept from
  // the first call on).
  std::string device_lock = "call";
  // Longest a device call may take (queueing behind the shape's earlier calls included) before it
  // falls back to the host. Bounded (one day) so that now + timeout cannot overflow the clock's
  // nanosecond count.
  int64_t device_timeout_ms = 30000;
  static constexpr int64_t kMaxDeviceTimeoutMs = 86'400'000;
  // Print the counter summary line to stderr when the session is released.
  bool trace = false;
  // Also write per-call events there (Chrome trace-event JSON); empty = none.
  std::string trace_file;
  // What named trace_file, for its errors: the option "trace" or ONEBIT_EP_TRACE.
  std::string trace_file_from = "trace";
  // Names the session for hosts that read its counters (OnebitEp_GetCounters); empty = unnamed.
  std::string session_id;
  // "xdna1", "xdna2" or a cost file (*.json): device calls also report their modelled time on
  // that hardware (npu/cost_model.h), in the trace. Read once, here.
  std::optional<npu::CostModel> cost_model;
  // Which activation × activation groups are claimed (ONEBIT_ACTIVATION_MATMULS; not an option:
  // the measured rule is the product's, the override is for benchmarks and tests).
  ActivationMatmuls activation_matmuls = ActivationMatmuls::Measured;
  // MatMulNBits with accuracy_level 0-3 claimed too (matmul_nbits_accuracy=any).
  bool nbits_any_accuracy = false;
  // Packed weights shared with the process's other sessions (engine/shared_weights.h);
  // ONEBIT_SHARE_WEIGHTS=0 gives the session its own copy (not an option: for measuring).
  bool share_weights = true;
  // GroupQueryAttention nodes claimed (ep/attention_kernel.h); ONEBIT_ATTENTION=ort leaves them to
  // ORT (not an option: for measuring the difference).
  bool claim_attention = true;
  // A packed-weights cache folder shared with other processes (engine/packed_cache.h); empty =
  // none. ONEBIT_PACKED_CACHE_DIR gives it to sessions that do not set it. Checked here: an
  // existing, writable directory.
  std::string packed_cache_dir;
  // The most its entries may take together; least recently used ones are removed to stay under it.
  int64_t packed_cache_max_mb = 2048;
  static constexpr int64_t kMaxPackedCacheMb = int64_t{1} << 30;  // 1 PiB: bytes fit in 64 bits
};

// A trace option's value names a file, rather than being a typo of 0/1 such as "yes", when it
// is absolute, starts with ./ or ../, or ends in .json. The one rule: the Node package checks its
// `trace` option through it (bindings/constants.cpp). A relative path is taken against the
// working directory when the session is created.
bool is_trace_path(std::string_view value);
// The rule in words, for messages (here and in the Node package).
constexpr const char* kTracePathRule = "absolute, starting with ./ or ../, or ending in .json";

// Parses `entries` (keys without the "ep.<name>." prefix), then applies ONEBIT_EP_TRACE,
// ONEBIT_ACTIVATION_MATMULS, ONEBIT_SHARE_WEIGHTS and ONEBIT_PACKED_CACHE_DIR.
// Unknown keys and bad values throw std::invalid_argument naming the key and what is valid.
EpOptions parse_ep_options(const std::map<std::string, std::string>& entries);

}  // namespace onebit
