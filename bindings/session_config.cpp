// SPDX-License-Identifier: Apache-2.0
#include "session_config.h"

#include "ort_runtime.h"

namespace onebit::node {

namespace {

template <typename T>
std::optional<T> optional_field(const Napi::Object& object, const char* name);

template <>
std::optional<int> optional_field<int>(const Napi::Object& object, const char* name) {
  Napi::Value value = object.Get(name);
  if (!value.IsNumber()) return std::nullopt;
  return value.As<Napi::Number>().Int32Value();
}

template <>
std::optional<bool> optional_field<bool>(const Napi::Object& object, const char* name) {
  Napi::Value value = object.Get(name);
  if (!value.IsBoolean()) return std::nullopt;
  return value.As<Napi::Boolean>().Value();
}

template <>
std::optional<std::string> optional_field<std::string>(const Napi::Object& object, const char* name) {
  Napi::Value value = object.Get(name);
  if (!value.IsString()) return std::nullopt;
  return value.As<Napi::String>().Utf8Value();
}

// [[key, value], ...] with string values.
StringPairs string_pairs(const Napi::Object& object, const char* name) {
  StringPairs pairs;
  Napi::Value value = object.Get(name);
  if (!value.IsArray()) return pairs;
  Napi::Array array = value.As<Napi::Array>();
  for (uint32_t i = 0; i < array.Length(); ++i) {
    Napi::Array pair = array.Get(i).As<Napi::Array>();
    pairs.emplace_back(pair.Get(0u).ToString().Utf8Value(), pair.Get(1u).ToString().Utf8Value());
  }
  return pairs;
}

}  // namespace

SessionConfig read_session_config(const Napi::Object& object) {
  SessionConfig config;
  config.intra_op_threads = optional_field<int>(object, "intraOpNumThreads");
  config.inter_op_threads = optional_field<int>(object, "interOpNumThreads");
  config.graph_optimization_level = optional_field<int>(object, "graphOptimizationLevel");
  config.execution_mode = optional_field<int>(object, "executionMode");
  config.log_severity_level = optional_field<int>(object, "logSeverityLevel");
  config.log_verbosity_level = optional_field<int>(object, "logVerbosityLevel");
  config.log_id = optional_field<std::string>(object, "logId");
  config.optimized_model_path = optional_field<std::string>(object, "optimizedModelFilePath");
  config.profile_file_prefix = optional_field<std::string>(object, "profileFilePrefix");
  config.cpu_mem_arena = optional_field<bool>(object, "enableCpuMemArena");
  config.mem_pattern = optional_field<bool>(object, "enableMemPattern");
  config.config_entries = string_pairs(object, "configEntries");
  config.ep_options = string_pairs(object, "epOptions");
  for (const auto& [name, value] : string_pairs(object, "freeDimensionOverrides"))
    config.free_dimension_overrides.emplace_back(name, std::stoll(value));
  return config;
}

OrtSessionOptions* make_session_options(const SessionConfig& config) {
  const OrtRuntime& rt = runtime();
  const OrtApi& api = *rt.api;
  OrtSessionOptions* options = nullptr;
  check(api.CreateSessionOptions(&options));
  try {
    if (config.intra_op_threads) check(api.SetIntraOpNumThreads(options, *config.intra_op_threads));
    if (config.inter_op_threads) check(api.SetInterOpNumThreads(options, *config.inter_op_threads));
    if (config.graph_optimization_level)
      check(api.SetSessionGraphOptimizationLevel(
          options, static_cast<GraphOptimizationLevel>(*config.graph_optimization_level)));
    if (config.execution_mode)
      check(api.SetSessionExecutionMode(options, static_cast<ExecutionMode>(*config.execution_mode)));
    if (config.log_severity_level) check(api.SetSessionLogSeverityLevel(options, *config.log_severity_level));
    if (config.log_verbosity_level) check(api.SetSessionLogVerbosityLevel(options, *config.log_verbosity_level));
    if (config.log_id) check(api.SetSessionLogId(options, config.log_id->c_str()));
    if (config.optimized_model_path)
      check(api.SetOptimizedModelFilePath(options, config.optimized_model_path->c_str()));
    if (config.profile_file_prefix) check(api.EnableProfiling(options, config.profile_file_prefix->c_str()));
    if (config.cpu_mem_arena)
      check(*config.cpu_mem_arena ? api.EnableCpuMemArena(options) : api.DisableCpuMemArena(options));
    if (config.mem_pattern) check(*config.mem_pattern ? api.EnableMemPattern(options) : api.DisableMemPattern(options));
    for (const auto& [key, value] : config.config_entries)
      check(api.AddSessionConfigEntry(options, key.c_str(), value.c_str()));
    for (const auto& [name, value] : config.free_dimension_overrides)
      check(api.AddFreeDimensionOverrideByName(options, name.c_str(), value));

    // Our EP first; whatever it does not claim goes to ORT's CPU EP, which every session has.
    std::vector<const char*> keys, values;
    for (const auto& [key, value] : config.ep_options) {
      keys.push_back(key.c_str());
      values.push_back(value.c_str());
    }
    check(api.SessionOptionsAppendExecutionProvider_V2(options, rt.env, &rt.ep_device, 1, keys.data(), values.data(),
                                                       keys.size()));
  } catch (...) {
    api.ReleaseSessionOptions(options);
    throw;
  }
  return options;
}

}  // namespace onebit::node
