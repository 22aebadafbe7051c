// SPDX-License-Identifier: Apache-2.0
// Packing int8 weights into a design's tiled layout (design.h, Tiling), done once per session
// before the single weight upload, and read back through it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "npu/design.h"

namespace onebit::npu {

// How the caller's weights are laid out: K×N row-major (W[k][n]), or N×K row-major (column n
// of W contiguous, as the EP's packed host weights hold them).
enum class WeightLayout { kKN, kNK };

size_t packed_weight_bytes(uint32_t K, uint32_t N, const Tiling& tiling);

// Returns the packed bytes (packed_weight_bytes long), zero padded past K and N.
std::vector<int8_t> pack_weights_tiled(const int8_t* w, WeightLayout layout, uint32_t K, uint32_t N,
                                       const Tiling& tiling);

// True when `packed` (packed_bytes long) holds exactly what pack_weights_tiled makes of `w`: each
// value read back through the tiling and compared (the zero padding is not read).
bool packs_to_tiled(const int8_t* packed, size_t packed_bytes, const int8_t* w, WeightLayout layout, uint32_t K,
                    uint32_t N, const Tiling& tiling);

}  // namespace onebit::npu
