// SPDX-License-Identifier: Apache-2.0
#include "engine/activation_scale.h"

namespace onebit {

void epilogue_for_scales(const Epilogue& base, float x_scale, std::span<const float> b_scale, Epilogue& e) {
  e.kind = base.kind;
  e.float32_steps = base.float32_steps;
  e.y_scale = base.y_scale;
  e.y_zero_point = base.y_zero_point;
  // Copy-assigned and resized: the storage e already has is reused.
  if (base.float32_steps) {
    e.bias32 = base.bias32;
    e.scale32.resize(b_scale.size());
    for (size_t n = 0; n < b_scale.size(); ++n) e.scale32[n] = x_scale * b_scale[n];
    return;
  }
  e.bias = base.bias;
  e.scale.resize(b_scale.size());
  for (size_t n = 0; n < b_scale.size(); ++n) e.scale[n] = static_cast<float>(x_scale * b_scale[n]);
}

void epilogue_for_activation_scale(const FusedGroup& g, float x_scale, Epilogue& e) {
  epilogue_for_scales(g.epilogue, x_scale, g.b_scale, e);
}

}  // namespace onebit
