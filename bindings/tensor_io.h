// SPDX-License-Identifier: Apache-2.0
// onnxruntime-common tensors <-> OrtValue. Inputs are copied into ORT-owned tensors when run() is
// called, so the caller may transfer, detach, overwrite or share its buffers while the run is in
// flight; outputs are copied into fresh ArrayBuffers that the TypeScript layer wraps in the right
// typed array.
#pragma once
#include <napi.h>
#include <onnxruntime_c_api.h>

namespace onebit::node {

// `tensor` is {type: ONNX element type number, dims: number[], data: TypedArray | string[]}.
// Throws CodedError("ONEBIT_INPUT") naming `name` if the data does not fit type and dims, or its
// buffer is detached. A typed array over a SharedArrayBuffer is copied like any other.
OrtValue* input_value(const std::string& name, const Napi::Object& tensor);

// {type, dims, data: ArrayBuffer | string[]} for an output; {isTensor: false} for non-tensors.
Napi::Object output_object(Napi::Env env, const OrtValue* value);

}  // namespace onebit::node
