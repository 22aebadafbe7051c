// SPDX-License-Identifier: Apache-2.0
#include "constants.h"

#include <stdexcept>
#include <string>

#include "engine/ep_options.h"
#include "engine/routes_table.h"
#include "js_error.h"
#include "kernels/gemm_q8.h"
#include "kernels/gemm_q8_kernels.h"
#include "npu/device_select.h"
#include "npu/lock_policy.h"
#include "onebit_ep.h"
#include "probes/probe_options.h"

namespace onebit::node {

namespace {

template <typename List>
Napi::Array strings(Napi::Env env, const List& list) {
  Napi::Array array = Napi::Array::New(env, list.size());
  for (uint32_t i = 0; i < list.size(); ++i) array.Set(i, list[i]);
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
  o.Set("deviceMinRows", static_cast<double>(kDeviceMinRows));
  o.Set("maxDeviceTimeoutMs", static_cast<double>(EpOptions::kMaxDeviceTimeoutMs));
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

}  // namespace onebit::node
