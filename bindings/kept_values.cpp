// SPDX-License-Identifier: Apache-2.0
#include "kept_values.h"

#include "ort_runtime.h"

namespace onebit::node {

RunValue run_value(OrtValue* value) {
  return RunValue(value, [](OrtValue* v) { runtime().api->ReleaseValue(v); });
}

RunValue KeptValue::reuse(const ByteRange& memory, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                          std::vector<SharedOutput>& borrowed) const {
  // use_count: the runs holding it release it on the JS thread, where this runs too.
  if (!value_ || value_.use_count() != 1 || !(memory == memory_) || type != type_ || dims != dims_) return nullptr;
  SharedOutput owner = owner_.lock();
  if (!owner) return nullptr;
  borrowed.push_back(std::move(owner));
  return value_;
}

void KeptValue::keep(const ByteRange& memory, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                     const SharedOutput& owner, RunValue value) {
  memory_ = memory;
  type_ = type;
  dims_ = dims;
  owner_ = owner;
  value_ = std::move(value);
}

}  // namespace onebit::node
