// SPDX-License-Identifier: Apache-2.0
// onnxruntime-common tensors <-> OrtValue. Outputs are not copied: each becomes an ArrayBuffer over
// the memory of its OrtValue, which lives until that ArrayBuffer is collected. An output fed back as
// an input (a decoder's KV cache) is read in place, so a decoder step copies nothing in or out; the
// caller must not write to it until that run resolves. A pre-allocated output (a tensor passed in
// run()'s fetches) is written in place, and an input lying inside one is read in place: that is how
// a decoder shares one buffer between past and present KV (GroupQueryAttention then appends to it
// instead of copying it). Any other input is copied into an ORT-owned tensor when run() is called,
// so the caller may transfer, detach, overwrite or share its buffer while the run is in flight.
#pragma once
#include <napi.h>
#include <onnxruntime_c_api.h>

#include <unordered_set>
#include <vector>

#include "output_memory.h"
#include "addon_data.h"

namespace onebit::node {

// The memory of this run's pre-allocated outputs.
struct ByteRange {
  const uint8_t* begin = nullptr;
  size_t size = 0;
  bool holds(const void* data, size_t bytes) const {
    const auto* p = static_cast<const uint8_t*>(data);
    return p >= begin && bytes <= size && static_cast<size_t>(p - begin) <= size - bytes;
  }
};

// `tensor` is {type: ONNX element type number, dims: number[], data: TypedArray | string[]}.
// Throws CodedError("ONEBIT_INPUT") naming `name` if the data does not fit type and dims, or its
// buffer is detached. A typed array over a SharedArrayBuffer is copied like any other; one inside
// a pre-allocated output of this run (`writable`) is not, nor one over an earlier output's memory,
// whose owner is then added to `borrowed`, which must outlive the returned value.
OrtValue* input_value(const std::string& name, const Napi::Object& tensor, const PropertyKeys& keys,
                      const std::vector<ByteRange>& writable, std::vector<SharedOutput>& borrowed);

// A tensor over the memory of `tensor` (same form as an input), which ORT writes the output `name`
// into. Throws CodedError("ONEBIT_OUTPUT") naming it if it is a string tensor, its data does not fit
// type and dims, or its buffer is detached. The caller keeps `tensor` alive until the run ends.
OrtValue* preallocated_output(const std::string& name, const Napi::Object& tensor, const PropertyKeys& keys,
                              ByteRange& memory);

// {type, dims, data: ArrayBuffer | string[]} for an output; {isTensor: false} for non-tensors.
// Takes `value` (sets it to null) when its ArrayBuffer wraps its memory. `wrapped` holds the data
// pointers already wrapped for this run: V8 aborts on two external ArrayBuffers over one address,
// so an output sharing another's memory is copied instead.
Napi::Object output_object(Napi::Env env, const PropertyKeys& keys, OrtValue*& value,
                           std::unordered_set<const void*>& wrapped);

}  // namespace onebit::node
