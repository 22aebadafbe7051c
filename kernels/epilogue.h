// SPDX-License-Identifier: Apache-2.0
// The one epilogue shared by every route: int32 accumulators -> the group's output.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/gemm_q8.h"
#include "kernels/quant_types.h"

namespace onebit {

// v = acc * scale[n] + bias[n]            (double; exact product of the float32 scales)
// float output:  y = float(v)
// int8/uint8:    y = saturate(round_half_even(v / y_scale) + y_zero_point)
// int32 output:  y = acc                  (MatMulInteger)
// With float32_steps every step is done in float32 instead, rounding after each as the
// operators of quantize_dynamic's chain do: Cast(acc) → Mul(scale) → [Add(bias)] → [Quantize];
// the scale and bias are then read from scale32 and bias32 (float arrays: the loop converts
// nothing but acc).
struct Epilogue {
  OutputKind kind = OutputKind::Float32;
  bool float32_steps = false;
  std::vector<double> scale;   // 1 (per tensor) or N values
  std::vector<double> bias;    // empty or N values
  std::vector<float> scale32;  // with float32_steps: 1 or N values
  std::vector<float> bias32;   // with float32_steps: empty or N values
  double y_scale = 1.0;
  int32_t y_zero_point = 0;

  // Switches to float32 steps, moving scale and bias (float32 values) to scale32 and bias32.
  void take_float32_steps();
  // The form a kernel applies from its registers (gemm_q8_blocks' `fused`) writing the float
  // output y: float32 steps to a float output only; false for any other epilogue.
  bool fused_float_output(void* y, FusedFloatOutput& fused) const;
  // acc is M×N; out receives M×N elements of `kind`.
  void apply(const int32_t* acc, int64_t M, int64_t N, void* out) const { apply_columns(acc, M, N, 0, N, out); }
  // The same for columns [n_begin, n_end) only (acc and out are still M×N row-major).
  void apply_columns(const int32_t* acc, int64_t M, int64_t N, int64_t n_begin, int64_t n_end, void* out) const;
};

size_t output_element_size(OutputKind kind);

}  // namespace onebit
