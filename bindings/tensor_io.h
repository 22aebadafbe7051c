// SPDX-License-Identifier: Apache-2.0
// onnxruntime-common tensors <-> OrtValue. Outputs are not copied: each becomes an ArrayBuffer over
// the memory of its OrtValue, which lives until that ArrayBuffer is collected (allocate_tensor makes
// such memory too, zeroed). That memory is read and written in place: an input lying inside it (a
// decoder's KV cache fed back) is not copied, and a pre-allocated output over it (a tensor passed in
// run()'s fetches) is written directly — past and present KV as one buffer, which GroupQueryAttention
// then appends to instead of copying; the caller must leave it alone until that run resolves. JS
// memory is never read or written by a run in flight, since it can be transferred, detached or
// resized meanwhile: any other input is copied into an ORT-owned tensor when run() is called, and
// any other pre-allocated output is filled from ORT's output when the run resolves.
#pragma once
#include <napi.h>
#include <onnxruntime_c_api.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "addon_data.h"
#include "kept_values.h"
#include "output_memory.h"

namespace onebit::node {

// Whether `dims` (none negative) have no more elements than a JS ArrayBuffer holds (their byte
// count could wrap around); kTooManyElements ends the error for those that do.
bool fits_array_buffer(const std::vector<int64_t>& dims);
inline constexpr const char* kTooManyElements = " has more elements than a JS ArrayBuffer holds (4 GiB)";

// Input `name` of element type `type` and `dims` (checked), its `data` a typed array (or a string
// array for a string tensor). Throws CodedError("ONEBIT_INPUT") naming it if the data does not fit
// type and dims, or its buffer is detached. A typed array over a SharedArrayBuffer is copied like
// any other; one over memory of ours is not: its OrtValue is `kept`'s (made and kept there if it
// does not serve), and its owner is added to `borrowed`, which must outlive the returned value.
RunValue input_value(const std::string& name, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                     const Napi::Value& data, KeptValue& kept, std::vector<SharedOutput>& borrowed);

// A tensor given for output `name` in run()'s fetches (as an input, no strings).
// Throws CodedError("ONEBIT_INPUT") naming it if its data does not fit type and dims, its buffer is
// detached, or it shares memory with one already in `taken` (this run's others, added to).
// Over memory of ours, when `in_place` allows it: a tensor for ORT to write into (`kept`'s, as for
// an input), its owner added to `borrowed`. Otherwise null: ORT allocates the output and
// fill_preallocated copies it into the given tensor.
RunValue preallocated_output(const std::string& name, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                             const Napi::Value& data, bool in_place, std::vector<ByteRange>& taken, KeptValue& kept,
                             std::vector<SharedOutput>& borrowed);

// Copies the output `value` ORT allocated into `data`, the typed array of the pre-allocated output
// (of `type` and `dims`) it was given for (one preallocated_output left to ORT). Throws
// CodedError("ONEBIT_INPUT") naming the output if its type or shape differ, or the typed array's
// buffer was detached or resized during the run.
void fill_preallocated(const std::string& name, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                       const Napi::Value& data, const OrtValue* value);

// ORT's refusal of a pre-allocated output it was given to write in place (one of `in_place`, names
// of outputs) whose shape is not the run's (which cannot be known before the run): the message of
// the ONEBIT_INPUT error fill_preallocated gives over JS memory, or none for any other message
// (read from the text of the ORT onnxruntime-node ships; another text stays ORT's error).
std::optional<std::string> preallocated_refusal(const std::string& ort_message,
                                                const std::vector<const std::string*>& in_place);

// A zeroed tensor of `type` and `dims` (a JS array) in memory of ours, as an ArrayBuffer: a
// pre-allocated output over it is written in place. CodedError("ONEBIT_INPUT") for a type we do
// not carry, bad dims, or more than an ArrayBuffer holds. Its memory returns when V8 collects the
// buffer, whose finalizer runs as the event loop turns (not inside one synchronous loop).
Napi::ArrayBuffer allocate_tensor(Napi::Env env, ONNXTensorElementDataType type, const Napi::Array& dims);

// {type, dims, data: ArrayBuffer | string[]} for an output; {isTensor: false} for non-tensors.
// Takes `value` (sets it to null) when its ArrayBuffer wraps its memory. `wrapped` holds the data
// pointers already wrapped for this run: V8 aborts on two external ArrayBuffers over one address,
// so an output sharing another's memory is copied instead.
Napi::Object output_object(Napi::Env env, const PropertyKeys& keys, OrtValue*& value,
                           std::unordered_set<const void*>& wrapped);

}  // namespace onebit::node
