// SPDX-License-Identifier: Apache-2.0
// Access to the ORT C API handed to us in CreateEpFactories, and the error discipline:
// inside the EP, failures throw OrtError (the engine's a caller's mistake as InvalidCall); at every
// ORT callback they become an OrtStatus.
#pragma once
#include <onnxruntime_c_api.h>

#include <stdexcept>
#include <string>

#include "engine/invalid_call.h"

namespace onebit {

const OrtApi& ort();
const OrtEpApi& ort_ep();
void set_ort_api(const OrtApi* api, const OrtEpApi* ep_api);

struct OrtError : std::runtime_error {
  OrtErrorCode code;
  OrtError(OrtErrorCode c, const std::string& message) : std::runtime_error(message), code(c) {}
};

// Throws OrtError carrying ORT's message when `status` is an error.
void check(OrtStatus* status);

// An OrtStatus whose message is valid UTF-8 (a path or a file's line may hold any bytes; hosts
// decode the message as UTF-8, and Python raised UnicodeDecodeError instead of showing it).
OrtStatus* error_status(OrtErrorCode code, const char* message) noexcept;

// Runs body and converts any exception into an OrtStatus for ORT (nothing crosses the C ABI).
template <typename Body>
OrtStatus* guarded(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const OrtError& e) {
    return error_status(e.code, e.what());
  } catch (const InvalidCall& e) {
    return error_status(ORT_INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return error_status(ORT_FAIL, e.what());
  } catch (...) {
    return error_status(ORT_FAIL, "onebit: unknown error");
  }
}

// Logs at the given severity through an ORT logger (may be null: then nothing is logged).
void log(const OrtLogger* logger, OrtLoggingLevel level, const std::string& message);

}  // namespace onebit
