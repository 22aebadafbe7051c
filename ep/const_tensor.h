// SPDX-License-Identifier: Apache-2.0
// A read-only view of a constant tensor (an initializer's bytes, owned by ORT).
#pragma once
#include <onnxruntime_c_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/dims.h"  // shape_string

namespace onebit {

struct ConstTensor {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> shape;
  const void* data = nullptr;

  size_t count() const;
  bool is_scalar() const { return count() == 1 && shape.size() <= 1; }
  // Element i widened; valid for float, float16, int8, uint8, int32.
  double as_double(size_t i) const;
  int32_t as_int(size_t i) const;
};

// Reads an initializer OrtValue (type, shape, data pointer).
ConstTensor const_tensor_of(const OrtValue* value);

std::string type_name(ONNXTensorElementDataType type);

// float -> IEEE half -> float, round to nearest even: the precision of float16 arithmetic.
float round_to_half(float value);

}  // namespace onebit
