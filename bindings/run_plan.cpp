// SPDX-License-Identifier: Apache-2.0
#include "run_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "js_error.h"
#include "tensor_io.h"

namespace onebit::node {

namespace {

[[noreturn]] void malformed(const std::string& detail) {
  throw CodedError("ONEBIT_INPUT", "run(): malformed run plan: " + detail);
}

// A whole number in [0, limit], or a malformed-plan error naming what `what()` says it is.
template <class What>
size_t count_of(double v, double limit, What what) {
  if (!(v >= 0 && v <= limit && v == std::floor(v))) malformed(std::string(what()) + " is " + std::to_string(v));
  return static_cast<size_t>(v);
}

}  // namespace

RunPlan::RunPlan(const Napi::Value& plan) {
  if (!plan.IsTypedArray() || plan.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
    malformed("not a Float64Array");
  Napi::Float64Array array = plan.As<Napi::Float64Array>();
  numbers_.assign(array.Data(), array.Data() + array.ElementLength());
  input_count_ = count_of(take("the input count"), 1e6, [] { return "the input count"; });
  output_count_ = count_of(take("the output count"), 1e6, [] { return "the output count"; });
}

double RunPlan::take(const char* what) {
  if (at_ == numbers_.size()) malformed(std::string("it ends before ") + what);
  return numbers_[at_++];
}

PlannedValue RunPlan::next(const std::vector<ValueMetadata>& all, const char* what, const char* given_as) {
  PlannedValue value;
  const double index = take("an index");
  if (!(index >= 0 && index < static_cast<double>(all.size()) && index == std::floor(index)))
    throw CodedError("ONEBIT_INPUT", std::string("run(): no ") + what + " at index " + std::to_string(index));
  value.index = static_cast<size_t>(index);
  value.metadata = &all[value.index];
  // Put together only for an error (a string a value would be a heap allocation each).
  const auto name = [&] { return std::string(given_as) + " '" + value.metadata->name + "'"; };
  auto list = std::find_if(given_.begin(), given_.end(), [&](const auto& g) { return g.first == &all; });
  if (list == given_.end()) list = given_.insert(given_.end(), {&all, std::vector<bool>(all.size())});
  if (list->second[value.index])
    throw CodedError("ONEBIT_INPUT", std::string("run(): ") + what + " '" + value.metadata->name + "' given twice");
  list->second[value.index] = true;
  const double type = take("an element type");
  const size_t rank = count_of(take("a rank"), 64, [&] { return name() + "'s rank"; });
  if (type == -1 && rank == 0) {
    value.given = false;
    return value;
  }
  value.type = static_cast<ONNXTensorElementDataType>(count_of(type, 1e3, [&] { return name() + "'s element type"; }));
  value.dims.resize(rank);
  for (int64_t& d : value.dims) {
    const double v = take("a dimension");
    if (v < 0) throw CodedError("ONEBIT_INPUT", name() + " has a negative dimension");
    if (v != std::floor(v))  // NaN too
      throw CodedError("ONEBIT_INPUT", name() + " has a dimension that is not a whole number");
    if (v >= 9223372036854775808.0)  // 2^63: no int64_t
      throw CodedError("ONEBIT_INPUT", name() + kTooManyElements);
    d = static_cast<int64_t>(v);
  }
  if (!fits_array_buffer(value.dims)) throw CodedError("ONEBIT_INPUT", name() + kTooManyElements);
  return value;
}

void RunPlan::check_read_whole() const {
  if (at_ != numbers_.size()) malformed(std::to_string(numbers_.size() - at_) + " numbers left over");
}

}  // namespace onebit::node
