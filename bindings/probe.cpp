// SPDX-License-Identifier: Apache-2.0
#include "probe.h"

#include <string>
#include <vector>

#include "probes/shape_probe.h"
#include "promise_worker.h"

namespace onebit::node {

namespace {

using probes::ProbeOptions;
using probes::ProbeResult;
using probes::Spread;

uint32_t read_uint(const Napi::Object& o, const char* key, uint32_t fallback) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsNumber()) throw CodedError("ONEBIT_OPTION", std::string("probe option ") + key + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 4294967295.0) || d != static_cast<double>(static_cast<uint32_t>(d)))
    throw CodedError("ONEBIT_OPTION",
                     std::string("probe option ") + key + " must be an integer >= 0, got " + std::to_string(d));
  return static_cast<uint32_t>(d);
}

std::string read_string(const Napi::Object& o, const char* key, const std::string& fallback) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsString()) throw CodedError("ONEBIT_OPTION", std::string("probe option ") + key + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

ProbeOptions read_options(const Napi::Value& value) {
  if (!value.IsObject()) throw CodedError("ONEBIT_OPTION", "probe needs an options object");
  const Napi::Object o = value.As<Napi::Object>();
  ProbeOptions options;
  options.K = read_uint(o, "K", 0);
  options.N = read_uint(o, "N", 0);
  Napi::Value rows = o.Get("rows");
  if (!rows.IsUndefined()) {
    if (!rows.IsArray()) throw CodedError("ONEBIT_OPTION", "probe option rows must be an array of integers");
    const Napi::Array array = rows.As<Napi::Array>();
    options.rows.clear();
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Napi::Object holder = Napi::Object::New(o.Env());
      holder.Set("rows", array.Get(i));
      options.rows.push_back(read_uint(holder, "rows", 0));
    }
  }
  options.repeat = read_uint(o, "repeat", options.repeat);
  options.seed = read_uint(o, "seed", options.seed);
  options.device = read_string(o, "device", options.device);
  options.designs_dir = read_string(o, "designsDir", "");
  options.lock_path = read_string(o, "lockPath", "");
  options.cost_model = read_string(o, "costModel", "");
  return options;
}

Napi::Object spread(Napi::Env env, const Spread& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("medianMs", s.median_ms);
  o.Set("minMs", s.min_ms);
  o.Set("maxMs", s.max_ms);
  return o;
}

// A modelled device call, in ms like every other time of the result.
Napi::Object modelled(Napi::Env env, const npu::ModelledCall& m) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("totalMs", m.total_us() / 1e3);
  o.Set("syncMs", m.sync_us / 1e3);
  o.Set("launchMs", m.launch_us / 1e3);
  o.Set("arrayMs", m.array_us / 1e3);
  return o;
}

Napi::Value or_null(Napi::Env env, const std::string& s) { return s.empty() ? env.Null() : Napi::String::New(env, s); }

Napi::Object to_js(Napi::Env env, const ProbeResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("K", r.K);
  o.Set("N", r.N);
  o.Set("repeat", r.repeat);
  o.Set("seed", r.seed);
  o.Set("hostThreads", r.host_threads);
  o.Set("hostKernel", r.host_kernel);

  Napi::Object d = Napi::Object::New(env);
  d.Set("requested", r.device.requested);
  d.Set("selected", r.device.selected);
  d.Set("reason", or_null(env, r.device.reason));
  d.Set("name", or_null(env, r.device.name));
  d.Set("emulated", r.device.emulated);
  d.Set("error", or_null(env, r.device.error));
  d.Set("designsDir", or_null(env, r.device.designs_dir));
  d.Set("designsBuilt", r.device.designs_built);
  d.Set("designsLoaded", r.device.designs_loaded);
  d.Set("weightBytes", static_cast<double>(r.device.weight_bytes));
  d.Set("setupMs", r.device.setup_ms);
  d.Set("costModel", or_null(env, r.device.cost_model));
  o.Set("device", d);

  Napi::Array rows = Napi::Array::New(env, r.rows.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const probes::RowsResult& row = r.rows[i];
    Napi::Object e = Napi::Object::New(env);
    e.Set("rows", row.rows);
    e.Set("host", spread(env, row.host));
    if (row.device) {
      const probes::DeviceRowsResult& dr = *row.device;
      Napi::Object dev = spread(env, dr.total);
      Napi::Object parts = Napi::Object::New(env);
      parts.Set("upload", spread(env, dr.upload));
      parts.Set("launchWait", spread(env, dr.launch_wait));
      parts.Set("cSync", spread(env, dr.c_sync));
      parts.Set("epilogue", spread(env, dr.epilogue));
      dev.Set("breakdown", parts);
      dev.Set("launches", dr.launches);
      dev.Set("paddedRows", dr.padded_rows);
      dev.Set("aBytes", static_cast<double>(dr.a_bytes));
      dev.Set("cBytes", static_cast<double>(dr.c_bytes));
      dev.Set("cWhole", dr.c_whole);
      dev.Set("modelled", dr.modelled ? modelled(env, *dr.modelled) : env.Null());
      e.Set("device", dev);
    } else {
      e.Set("device", env.Null());
    }
    e.Set("ratio", row.ratio ? Napi::Number::New(env, *row.ratio) : env.Null());
    e.Set("modelledRatio", row.modelled_ratio ? Napi::Number::New(env, *row.modelled_ratio) : env.Null());
    e.Set("exact", row.exact ? Napi::Boolean::New(env, *row.exact) : env.Null());
    rows.Set(static_cast<uint32_t>(i), e);
  }
  o.Set("rows", rows);
  Napi::Object counters = Napi::Object::New(env);
  for (const auto& [name, value] : r.device_counters) counters.Set(name, static_cast<double>(value));
  o.Set("deviceCounters", counters);
  return o;
}

class ProbeWorker : public PromiseWorker {
 public:
  ProbeWorker(Napi::Env env, ProbeOptions options) : PromiseWorker(env), options_(std::move(options)) {}

 protected:
  void work() override {
    try {
      result_ = probes::run_probe(options_);
    } catch (const probes::ProbeOptionError& e) {
      throw CodedError("ONEBIT_OPTION", std::string("probe: ") + e.what());
    }
  }
  Napi::Value result(Napi::Env env) override { return to_js(env, result_); }

 private:
  ProbeOptions options_;
  ProbeResult result_;
};

}  // namespace

Napi::Value probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return queue_worker(env, [&] { return new ProbeWorker(env, read_options(info[0])); });
}

}  // namespace onebit::node
