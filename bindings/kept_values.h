// SPDX-License-Identifier: Apache-2.0
// The OrtValues over memory of ours that a session keeps from one run to the next, one per input
// and one per output: a decoder passes the same KV-cache buffers at every step, and looking each
// one's memory up, making its OrtValue and releasing it after the run cost about 0.3 µs a value
// (120 values a SmolLM2 decode step). A kept value does not keep the memory: it holds the memory's
// owner weakly and serves a run only while that owner lives, for the same bytes, type and dims,
// and while no run in flight holds it (ORT may write a pre-allocated output's OrtValue). Used on
// the JS thread only.
#pragma once
#include <onnxruntime_c_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "output_memory.h"

namespace onebit::node {

// An OrtValue a run passes to ORT, released with its last holder.
using RunValue = std::shared_ptr<OrtValue>;

// Takes `value`: released (ReleaseValue) when the last copy of the result goes.
RunValue run_value(OrtValue* value);

class KeptValue {
 public:
  // The kept value, if it is over `memory` with `type` and `dims`, its memory's owner lives (then
  // added to `borrowed`) and no run holds it; else null.
  RunValue reuse(const ByteRange& memory, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                 std::vector<SharedOutput>& borrowed) const;

  // Keeps `value`, an OrtValue over `memory` (owned by `owner`) with `type` and `dims`.
  void keep(const ByteRange& memory, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
            const SharedOutput& owner, RunValue value);

 private:
  ByteRange memory_;
  ONNXTensorElementDataType type_ = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims_;
  std::weak_ptr<OrtValue> owner_;
  RunValue value_;
};

struct KeptValues {
  std::vector<KeptValue> inputs, outputs;  // by index in the session's metadata
};

}  // namespace onebit::node
