// SPDX-License-Identifier: Apache-2.0
#include "engine/activation_scale.h"

namespace onebit {

Epilogue epilogue_for_activation_scale(const FusedGroup& g, float x_scale) {
  Epilogue e = g.epilogue;
  e.scale.resize(g.w_scale.size());
  for (size_t n = 0; n < g.w_scale.size(); ++n) e.scale[n] = static_cast<float>(x_scale * g.w_scale[n]);
  return e;
}

}  // namespace onebit
