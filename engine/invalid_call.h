// SPDX-License-Identifier: Apache-2.0
// A call whose inputs the group cannot take (a shape that does not fit what was compiled): the
// caller's mistake, reported as such (the EP returns ORT_INVALID_ARGUMENT with this message).
#pragma once
#include <stdexcept>

namespace onebit {

struct InvalidCall : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace onebit
