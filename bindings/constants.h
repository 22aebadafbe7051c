// SPDX-License-Identifier: Apache-2.0
// What the TypeScript side must agree on with the native code, defined once there and handed
// over: names, option keys and values, limits, counter names; and the rules both sides apply (the
// routes-file reader and lookup, the trace-path and cost-model rules), as functions.
#pragma once
#include <napi.h>

namespace onebit::node {

// { epName, version, optionKeys, deviceOptions, lockPolicies, costModels, costFileSuffix,
//   tracePathRule, counters: [{ id, label }], deviceMinRows, maxDeviceTimeoutMs, maxK, hostKernel,
//   probeLimits }
Napi::Object constants(Napi::Env env);

// parseRoutes(text, file) -> [{ K, N, rows, route }], or throws (code ONEBIT_OPTION) naming the line.
Napi::Value parse_routes(const Napi::CallbackInfo& info);

// isTracePath(value) -> boolean: engine/ep_options' is_trace_path (false for a non-string).
Napi::Value is_trace_path(const Napi::CallbackInfo& info);
// isCostModel(value) -> boolean: a built-in generation's name or a cost file (*.json).
Napi::Value is_cost_model(const Napi::CallbackInfo& info);
// costModelProblem(value) -> string | null: why the EP cannot use that cost model (npu::load_cost_model's
// reason: an unknown generation, an unreadable or malformed cost file), or null when it can.
Napi::Value cost_model_problem(const Napi::CallbackInfo& info);
// routeFor(entries, K, N, M) -> 'host' | 'device' | null: the EP's RoutesTable lookup over entries.
Napi::Value route_for(const Napi::CallbackInfo& info);

}  // namespace onebit::node
