// SPDX-License-Identifier: Apache-2.0
#include "ort_api.h"

#include "base/utf8.h"

namespace onebit {

namespace {
const OrtApi* g_api = nullptr;
const OrtEpApi* g_ep_api = nullptr;
}  // namespace

const OrtApi& ort() { return *g_api; }
const OrtEpApi& ort_ep() { return *g_ep_api; }

void set_ort_api(const OrtApi* api, const OrtEpApi* ep_api) {
  g_api = api;
  g_ep_api = ep_api;
}

void check(OrtStatus* status) {
  if (status == nullptr) return;
  const OrtErrorCode code = g_api->GetErrorCode(status);
  std::string message = g_api->GetErrorMessage(status);
  g_api->ReleaseStatus(status);
  throw OrtError(code, message);
}

OrtStatus* error_status(OrtErrorCode code, const char* message) noexcept {
  try {
    return g_api->CreateStatus(code, npu::valid_utf8(message).c_str());
  } catch (...) {  // no memory for the copy: the message as it is
    return g_api->CreateStatus(code, message);
  }
}

void log(const OrtLogger* logger, OrtLoggingLevel level, const std::string& message) {
  if (logger == nullptr) return;
  OrtStatus* status = g_api->Logger_LogMessage(logger, level, message.c_str(), ORT_FILE, __LINE__, "onebit");
  if (status != nullptr) g_api->ReleaseStatus(status);
}

}  // namespace onebit
