// SPDX-License-Identifier: Apache-2.0
// The addon's entry: load(ortPath, epPath), createSession(model, config), processCounters(), probe(options),
// constants, parseRoutes(text, file), routeFor(entries, K, N, M), isTracePath(value), isCostModel(value),
// costModelProblem(value), allocateTensor(type, dims).
#include <napi.h>

#include "constants.h"
#include "inference_session.h"
#include "js_error.h"
#include "ort_runtime.h"
#include "probe.h"
#include "tensor_io.h"

namespace onebit::node {

namespace {

Napi::Value load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    const OrtRuntime& rt = load_runtime(info[0].ToString().Utf8Value(), info[1].ToString().Utf8Value());
    Napi::Object result = Napi::Object::New(env);
    result.Set("ortVersion", rt.ort_version);
    result.Set("ortApiVersion", ORT_API_VERSION);
    result.Set("epApiVersion", rt.ep_api_version);
    result.Set("epLibraryPath", rt.ep_library_path);
    return result;
  } catch (const CodedError& e) {
    throw to_js_error(env, e);
  }
}

// allocateTensor(type: ONNX element type, dims: number[]) -> ArrayBuffer (zeroed, ours: see tensor_io.h)
Napi::Value allocate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    runtime();
    return allocate_tensor(env, static_cast<ONNXTensorElementDataType>(info[0].As<Napi::Number>().Int32Value()),
                           info[1].As<Napi::Array>());
  } catch (const CodedError& e) {
    throw to_js_error(env, e);
  }
}

Napi::Value process_counters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CounterList counters;
  try {
    runtime().counters("", counters);
  } catch (const CodedError& e) {
    throw to_js_error(env, e);
  }
  Napi::Object o = Napi::Object::New(env);
  for (const auto& [name, value] : counters) o.Set(name, Napi::Number::New(env, static_cast<double>(value)));
  return o;
}

Napi::Object init(Napi::Env env, Napi::Object exports) {
  exports.Set("load", Napi::Function::New(env, load));
  exports.Set("createSession", Napi::Function::New(env, create_session));
  exports.Set("processCounters", Napi::Function::New(env, process_counters));
  exports.Set("probe", Napi::Function::New(env, probe));
  exports.Set("InferenceSession", InferenceSession::define(env));
  exports.Set("constants", constants(env));
  exports.Set("parseRoutes", Napi::Function::New(env, parse_routes));
  exports.Set("routeFor", Napi::Function::New(env, route_for));
  exports.Set("isTracePath", Napi::Function::New(env, is_trace_path));
  exports.Set("isCostModel", Napi::Function::New(env, is_cost_model));
  exports.Set("costModelProblem", Napi::Function::New(env, cost_model_problem));
  exports.Set("allocateTensor", Napi::Function::New(env, allocate));
  return exports;
}

}  // namespace

}  // namespace onebit::node

static Napi::Object init_addon(Napi::Env env, Napi::Object exports) { return onebit::node::init(env, exports); }

NODE_API_MODULE(onebit_ep, init_addon)
