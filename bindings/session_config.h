// SPDX-License-Identifier: Apache-2.0
// Session options as the TypeScript layer hands them over (already validated and normalised),
// turned into an OrtSessionOptions with our EP appended and ORT's CPU EP as the fallback.
#pragma once
#include <napi.h>
#include <onnxruntime_c_api.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onebit::node {

using StringPairs = std::vector<std::pair<std::string, std::string>>;

struct SessionConfig {
  std::optional<int> intra_op_threads;
  std::optional<int> inter_op_threads;
  std::optional<int> graph_optimization_level;  // GraphOptimizationLevel value
  std::optional<int> execution_mode;            // ExecutionMode value
  std::optional<int> log_severity_level;
  std::optional<int> log_verbosity_level;
  std::optional<std::string> log_id;
  std::optional<std::string> optimized_model_path;
  std::optional<std::string> profile_file_prefix;  // set = profiling on
  std::optional<bool> cpu_mem_arena;
  std::optional<bool> mem_pattern;
  StringPairs config_entries;  // session config ("extra")
  std::vector<std::pair<std::string, int64_t>> free_dimension_overrides;
  StringPairs ep_options;  // our EP's provider options
};

// Reads the plain object built by ts/session_options.ts.
SessionConfig read_session_config(const Napi::Object& object);

// Creates the ORT options; the caller releases them with ReleaseSessionOptions.
OrtSessionOptions* make_session_options(const SessionConfig& config);

}  // namespace onebit::node
