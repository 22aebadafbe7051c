// SPDX-License-Identifier: Apache-2.0
// onnxruntime-common tensors <-> OrtValue. Numeric inputs wrap the JS buffer without a copy (the
// caller keeps the JS array alive until the run ends); strings are copied; outputs are copied into
// fresh ArrayBuffers that the TypeScript layer wraps in the right typed array.
#pragma once
#include <napi.h>
#include <onnxruntime_c_api.h>

namespace onebit::node {

// `tensor` is {type: ONNX element type number, dims: number[], data: TypedArray | string[]}.
// Throws CodedError("ONEBIT_INPUT") naming `name` if the data does not fit type and dims.
OrtValue* input_value(const std::string& name, const Napi::Object& tensor);

// {type, dims, data: ArrayBuffer | string[]} for an output; {isTensor: false} for non-tensors.
Napi::Object output_object(Napi::Env env, const OrtValue* value);

}  // namespace onebit::node
