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
#include <utility>
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
  // Copies `plan`: reading the values' data can run the caller's JavaScript (a getter, a string's
  // toString), which could detach or shrink its buffer. Throws CodedError("ONEBIT_INPUT") if it is
  // not a Float64Array with the two counts.
  explicit RunPlan(const Napi::Value& plan);

  size_t input_count() const { return input_count_; }
  size_t output_count() const { return output_count_; }

  // The next value, an entry of `all` (the session's inputs or outputs: `what`, "input" or "output",
  // in errors; `given_as` names a value with a tensor). Throws CodedError("ONEBIT_INPUT") for an
  // index out of range or given before in this plan, a negative, fractional or too large dimension,
  // or more elements than a JS ArrayBuffer holds, naming the value.
  PlannedValue next(const std::vector<ValueMetadata>& all, const char* what, const char* given_as);

  // Throws unless every value has been read.
  void check_read_whole() const;

 private:
  double take(const char* what);

  std::vector<double> numbers_;
  size_t at_ = 0;
  size_t input_count_ = 0, output_count_ = 0;
  // Per metadata list read from (inputs, outputs): which of its entries the plan has given.
  std::vector<std::pair<const std::vector<ValueMetadata>*, std::vector<bool>>> given_;
};

}  // namespace onebit::node
