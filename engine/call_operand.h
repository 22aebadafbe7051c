// SPDX-License-Identifier: Apache-2.0
// Activation × activation groups (attention's QKᵀ and PV when a quantizer quantizes them): the
// second operand B changes per call, so each call packs it, as Compile packs a constant weight,
// and then runs through run_group like any other group. Such a group stays on the host: a device
// leg holds weights uploaded once per session.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/fused_group.h"

namespace onebit {

// B of one call: `entries` row-major K×N matrices of `type` (the batch entries), one zero point.
struct CallOperand {
  const void* data = nullptr;
  QType type = QType::Int8;
  int32_t zero_point = 0;
  int64_t K = 0;
  int64_t N = 0;
  size_t entries = 1;
};

// A group holding B's entries packed for this call (K, N and weights set, no device leg); its
// calls take the caller's epilogue.
FusedGroup pack_call_operand(const CallOperand& b);

}  // namespace onebit
