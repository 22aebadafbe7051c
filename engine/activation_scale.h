// SPDX-License-Identifier: Apache-2.0
// The epilogue of one call of a group whose activation scale is computed per call
// (DynamicQuantizeLinear → MatMulInteger → Cast → Mul(s_x · s_w)).
#pragma once
#include <span>

#include "engine/fused_group.h"

namespace onebit {

// `base` with scale[n] = float(s_x * b_scale[n]): the float32 product the model's Mul computes,
// so any s_x (0, Inf, NaN included) scales exactly as the model says. Written into `e`, whose
// storage a caller may reuse from call to call.
void epilogue_for_scales(const Epilogue& base, float x_scale, std::span<const float> b_scale, Epilogue& e);

// g's epilogue scaled by x_scale and g's constant weight scales.
void epilogue_for_activation_scale(const FusedGroup& g, float x_scale, Epilogue& e);

}  // namespace onebit
