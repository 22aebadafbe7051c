// SPDX-License-Identifier: Apache-2.0
// Errors thrown to JavaScript carry a `code` the TypeScript layer turns into a typed error class.
#pragma once
#include <napi.h>

#include <stdexcept>
#include <string>

namespace onebit::node {

// A failure with a stable code, e.g. "ONEBIT_EP_LIBRARY" or "ONEBIT_ORT".
struct CodedError : std::runtime_error {
  std::string code;
  std::string option;  // ONEBIT_OPTION: the provider option's key (snake_case), when known
  CodedError(std::string c, const std::string& message, std::string option_key = {})
      : std::runtime_error(message), code(std::move(c)), option(std::move(option_key)) {}
};

inline Napi::Error to_js_error(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

inline Napi::Error to_js_error(Napi::Env env, const CodedError& e) {
  Napi::Error error = to_js_error(env, e.code, e.what());
  if (!e.option.empty()) error.Set("option", Napi::String::New(env, e.option));
  return error;
}

}  // namespace onebit::node
