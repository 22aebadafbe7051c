// SPDX-License-Identifier: Apache-2.0
#include "base/error.h"

namespace onebit::npu {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kDesign:
      return "design";
    case ErrorCode::kLaunch:
      return "launch";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kSync:
      return "sync";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Error::to_string() const { return std::string(error_code_name(code)) + ": " + reason; }

}  // namespace onebit::npu
