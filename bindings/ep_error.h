// SPDX-License-Identifier: Apache-2.0
// ORT wraps an error of our EP (a refused option, a group Compile refused) in its own text: a
// source location, "Error creating execution provider: [ONNXRuntimeError] : 2 : ...". The user
// gets the EP's own words instead, and an option the EP refused as the option's error.
#pragma once
#include <string>

#include "js_error.h"

namespace onebit::node {

// The error to throw for ORT's message `ort_message`: from the EP's words ("onebit: ...") on, if
// it holds them; ONEBIT_OPTION naming the option when they are an option's error
// (engine/ep_options.h kOptionErrorPrefix), else ONEBIT_ORT.
CodedError ep_error(const std::string& ort_message);

}  // namespace onebit::node
