// SPDX-License-Identifier: Apache-2.0
// One EP instance per session: claims quantized MatMul groups and compiles them.
#pragma once
#include "engine/ep_options.h"
#include "onebit_ep.h"
#include "ort_api.h"
#include "session_context.h"

namespace onebit {

constexpr const char* kEpName = ONEBIT_EP_NAME;

class OnebitEp : public OrtEp {
 public:
  // Opens the device the options choose and reads the routes file; throws
  // std::invalid_argument naming what is wrong. threads_sleep: SessionContext's.
  OnebitEp(EpOptions options, bool threads_sleep, const OrtLogger* logger);
  ~OnebitEp();

  SessionContext session;
};

}  // namespace onebit
