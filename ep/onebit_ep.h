// SPDX-License-Identifier: Apache-2.0
// One EP instance per session: claims quantized MatMul groups and compiles them.
#pragma once
#include "ep_options.h"
#include "ort_api.h"
#include "session_counters.h"

namespace onebit {

constexpr const char* kEpName = "OnebitExecutionProvider";

class OnebitEp : public OrtEp {
 public:
  OnebitEp(EpOptions options, const OrtLogger* logger);
  ~OnebitEp();

  const EpOptions options;
  const OrtLogger* const logger;
  Counters counters;
};

}  // namespace onebit
