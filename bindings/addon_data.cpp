// SPDX-License-Identifier: Apache-2.0
#include "addon_data.h"

namespace onebit::node {

namespace {

struct AddonData {
  Napi::FunctionReference session_class;
  Napi::ObjectReference keys;  // ["type", "dims", "data", "isTensor"]
};

}  // namespace

void init_addon_data(Napi::Env env, Napi::Function session_class) {
  Napi::Array keys = Napi::Array::New(env, 4);
  const char* names[] = {"type", "dims", "data", "isTensor"};
  for (uint32_t i = 0; i < 4; ++i) keys.Set(i, Napi::String::New(env, names[i]));
  env.SetInstanceData(new AddonData{Napi::Persistent(session_class), Napi::Persistent(keys.As<Napi::Object>())});
}

Napi::FunctionReference& session_class(Napi::Env env) { return env.GetInstanceData<AddonData>()->session_class; }

PropertyKeys property_keys(Napi::Env env) {
  Napi::Object keys = env.GetInstanceData<AddonData>()->keys.Value();
  return {keys.Get(0u), keys.Get(1u), keys.Get(2u), keys.Get(3u)};
}

}  // namespace onebit::node
