// SPDX-License-Identifier: Apache-2.0
#include "inference_session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "addon_data.h"
#include "ep_error.h"
#include "js_error.h"
#include "promise_worker.h"
#include "run_plan.h"
#include "run_threads.h"
#include "session_config.h"
#include "tensor_io.h"

namespace onebit::node {

namespace {

// A name no other session of this process has, handed to our EP as its session_id option.
std::string next_session_id() {
  static std::atomic<uint64_t> next{1};
  return "node-" + std::to_string(getpid()) + "-" + std::to_string(next++);
}

std::vector<ValueMetadata> read_metadata(OrtSession* session, bool inputs) {
  const OrtApi& api = *runtime().api;
  OrtAllocator* allocator = nullptr;
  check(api.GetAllocatorWithDefaultOptions(&allocator));
  size_t count = 0;
  check(inputs ? api.SessionGetInputCount(session, &count) : api.SessionGetOutputCount(session, &count));
  std::vector<ValueMetadata> all(count);
  for (size_t i = 0; i < count; ++i) {
    ValueMetadata& m = all[i];
    char* name = nullptr;
    check(inputs ? api.SessionGetInputName(session, i, allocator, &name)
                 : api.SessionGetOutputName(session, i, allocator, &name));
    m.name = name;
    check(api.AllocatorFree(allocator, name));
    OrtTypeInfo* type_info = nullptr;
    check(inputs ? api.SessionGetInputTypeInfo(session, i, &type_info)
                 : api.SessionGetOutputTypeInfo(session, i, &type_info));
    ONNXType onnx_type = ONNX_TYPE_UNKNOWN;
    OrtStatus* status = api.GetOnnxTypeFromTypeInfo(type_info, &onnx_type);
    m.is_tensor = status == nullptr && onnx_type == ONNX_TYPE_TENSOR;
    if (status == nullptr && m.is_tensor) {
      const OrtTensorTypeAndShapeInfo* tensor = nullptr;
      ONNXTensorElementDataType element = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
      size_t rank = 0;
      status = api.CastTypeInfoToTensorInfo(type_info, &tensor);
      if (status == nullptr) status = api.GetTensorElementType(tensor, &element);
      if (status == nullptr) status = api.GetDimensionsCount(tensor, &rank);
      m.type = element;
      m.shape.resize(rank);
      std::vector<const char*> symbolic(rank, nullptr);
      if (status == nullptr && rank > 0) status = api.GetDimensions(tensor, m.shape.data(), rank);
      if (status == nullptr && rank > 0) status = api.GetSymbolicDimensions(tensor, symbolic.data(), rank);
      for (const char* s : symbolic) m.symbolic.emplace_back(s ? s : "");
    }
    api.ReleaseTypeInfo(type_info);
    check(status);
  }
  return all;
}

Napi::Array metadata_array(Napi::Env env, const std::vector<ValueMetadata>& all) {
  Napi::Array array = Napi::Array::New(env, all.size());
  for (uint32_t i = 0; i < all.size(); ++i) {
    const ValueMetadata& m = all[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", m.name);
    o.Set("isTensor", m.is_tensor);
    if (m.is_tensor) {
      o.Set("type", m.type);
      Napi::Array shape = Napi::Array::New(env, m.shape.size());
      for (uint32_t d = 0; d < m.shape.size(); ++d) {
        // A symbolic (or unknown) dim is its name, as onnxruntime-node reports it.
        if (m.shape[d] < 0)
          shape.Set(d, Napi::String::New(env, m.symbolic[d]));
        else
          shape.Set(d, Napi::Number::New(env, static_cast<double>(m.shape[d])));
      }
      o.Set("shape", shape);
    }
    array.Set(i, o);
  }
  return array;
}

Napi::Object counters_object(Napi::Env env, const CounterList& counters) {
  Napi::Object o = Napi::Object::New(env);
  for (const auto& [name, value] : counters) o.Set(name, Napi::Number::New(env, static_cast<double>(value)));
  return o;
}

class CreateSessionWorker : public PromiseWorker {
 public:
  CreateSessionWorker(Napi::Env env, const Napi::Value& model, SessionConfig config)
      : PromiseWorker(env), config_(std::move(config)) {
    if (model.IsString()) {
      path_ = model.As<Napi::String>().Utf8Value();
    } else {
      Napi::Uint8Array bytes = model.As<Napi::Uint8Array>();
      bytes_ = bytes.Data();
      length_ = bytes.ByteLength();
      keep_bytes_ = Napi::Persistent(model.As<Napi::Object>());  // no copy: hold the JS buffer instead
    }
  }

 protected:
  void work() override {
    const OrtRuntime& rt = runtime();
    auto native = std::make_shared<NativeSession>();
    native->id = next_session_id();
    config_.ep_options.emplace_back("session_id", native->id);
    OrtSessionOptions* options = make_session_options(config_);
    OrtStatus* status = bytes_ ? rt.api->CreateSessionFromArray(rt.env, bytes_, length_, options, &native->session)
                               : rt.api->CreateSession(rt.env, path_.c_str(), options, &native->session);
    rt.api->ReleaseSessionOptions(options);
    if (status != nullptr) {
      const std::string message = rt.api->GetErrorMessage(status);
      rt.api->ReleaseStatus(status);
      throw ep_error(message);
    }
    native->inputs = read_metadata(native->session, true);
    native->outputs = read_metadata(native->session, false);
    native->kept.inputs.resize(native->inputs.size());
    native->kept.outputs.resize(native->outputs.size());
    for (ValueMetadata& output : native->outputs)
      output.also_input = std::any_of(native->inputs.begin(), native->inputs.end(),
                                      [&](const ValueMetadata& input) { return input.name == output.name; });
    native_ = std::move(native);
  }

  Napi::Value result(Napi::Env env) override { return InferenceSession::wrap(env, std::move(native_)); }

 private:
  SessionConfig config_;
  std::string path_;
  const uint8_t* bytes_ = nullptr;
  size_t length_ = 0;
  Napi::ObjectReference keep_bytes_;
  std::shared_ptr<NativeSession> native_;
};

// Outputs ORT created for us, released with their owner (also when a constructor throws midway).
struct OwnedValues {
  std::vector<OrtValue*> values;
  OwnedValues() = default;
  OwnedValues(const OwnedValues&) = delete;
  ~OwnedValues() {
    for (OrtValue* v : values) runtime().api->ReleaseValue(v);  // null-safe
  }
};

struct OwnedRunOptions {
  OrtRunOptions* options = nullptr;
  OwnedRunOptions() { check(runtime().api->CreateRunOptions(&options)); }
  OwnedRunOptions(const OwnedRunOptions&) = delete;
  ~OwnedRunOptions() { runtime().api->ReleaseRunOptions(options); }
};

class RunWorker : public PromiseWorker {
 public:
  // The plan and data of run_plan.h: inputs and outputs by their index in the session's metadata
  // (no names cross the boundary), each output's data a tensor to write it into, or null.
  RunWorker(Napi::Env env, std::shared_ptr<NativeSession> native, const Napi::Value& plan_array,
            const Napi::Array& data, const Napi::Object& run_options)
      : PromiseWorker(env), native_(std::move(native)) {
    const OrtApi& api = *runtime().api;
    // Members are built before this body runs; inputs_, outputs_ and run_options_ clean up if it throws.
    RunPlan plan(plan_array);
    if (data.Length() != plan.input_count() + plan.output_count())
      throw CodedError("ONEBIT_INPUT", "run(): malformed run plan: " + std::to_string(data.Length()) + " data for " +
                                           std::to_string(plan.input_count() + plan.output_count()) + " values");
    uint32_t at = 0;
    for (size_t i = 0; i < plan.input_count(); ++i, ++at) {
      const PlannedValue input = plan.next(native_->inputs, "input", "input");
      if (!input.given) throw CodedError("ONEBIT_INPUT", "run(): input '" + input.metadata->name + "' has no tensor");
      input_names_.push_back(&input.metadata->name);
      inputs_.push_back(input_value(input.metadata->name, input.type, input.dims, data.Get(at),
                                    native_->kept.inputs[input.index], borrowed_));
    }
    std::vector<ByteRange> taken;
    for (size_t i = 0; i < plan.output_count(); ++i, ++at) {
      PlannedValue output = plan.next(native_->outputs, "output", "pre-allocated output");
      output_names_.push_back(&output.metadata->name);
      outputs_.values.push_back(nullptr);
      in_place_.emplace_back();
      given_outputs_.emplace_back();
      sinks_.push_back(output.given ? Sink::InPlace : Sink::Returned);
      if (!output.given) continue;
      // ORT hands a graph input that is also an output back as another value, never writing the one given.
      const Napi::Value given = data.Get(at);
      if (RunValue value =
              preallocated_output(output.metadata->name, output.type, output.dims, given, !output.metadata->also_input,
                                  taken, native_->kept.outputs[output.index], borrowed_)) {
        in_place_.back() = std::move(value);
        continue;
      }
      sinks_.back() = Sink::CopiedIn;
      given_outputs_.back() = {output.type, std::move(output.dims), Napi::Persistent(given.As<Napi::Object>())};
    }
    plan.check_read_whole();
    Napi::Value severity = run_options.Get("logSeverityLevel");
    if (severity.IsNumber())
      check(api.RunOptionsSetRunLogSeverityLevel(run_options_.options, severity.As<Napi::Number>().Int32Value()));
    // A tensor of ours that does not fit the run is found by ORT only as it writes it, and ORT logs
    // that as an error of its own before the run returns it, which then becomes an input error
    // (work()): unless the caller chose a level, such runs log fatal errors only. Every error still
    // reaches the caller as the run's rejection.
    else if (std::find(sinks_.begin(), sinks_.end(), Sink::InPlace) != sinks_.end())
      check(api.RunOptionsSetRunLogSeverityLevel(run_options_.options, ORT_LOGGING_LEVEL_FATAL));
    Napi::Value tag = run_options.Get("tag");
    if (tag.IsString())
      check(api.RunOptionsSetRunTag(run_options_.options, tag.As<Napi::String>().Utf8Value().c_str()));
    Napi::Value entries = run_options.Get("configEntries");
    if (entries.IsArray()) {
      Napi::Array array = entries.As<Napi::Array>();
      for (uint32_t i = 0; i < array.Length(); ++i) {
        Napi::Array pair = array.Get(i).As<Napi::Array>();
        check(api.AddRunConfigEntry(run_options_.options, pair.Get(0u).ToString().Utf8Value().c_str(),
                                    pair.Get(1u).ToString().Utf8Value().c_str()));
      }
    }
  }

 protected:
  void work() override {
    std::vector<const char*> in_names, out_names;
    std::vector<const OrtValue*> in_values;
    for (const std::string* n : input_names_) in_names.push_back(n->c_str());
    for (const RunValue& v : inputs_) in_values.push_back(v.get());
    for (const std::string* n : output_names_) out_names.push_back(n->c_str());
    std::vector<const std::string*> in_place;
    std::vector<OrtValue*> out_values;  // the pre-allocated outputs written in place; ORT fills in the others
    for (size_t i = 0; i < sinks_.size(); ++i) {
      out_values.push_back(in_place_[i].get());
      if (sinks_[i] == Sink::InPlace) in_place.push_back(output_names_[i]);
    }
    on_run_thread([&] {
      const OrtApi& api = *runtime().api;
      OrtStatus* status = api.Run(native_->session, run_options_.options, in_names.data(), in_values.data(),
                                  in_values.size(), out_names.data(), out_names.size(), out_values.data());
      for (size_t i = 0; i < sinks_.size(); ++i)
        if (sinks_[i] != Sink::InPlace) outputs_.values[i] = out_values[i];
      // A tensor of ours ORT refused to write in place: the input error one over JS memory gets.
      if (status != nullptr && !in_place.empty())
        if (std::optional<std::string> refusal = preallocated_refusal(api.GetErrorMessage(status), in_place)) {
          api.ReleaseStatus(status);
          throw CodedError("ONEBIT_INPUT", *refusal);
        }
      check(status);
    });
  }

  // The outputs in the order asked for; null for a pre-allocated one (written in place, or filled now).
  Napi::Value result(Napi::Env env) override {
    Napi::Array results = Napi::Array::New(env, outputs_.values.size());
    std::unordered_set<const void*> wrapped;
    const PropertyKeys keys = property_keys(env);
    for (size_t i = 0; i < outputs_.values.size(); ++i) {
      if (sinks_[i] == Sink::Returned) {
        results.Set(static_cast<uint32_t>(i), output_object(env, keys, outputs_.values[i], wrapped));
        continue;
      }
      if (sinks_[i] == Sink::CopiedIn) {
        const GivenOutput& given = given_outputs_[i];
        fill_preallocated(*output_names_[i], given.type, given.dims, given.data.Value(), outputs_.values[i]);
      }
      results.Set(static_cast<uint32_t>(i), env.Null());
    }
    return results;
  }

 private:
  std::shared_ptr<NativeSession> native_;                       // keeps the session alive through a dispose() mid-run
  std::vector<const std::string*> input_names_, output_names_;  // in native_'s metadata
  std::vector<SharedOutput> borrowed_;  // memory of ours read or written in place: released after inputs_, outputs_
  // Per output: ORT's value returned to JS, written in place into a given tensor over memory of ours,
  // or copied into the given tensor (over JS memory) when the run resolves.
  enum class Sink { Returned, InPlace, CopiedIn };
  std::vector<Sink> sinks_;
  struct GivenOutput {
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    std::vector<int64_t> dims;
    Napi::ObjectReference data;
  };
  std::vector<GivenOutput> given_outputs_;   // per output: the typed array a CopiedIn output fills, else empty
  std::vector<RunValue> inputs_, in_place_;  // in_place_: per output, its OrtValue if InPlace, else null
  OwnedValues outputs_;                      // per output, the value ORT made for it (null if InPlace)
  OwnedRunOptions run_options_;
};

}  // namespace

NativeSession::~NativeSession() {
  if (session == nullptr) return;
  runtime().counters(id, *final_counters);  // the EP's counters die with the session: keep the last values
  runtime().api->ReleaseSession(session);
}

Napi::Function InferenceSession::define(Napi::Env env) {
  Napi::Function cls =
      DefineClass(env, "InferenceSession",
                  {InstanceMethod<&InferenceSession::run>("run"), InstanceMethod<&InferenceSession::dispose>("dispose"),
                   InstanceMethod<&InferenceSession::counters>("counters"),
                   InstanceMethod<&InferenceSession::end_profiling>("endProfiling"),
                   InstanceAccessor<&InferenceSession::input_metadata>("inputMetadata"),
                   InstanceAccessor<&InferenceSession::output_metadata>("outputMetadata")});
  init_addon_data(env, cls);
  return cls;
}

Napi::Object InferenceSession::wrap(Napi::Env env, std::shared_ptr<NativeSession> native) {
  Napi::Object object = session_class(env).New({});
  InferenceSession* session = Unwrap(object);
  session->final_counters_ = native->final_counters;
  session->native_ = std::move(native);
  return object;
}

InferenceSession::InferenceSession(const Napi::CallbackInfo& info) : Napi::ObjectWrap<InferenceSession>(info) {}

const NativeSession& InferenceSession::live(Napi::Env env) const {
  if (!native_)
    throw to_js_error(env, "ONEBIT_DISPOSED",
                      "this session has been released (dispose/release was called): create a new session");
  return *native_;
}

Napi::Value InferenceSession::run(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  live(env);
  return queue_worker(env, [&] {
    if (!info[1].IsArray()) throw CodedError("ONEBIT_INPUT", "run(): malformed run plan: no data array");
    return new RunWorker(env, native_, info[0], info[1].As<Napi::Array>(),
                         info[2].IsObject() ? info[2].As<Napi::Object>() : Napi::Object::New(env));
  });
}

Napi::Value InferenceSession::dispose(const Napi::CallbackInfo& info) {
  native_.reset();  // released now, or when the last run in flight ends
  return info.Env().Undefined();
}

Napi::Value InferenceSession::counters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!native_) return counters_object(env, *final_counters_);
  CounterList now;
  if (!runtime().counters(native_->id, now))
    throw to_js_error(env, "ONEBIT_NO_COUNTERS",
                      "the onebit EP holds no counters for this session: it did not take part in it");
  return counters_object(env, now);
}

Napi::Value InferenceSession::input_metadata(const Napi::CallbackInfo& info) {
  return metadata_array(info.Env(), live(info.Env()).inputs);
}

Napi::Value InferenceSession::output_metadata(const Napi::CallbackInfo& info) {
  return metadata_array(info.Env(), live(info.Env()).outputs);
}

Napi::Value InferenceSession::end_profiling(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const NativeSession& native = live(env);
  try {
    const OrtApi& api = *runtime().api;
    OrtAllocator* allocator = nullptr;
    check(api.GetAllocatorWithDefaultOptions(&allocator));
    char* file = nullptr;
    check(api.SessionEndProfiling(native.session, allocator, &file));
    std::string name = file ? file : "";
    if (file) check(api.AllocatorFree(allocator, file));
    return Napi::String::New(env, name);
  } catch (const CodedError& e) {
    throw to_js_error(env, e);
  }
}

Napi::Value create_session(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return queue_worker(env, [&] {
    runtime();
    return new CreateSessionWorker(env, info[0], read_session_config(info[1].As<Napi::Object>()));
  });
}

}  // namespace onebit::node
