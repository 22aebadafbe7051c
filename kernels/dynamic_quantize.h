// SPDX-License-Identifier: Apache-2.0
// DynamicQuantizeLinear (ONNX, uint8 output) over one call's activation, and QuantizeLinear with a
// constant scale, for the groups that fuse them.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/gemm_q8.h"

namespace onebit {

struct DynamicQuantization {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// x_q[i] for count floats, as ONNX defines it and ORT's CPU kernel computes it:
//   range = [min(0, min x), max(0, max x)], scale = (hi - lo) / 255 in float (1 when hi == lo),
//   zero_point = round_half_even(clamp(0 - lo / scale, 0, 255)),
//   x_q = saturate(round_half_even(x / scale) + zero_point), x / scale a float division.
// ±Inf: scale Inf, x / scale NaN for the infinite values, which quantize to 0 (as ORT's).
// A NaN anywhere: scale NaN, zero point 255, every x_q 0 — ONNX's reference (ORT's CPU result
// there depends on where the NaN sits); every output of the MatMul is then NaN.
DynamicQuantization dynamic_quantize(const float* x, size_t count, uint8_t* x_q);

// DynamicQuantizeLinear's first pass, split out so that a caller can take the range of parts of x
// in parallel and merge them (min and max are exact in any order).
struct FloatRange {
  float lo = 0.0f;  // min(0, min x)
  float hi = 0.0f;  // max(0, max x)
  bool nan = false;
  void merge(const FloatRange& other);
};
FloatRange float_range(const float* x, size_t count);
// The scale and zero point dynamic_quantize takes for a range (with a NaN: scale NaN, zero point 255).
DynamicQuantization dynamic_quantization_for(const FloatRange& range);

// ONNX QuantizeLinear to uint8 with a per-tensor scale and zero point, the same loop (and so the
// same values) as dynamic_quantize and ORT's CPU kernel: saturate(round_half_even(x / scale) +
// zero_point); NaN (and Inf / Inf) give 0.
void quantize_linear(const float* x, size_t count, float scale, int32_t zero_point, uint8_t* x_q);

// Rows [m_begin, m_end) of the float activation x (a.K values a row) quantized as quantize_linear
// does, stored straight into `a` (shaped by shape_prepared_activation for uint8 values) with their
// row sums, and into x_q (the plain quantized M × K tensor) when it is not null: one pass where
// quantize_linear and prepare_activation take two. A NaN scale (DynamicQuantizeLinear of an input
// holding a NaN) stores 0 for every value, as dynamic_quantize does.
void quantize_rows_prepared(const float* x, int64_t m_begin, int64_t m_end, float scale, int32_t zero_point,
                            PreparedActivation& a, uint8_t* x_q);

}  // namespace onebit
