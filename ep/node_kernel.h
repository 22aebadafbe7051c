// SPDX-License-Identifier: Apache-2.0
// What Compile hands ORT for each fused node: its compute function and state. The EP has more than
// one kind (quantized MatMul groups, attention), each setting Compute; ORT gives each back to be
// released as this base. A kernel is its own state: it keeps nothing per call.
#pragma once
#include "ort_api.h"

namespace onebit {

struct NodeKernel : OrtNodeComputeInfo {
  NodeKernel() : OrtNodeComputeInfo{} {
    ort_version_supported = ORT_API_VERSION;
    CreateState = [](OrtNodeComputeInfo* self, OrtNodeComputeContext*, void** state) noexcept -> OrtStatus* {
      *state = self;
      return nullptr;
    };
    ReleaseState = [](OrtNodeComputeInfo*, void*) noexcept {};
  }
  NodeKernel(const NodeKernel&) = delete;
  NodeKernel& operator=(const NodeKernel&) = delete;
  virtual ~NodeKernel() = default;
};

}  // namespace onebit
