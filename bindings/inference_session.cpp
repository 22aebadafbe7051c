// SPDX-License-Identifier: Apache-2.0
#include "inference_session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "addon_data.h"
#include "ep_error.h"
#include "js_error.h"
#include "promise_worker.h"
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

// Values ORT created for us, released with their owner (also when a constructor throws midway).
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

// Metadata entry `index` (a JS number), or an ONEBIT_INPUT error.
const ValueMetadata& metadata_entry(const std::vector<ValueMetadata>& all, const Napi::Value& index, const char* what) {
  const double i = index.IsNumber() ? index.As<Napi::Number>().DoubleValue() : -1;
  if (!(i >= 0 && i < static_cast<double>(all.size())) || i != static_cast<double>(static_cast<size_t>(i)))
    throw CodedError("ONEBIT_INPUT", std::string("run(): no ") + what + " at index " + index.ToString().Utf8Value());
  return all[static_cast<size_t>(i)];
}

class RunWorker : public PromiseWorker {
 public:
  // Inputs and outputs by their index in the session's metadata (no names cross the boundary);
  // `preallocated[i]`: a tensor to write output i into, or null.
  RunWorker(Napi::Env env, std::shared_ptr<NativeSession> native, const Napi::Array& input_indices,
            const Napi::Array& inputs, const Napi::Array& output_indices, const Napi::Array& preallocated,
            const Napi::Object& run_options)
      : PromiseWorker(env), native_(std::move(native)) {
    const OrtApi& api = *runtime().api;
    // Members are built before this body runs; inputs_, outputs_ and run_options_ clean up if it throws.
    const PropertyKeys keys = property_keys(env);
    for (uint32_t i = 0; i < input_indices.Length(); ++i) {
      input_names_.push_back(&metadata_entry(native_->inputs, input_indices.Get(i), "input").name);
      inputs_.values.push_back(input_value(*input_names_.back(), inputs.Get(i).As<Napi::Object>(), keys, borrowed_));
    }
    std::vector<ByteRange> taken;
    for (uint32_t i = 0; i < output_indices.Length(); ++i) {
      const ValueMetadata& output = metadata_entry(native_->outputs, output_indices.Get(i), "output");
      output_names_.push_back(&output.name);
      outputs_.values.push_back(nullptr);
      copy_targets_.emplace_back();
      const Napi::Value given = preallocated.Get(i);
      sinks_.push_back(given.IsObject() ? Sink::InPlace : Sink::Returned);
      if (sinks_.back() == Sink::Returned) continue;
      // ORT hands a graph input that is also an output back as another value, never writing the one given.
      outputs_.values.back() =
          preallocated_output(output.name, given.As<Napi::Object>(), keys, !output.also_input, taken, borrowed_);
      if (outputs_.values.back() != nullptr) continue;
      sinks_.back() = Sink::CopiedIn;
      copy_targets_.back() = Napi::Persistent(given.As<Napi::Object>());
    }
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
    for (const std::string* n : input_names_) in_names.push_back(n->c_str());
    for (const std::string* n : output_names_) out_names.push_back(n->c_str());
    std::vector<const std::string*> in_place;
    for (size_t i = 0; i < sinks_.size(); ++i)
      if (sinks_[i] == Sink::InPlace) in_place.push_back(output_names_[i]);
    on_run_thread([&] {
      const OrtApi& api = *runtime().api;
      OrtStatus* status = api.Run(native_->session, run_options_.options, in_names.data(), inputs_.values.data(),
                                  inputs_.values.size(), out_names.data(), out_names.size(), outputs_.values.data());
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
      if (sinks_[i] == Sink::CopiedIn)
        fill_preallocated(*output_names_[i], copy_targets_[i].Value(), keys, outputs_.values[i]);
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
  std::vector<Napi::ObjectReference> copy_targets_;  // per output: the tensor a CopiedIn output fills, else empty
  OwnedValues inputs_, outputs_;
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
    return new RunWorker(env, native_, info[0].As<Napi::Array>(), info[1].As<Napi::Array>(), info[2].As<Napi::Array>(),
                         info[3].As<Napi::Array>(),
                         info[4].IsObject() ? info[4].As<Napi::Object>() : Napi::Object::New(env));
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
