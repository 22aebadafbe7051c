// SPDX-License-Identifier: Apache-2.0
// A call's float activation quantized (QuantizeLinear, or DynamicQuantizeLinear) straight into the
// prepared layout the kernels read: one pass over x for the values and row sums where quantizing
// and preparing took two, after DynamicQuantizeLinear's range pass. Each pass is split over the
// call's tasks once x is large enough to pay for the hand-off: on one thread, in front of a
// multi-thread GEMM, these passes were a fifth of the call at small N (BENCHMARKS.md).
#pragma once
#include <cstdint>

#include "engine/host_leg.h"
#include "kernels/dynamic_quantize.h"

namespace onebit {

// A QuantizeLinear's constant scale and zero point, and the zero point its DequantizeLinear reads
// the values with (the model may give the two nodes different ones).
struct ConstantQuantization {
  DynamicQuantization quantize;
  int32_t read_zero_point = 0;
};

// x (M × K floats) into `a` in `group`, and into x_q (M × K uint8) when other nodes read the
// quantized tensor too (else null): with `constant`, or when it is null with DynamicQuantizeLinear's
// scale and zero point, computed from x. Returns the scale and zero point x was quantized with.
DynamicQuantization quantize_activation(const float* x, int64_t M, int64_t K, const ConstantQuantization* constant,
                                        KGroup group, PreparedActivation& a, uint8_t* x_q, const TaskRunner& tasks);

}  // namespace onebit
