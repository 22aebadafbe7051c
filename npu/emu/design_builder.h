// SPDX-License-Identifier: Apache-2.0
// The design generator: builds the program and declaration of a design for the emu target.
#pragma once
#include "base/error.h"
#include "npu/design.h"

namespace onebit::npu {

// The generator's version: raise it whenever what build_design produces changes. The design cache
// keeps each version's designs apart, so a design from another version is never read.
inline constexpr uint32_t kDesignBuilderVersion = 1;

// The tiling the generator uses for a (K, N); the same for every m_block of that shape.
Tiling choose_tiling(uint32_t K, uint32_t N);

// Builds the design (declaration + program) for `key`; rejects shapes out of range.
Result<Design> build_design(const DesignKey& key);

}  // namespace onebit::npu
