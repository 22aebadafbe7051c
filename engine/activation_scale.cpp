// SPDX-License-Identifier: Apache-2.0
#include "engine/activation_scale.h"

namespace onebit {

Epilogue epilogue_for_scales(const Epilogue& base, float x_scale, const std::vector<float>& w_scale) {
  Epilogue e = base;
  e.scale.resize(w_scale.size());
  for (size_t n = 0; n < w_scale.size(); ++n) e.scale[n] = static_cast<float>(x_scale * w_scale[n]);
  return e;
}

Epilogue epilogue_for_activation_scale(const FusedGroup& g, float x_scale) {
  return epilogue_for_scales(g.epilogue, x_scale, g.w_scale);
}

}  // namespace onebit
