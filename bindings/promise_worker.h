// SPDX-License-Identifier: Apache-2.0
// An AsyncWorker that settles a promise: work runs on libuv's thread pool (the event loop stays
// free), failures reject with a coded JS error.
#pragma once
#include <napi.h>

#include <string>

#include "js_error.h"

namespace onebit::node {

class PromiseWorker : public Napi::AsyncWorker {
 public:
  explicit PromiseWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  // Runs off the JS thread: no Napi calls here.
  virtual void work() = 0;
  // Runs on the JS thread after work() succeeded: the value to resolve with.
  virtual Napi::Value result(Napi::Env env) = 0;

 private:
  void Execute() override {
    try {
      work();
    } catch (const CodedError& e) {
      code_ = e.code;
      option_ = e.option;
      SetError(e.what());
    } catch (const std::exception& e) {
      code_ = "ONEBIT_INTERNAL";
      SetError(e.what());
    }
  }

  void OnOK() override {
    settle([this](Napi::Env env) { deferred_.Resolve(result(env)); });
  }

  void OnError(const Napi::Error& error) override {
    const CodedError failure(code_, error.Message(), option_);
    settle([&](Napi::Env env) { deferred_.Reject(to_js_error(env, failure).Value()); });
  }

  // Resolves or rejects; a failure to reject too means the environment is going away (a worker
  // thread terminated mid-run): no JS is left to tell, and a throw here would abort the process.
  template <class Settle>
  void settle(Settle&& settle_promise) {
    Napi::Env env = Env();
    try {
      try {
        settle_promise(env);
      } catch (const CodedError& e) {
        deferred_.Reject(to_js_error(env, e).Value());
      } catch (const Napi::Error& e) {
        deferred_.Reject(e.Value());
      }
    } catch (const Napi::Error&) {
    }
  }

  Napi::Promise::Deferred deferred_;
  std::string code_;
  std::string option_;
};

// Builds a worker with make() (which reads the JS arguments), queues it and returns its promise;
// argument errors are thrown synchronously as coded JS errors.
template <typename Make>
Napi::Value queue_worker(Napi::Env env, Make&& make) {
  try {
    PromiseWorker* worker = make();
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
  } catch (const CodedError& e) {
    throw to_js_error(env, e);
  }
}

}  // namespace onebit::node
