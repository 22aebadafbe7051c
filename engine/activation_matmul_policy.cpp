// SPDX-License-Identifier: Apache-2.0
#include "engine/activation_matmul_policy.h"

#include <cstdlib>
#include <stdexcept>

namespace onebit {

ActivationMatmuls activation_matmuls_from_env() {
  const char* env = std::getenv("ONEBIT_ACTIVATION_MATMULS");
  const std::string value = env == nullptr ? "" : env;
  if (value.empty() || value == "measured") return ActivationMatmuls::Measured;
  if (value == "all") return ActivationMatmuls::All;
  throw std::invalid_argument("ONEBIT_ACTIVATION_MATMULS=" + value + " is invalid: use 'measured' or 'all'");
}

std::string activation_matmul_decline(ActivationMatmuls rule) {
  if (rule == ActivationMatmuls::All) return "";
  return "activation x activation groups (B packed per call) were measured no faster than ORT's CPU EP at any "
         "attention shape (BENCHMARKS.md); ONEBIT_ACTIVATION_MATMULS=all claims them";
}

}  // namespace onebit
