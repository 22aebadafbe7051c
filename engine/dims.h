// SPDX-License-Identifier: Apache-2.0
// Tensor dims as messages print them, and as element counts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/quant_types.h"

namespace onebit {

// "[2,?,64]": a negative (symbolic) dim prints as "?".
std::string shape_string(const std::vector<int64_t>& dims);

// The product of dims (all known, >= 0); 1 for a scalar.
size_t element_count(const std::vector<int64_t>& dims);

// "int8" or "uint8".
const char* qtype_name(QType type);

}  // namespace onebit
