// SPDX-License-Identifier: Apache-2.0
// What one fused group computes, independent of ORT: y = epilogue(gemm_q8(x, W)) for each batch
// entry of its weight, with the group's device leg where the session has a device.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/group_device.h"
#include "kernels/epilogue.h"
#include "kernels/gemm_q8.h"

namespace onebit {

struct FusedGroup {
  std::string name;  // for messages: "MatMul 'proj' (fused node '...')"
  QType x_type = QType::Int8;
  int32_t x_zero_point = 0;
  int64_t K = 0;
  int64_t N = 0;
  Epilogue epilogue;
  // Groups whose activation scale arrives per call (quantize_dynamic): the weight scales, one or
  // N; each call's epilogue scales by float(s_x * w_scale[n]) (see activation_scale.h).
  std::vector<float> w_scale;
  std::vector<PackedWeights> weights;  // one per batch entry
  GroupDevice device;                  // the device leg (empty: host only)
};

}  // namespace onebit
