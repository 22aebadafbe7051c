// SPDX-License-Identifier: Apache-2.0
// What the addon keeps per JS environment (the main thread, each worker): the InferenceSession
// class, and the property names it reads and writes at every run ("type", "dims", "data",
// "isTensor"). A name passed as a C string is converted and looked up in V8's string table at each
// use: 61 inputs and 61 outputs a SmolLM2 decode step.
#pragma once
#include <napi.h>

namespace onebit::node {

// Keeps `session_class` for this environment (once, when the addon loads in it).
void init_addon_data(Napi::Env env, Napi::Function session_class);

Napi::FunctionReference& session_class(Napi::Env env);

struct PropertyKeys {
  Napi::Value type, dims, data, is_tensor;
};

// This environment's keys, valid in the calling scope (Node-API 8 keeps references to objects
// only, so the strings live in an array).
PropertyKeys property_keys(Napi::Env env);

}  // namespace onebit::node
