// SPDX-License-Identifier: Apache-2.0
#include "engine/call_operand.h"

namespace onebit {

FusedGroup pack_call_operand(const CallOperand& b) {
  FusedGroup g;
  g.K = b.K;
  g.N = b.N;
  const auto* bytes = static_cast<const uint8_t*>(b.data);
  const size_t per_entry = static_cast<size_t>(b.K * b.N);
  g.weights.reserve(b.entries);
  for (size_t e = 0; e < b.entries; ++e)
    g.weights.push_back(std::make_shared<const PackedWeights>(
        pack_weights(bytes + e * per_entry, b.type, b.K, b.N, false, &b.zero_point, 1)));
  return g;
}

}  // namespace onebit
