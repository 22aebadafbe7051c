// SPDX-License-Identifier: Apache-2.0
// What one fused group computes, independent of ORT: y = epilogue(gemm_q8(x, W)) for each batch
// entry of its weight, with the group's device leg where the session has a device; and what
// each call brings (how its activation arrives, a B that changes per call).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/group_device.h"
#include "kernels/dynamic_quantize.h"
#include "kernels/epilogue.h"
#include "kernels/gemm_q8.h"
#include "kernels/gemm_w4a8.h"

namespace onebit {

// Where a group's activation comes from at each call.
enum class ActivationSource {
  Quantized,              // the model's int8/uint8 tensor (x_type, x_zero_point or one read per call)
  QuantizeLinear,         // float, quantized here by the group's QuantizeLinear (x_quantize) to uint8
  DynamicQuantizeLinear,  // float, quantized here to uint8 with a scale and zero point computed per call
  PerKBlock,              // float, quantized here to int8 per row and K-block (MatMulNBits: block_weights)
};

struct FusedGroup {
  std::string name;  // for messages: "MatMul 'proj' (fused node '...')"
  QType x_type = QType::Int8;
  int32_t x_zero_point = 0;
  ActivationSource x_source = ActivationSource::Quantized;
  DynamicQuantization x_quantize;  // the QuantizeLinear's constant scale and zero point
  size_t x_min_rank = 2;           // the activation ranks a call may have
  size_t x_max_rank = 4;
  int64_t K = 0;
  int64_t N = 0;
  Epilogue epilogue;
  // Groups whose activation scale arrives per call (quantize_dynamic): the weight scales, one or
  // N; each call's epilogue scales by float(s_x * b_scale[n]) (see activation_scale.h).
  std::vector<float> b_scale;
  std::vector<int64_t> b_batch;  // leading dims of a batched weight (broadcast against the activation's)
  // One per batch entry; read-only, and shared by every group of the process with the same packed
  // bytes (engine/shared_weights.h).
  std::vector<std::shared_ptr<const PackedWeights>> weights;
  GroupDevice device;  // the device leg (empty: host only)
  // Activation × activation: B (`b_name`, of b_type, per tensor) is an input of each call, packed
  // for it; K, N and b_batch are what the model declares (-1 where symbolic).
  bool b_per_call = false;
  std::string b_name;
  QType b_type = QType::Int8;
  int32_t b_zero_point = 0;  // unless the call brings one
  // MatMulNBits (x_source PerKBlock): its 4- or 8-bit weights as the W4A8 kernels stream them, and
  // its bias (N floats, or none); y is float. Such a group has no `weights` and no device leg.
  std::shared_ptr<const PackedNBits> block_weights;  // shared alike
  std::vector<float> block_bias;

  bool quantizes_x() const { return x_source != ActivationSource::Quantized; }
};

}  // namespace onebit
