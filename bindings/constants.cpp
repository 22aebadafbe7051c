// SPDX-License-Identifier: Apache-2.0
#include "constants.h"

#include <iterator>
#include <stdexcept>
#include <string>

#include "engine/counters.h"
#include "engine/ep_options.h"
#include "engine/routes_table.h"
#include "js_error.h"
#include "kernels/gemm_q8.h"
#include "kernels/gemm_q8_kernels.h"
#include "npu/cost_model.h"
#include "npu/device_select.h"
#include "npu/lock_policy.h"
#include "onebit_ep.h"
#include "probes/probe_options.h"

namespace onebit::node {

namespace {

template <typename List>
Napi::Array strings(Napi::Env env, const List& list) {
  Napi::Array array = Napi::Array::New(env, std::size(list));
  for (uint32_t i = 0; i < std::size(list); ++i) array.Set(i, list[i]);
  return array;
}

}  // namespace

Napi::Object constants(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("epName", ONEBIT_EP_NAME);
  o.Set("version", ONEBIT_EP_VERSION);
  o.Set("optionKeys", strings(env, kOptionKeys));
  o.Set("deviceOptions", strings(env, npu::kDeviceOptions));
  o.Set("lockPolicies", strings(env, npu::kLockPolicyNames));
  o.Set("costModels", strings(env, npu::kCostModelGenerations));
  o.Set("costFileSuffix", std::string(npu::kCostFileSuffix));
  o.Set("tracePathRule", kTracePathRule);
  o.Set("nbitsAccuracyValues", strings(env, kNbitsAccuracyValues));
  Napi::Array counters = Napi::Array::New(env, static_cast<size_t>(Counter::Count));
  for (uint32_t i = 0; i < counters.Length(); ++i) counters.Set(i, counter_name(static_cast<Counter>(i)));
  o.Set("counters", counters);
  o.Set("deviceMinRows", static_cast<double>(kDeviceMinRows));
  o.Set("maxDeviceTimeoutMs", static_cast<double>(EpOptions::kMaxDeviceTimeoutMs));
  o.Set("maxPackedCacheMb", static_cast<double>(EpOptions::kMaxPackedCacheMb));
  o.Set("maxK", static_cast<double>(kMaxK));
  o.Set("hostKernel", selected_kernel_name());
  Napi::Object probe = Napi::Object::New(env);
  probe.Set("maxK", probes::max_probe_k());
  probe.Set("maxN", npu::kMaxN);
  probe.Set("maxRows", probes::kMaxProbeRows);
  probe.Set("maxRepeat", probes::kMaxProbeRepeat);
  o.Set("probeLimits", probe);
  return o;
}

Napi::Value parse_routes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    const RoutesTable table = RoutesTable::parse(info[0].ToString().Utf8Value(), info[1].ToString().Utf8Value());
    Napi::Array entries = Napi::Array::New(env);
    for (const auto& [shape, rows] : table.entries())
      for (const auto& [m, route] : rows) {
        Napi::Object e = Napi::Object::New(env);
        e.Set("K", static_cast<double>(shape.first));
        e.Set("N", static_cast<double>(shape.second));
        e.Set("rows", static_cast<double>(m));
        e.Set("route", route == Route::Device ? "device" : "host");
        entries.Set(entries.Length(), e);
      }
    return entries;
  } catch (const std::invalid_argument& e) {
    throw to_js_error(env, CodedError("ONEBIT_OPTION", e.what()));
  }
}

Napi::Value is_trace_path(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(),
                            info[0].IsString() && onebit::is_trace_path(info[0].As<Napi::String>().Utf8Value()));
}

Napi::Value is_cost_model(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(),
                            info[0].IsString() && npu::is_cost_model_reference(info[0].As<Napi::String>().Utf8Value()));
}

Napi::Value cost_model_problem(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "costModelProblem: the cost model must be a string");
  const npu::Result<npu::CostModel> model = npu::load_cost_model(info[0].As<Napi::String>().Utf8Value());
  if (model) return env.Null();
  return Napi::String::New(env, model.error().reason);
}

Napi::Value route_for(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray())
    throw Napi::TypeError::New(env, "routeFor: entries must be an array of { K, N, rows, route }");
  const Napi::Array entries = info[0].As<Napi::Array>();
  RoutesTable table;
  for (uint32_t i = 0; i < entries.Length(); ++i) {
    if (!entries.Get(i).IsObject())
      throw Napi::TypeError::New(env, "routeFor: entries must be an array of { K, N, rows, route }");
    const Napi::Object e = entries.Get(i).As<Napi::Object>();
    const auto number = [&](const char* key) { return static_cast<int64_t>(e.Get(key).ToNumber().Int64Value()); };
    const std::string route = e.Get("route").ToString().Utf8Value();
    table.set(number("K"), number("N"), number("rows"), route == "device" ? Route::Device : Route::Host);
  }
  const std::optional<Route> route =
      table.route(info[1].ToNumber().Int64Value(), info[2].ToNumber().Int64Value(), info[3].ToNumber().Int64Value());
  if (!route) return env.Null();
  return Napi::String::New(env, *route == Route::Device ? "device" : "host");
}

}  // namespace onebit::node
