// SPDX-License-Identifier: Apache-2.0
#include "engine/dims.h"

namespace onebit {

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i] < 0 ? "?" : std::to_string(dims[i]);
  }
  return s + "]";
}

size_t element_count(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

const char* qtype_name(QType type) { return type == QType::Int8 ? "int8" : "uint8"; }

}  // namespace onebit
