// SPDX-License-Identifier: Apache-2.0
// What the TypeScript side must agree on with the native code, defined once there and handed
// over: names, option keys and values, limits; and the routes-file reader.
#pragma once
#include <napi.h>

namespace onebit::node {

// { epName, version, optionKeys, deviceOptions, lockPolicies, deviceMinRows, maxK, probeLimits }
Napi::Object constants(Napi::Env env);

// parseRoutes(text, file) -> [{ K, N, rows, route }], or throws (code ONEBIT_OPTION) naming the line.
Napi::Value parse_routes(const Napi::CallbackInfo& info);

}  // namespace onebit::node
