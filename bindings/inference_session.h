// SPDX-License-Identifier: Apache-2.0
// The session the TypeScript backend drives: created and run on worker threads, disposable,
// with its input/output metadata and our EP's counters.
#pragma once
#include <napi.h>
#include <onnxruntime_c_api.h>

#include <memory>
#include <string>
#include <vector>

#include "kept_values.h"
#include "ort_runtime.h"

namespace onebit::node {

struct ValueMetadata {
  std::string name;
  bool is_tensor = false;
  int type = 0;                       // ONNX element type
  std::vector<int64_t> shape;         // -1 where symbolic
  std::vector<std::string> symbolic;  // per dim, "" where fixed
  bool also_input = false;            // an output that is also a graph input (ORT passes it through)
};

// The ORT session, shared by the JS object and any run still in flight: the last owner releases
// it, after saving the EP's final counters.
struct NativeSession {
  OrtSession* session = nullptr;
  std::string id;  // our EP's session_id option
  std::vector<ValueMetadata> inputs, outputs;
  KeptValues kept;  // one per input and output
  std::shared_ptr<CounterList> final_counters = std::make_shared<CounterList>();

  NativeSession() = default;
  NativeSession(const NativeSession&) = delete;
  NativeSession& operator=(const NativeSession&) = delete;
  ~NativeSession();
};

class InferenceSession : public Napi::ObjectWrap<InferenceSession> {
 public:
  static Napi::Function define(Napi::Env env);
  // A JS InferenceSession wrapping a freshly created native session.
  static Napi::Object wrap(Napi::Env env, std::shared_ptr<NativeSession> native);

  explicit InferenceSession(const Napi::CallbackInfo& info);

 private:
  // run(plan: Float64Array, data: (typed array | string[] | null)[], runOptions) (run_plan.h)
  //   -> Promise<(output | null)[]> in the plan's output order (null where the output was written
  //   into its pre-allocated tensor)
  Napi::Value run(const Napi::CallbackInfo& info);
  Napi::Value dispose(const Napi::CallbackInfo& info);
  Napi::Value counters(const Napi::CallbackInfo& info);
  Napi::Value input_metadata(const Napi::CallbackInfo& info);
  Napi::Value output_metadata(const Napi::CallbackInfo& info);
  Napi::Value end_profiling(const Napi::CallbackInfo& info);

  const NativeSession& live(Napi::Env env) const;

  std::shared_ptr<NativeSession> native_;
  std::shared_ptr<CounterList> final_counters_;
};

// createSession(model: string | Uint8Array, config) -> Promise<InferenceSession>
Napi::Value create_session(const Napi::CallbackInfo& info);

}  // namespace onebit::node
