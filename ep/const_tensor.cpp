// SPDX-License-Identifier: Apache-2.0
#include "const_tensor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "ort_api.h"

namespace onebit {

namespace {

float half_to_float(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(float(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}

}  // namespace

size_t ConstTensor::count() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

double ConstTensor::as_double(size_t i) const {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return static_cast<const float*>(data)[i];
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return half_to_float(static_cast<const uint16_t*>(data)[i]);
    default:
      return as_int(i);
  }
}

int32_t ConstTensor::as_int(size_t i) const {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return static_cast<const int8_t*>(data)[i];
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return static_cast<const uint8_t*>(data)[i];
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return static_cast<const int32_t*>(data)[i];
    default:
      throw std::logic_error("onebit: as_int on a tensor of type " + type_name(type));
  }
}

ConstTensor const_tensor_of(const OrtValue* value) {
  ConstTensor t;
  const int64_t* dims = nullptr;
  size_t rank = 0;
  check(ort().GetTensorElementTypeAndShapeDataReference(value, &t.type, &dims, &rank));
  t.shape.assign(dims, dims + rank);
  check(ort().GetTensorData(value, &t.data));
  return t;
}

std::string type_name(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return "int16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return "uint16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4:
      return "int4";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4:
      return "uint4";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED:
      return "unknown";
    default:
      return "element type " + std::to_string(static_cast<int>(type));
  }
}

float round_to_half(float value) {
  if (!std::isfinite(value) || value == 0.0f) return value;
  int exponent = 0;
  std::frexp(value, &exponent);
  // Half has 11 significant bits for normals; below 2^-14 the step is fixed at 2^-24.
  const int step_exponent = std::max(exponent - 11, -24);
  const float step = std::ldexp(1.0f, step_exponent);
  const float rounded = std::nearbyint(value / step) * step;
  return std::fabs(rounded) > 65504.0f ? std::copysign(INFINITY, value) : rounded;
}

}  // namespace onebit
