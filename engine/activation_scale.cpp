// SPDX-License-Identifier: Apache-2.0
#include "engine/activation_scale.h"

namespace onebit {

void epilogue_for_activation_scale(const FusedGroup& g, float x_scale, Epilogue& e) {
  e.kind = g.epilogue.kind;
  e.float32_steps = g.epilogue.float32_steps;
  e.bias = g.epilogue.bias;  // copy-assigned: the storage e already has is reused
  e.y_scale = g.epilogue.y_scale;
  e.y_zero_point = g.epilogue.y_zero_point;
  e.scale.resize(g.w_scale.size());
  for (size_t n = 0; n < g.w_scale.size(); ++n) e.scale[n] = static_cast<float>(x_scale * g.w_scale[n]);
}

}  // namespace onebit
