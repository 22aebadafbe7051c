// SPDX-License-Identifier: Apache-2.0
// One run's values as TypeScript hands them over (ts/run_plan.ts): their metadata indices, element
// types and dims in one Float64Array, read without a property lookup per value (three lookups and
// the dims array's elements were about 0.45 µs a value; a SmolLM2 decode step passes 121 values):
//   [input count, output count,
//    per input:  metadata index, element type, rank, dims...,
//    per output: metadata index, element type (-1: not pre-allocated, returned), rank, dims...]
// The values' data travel beside it: the inputs' typed arrays (or string arrays), then the
// pre-allocated outputs' typed arrays (null for a returned output).
#pragma once
#include <napi.h>
#include <onnxruntime_c_api.h>

#include <cstdint>
#include <vector>

#include "inference_session.h"

namespace onebit::node {

struct PlannedValue {
  size_t index = 0;  // in the session's input or output metadata
  const ValueMetadata* metadata = nullptr;
  bool given = true;  // false: an output not pre-allocated (type and dims unset)
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims;
};

class RunPlan {
 public:
  // Throws CodedError("ONEBIT_INPUT") if `plan` is not a Float64Array with the two counts.
  explicit RunPlan(const Napi::Value& plan);

  size_t input_count() const { return input_count_; }
  size_t output_count() const { return output_count_; }

  // The next value, an entry of `all` (the session's inputs or outputs, `what` in errors). Throws
  // CodedError("ONEBIT_INPUT") for an index out of range, a negative or fractional dimension, or
  // more elements than a JS ArrayBuffer holds, naming the value.
  PlannedValue next(const std::vector<ValueMetadata>& all, const char* what);

  // Throws unless every value has been read.
  void check_read_whole() const;

 private:
  double take(const char* what);

  const double* at_ = nullptr;
  const double* end_ = nullptr;
  size_t input_count_ = 0, output_count_ = 0;
};

}  // namespace onebit::node
