// SPDX-License-Identifier: Apache-2.0
#include "npu/weight_layout.h"

namespace onebit::npu {

namespace {

// Calls visit(packed index, source index) for every weight value the tiled layout holds, in the
// packed order; stops early when visit returns false. Packing and reading back both walk here, so
// the two cannot drift apart.
template <typename Visit>
bool walk_tiled(WeightLayout layout, uint32_t K, uint32_t N, const Tiling& tiling, Visit visit) {
  const uint32_t kt_count = tiles_for(K, tiling.k_tile);
  const uint32_t nt_count = tiles_for(N, tiling.n_tile);
  const size_t tile_bytes = size_t(tiling.n_tile) * tiling.k_tile;
  for (uint32_t nt = 0; nt < nt_count; ++nt) {
    for (uint32_t kt = 0; kt < kt_count; ++kt) {
      const size_t tile = (size_t(nt) * kt_count + kt) * tile_bytes;
      for (uint32_t j = 0; j < tiling.n_tile; ++j) {
        const size_t n = size_t(nt) * tiling.n_tile + j;
        if (n >= N) break;
        for (uint32_t i = 0; i < tiling.k_tile; ++i) {
          const size_t k = size_t(kt) * tiling.k_tile + i;
          if (k >= K) break;
          if (!visit(tile + size_t(j) * tiling.k_tile + i, layout == WeightLayout::kKN ? k * N + n : n * K + k))
            return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

size_t packed_weight_bytes(uint32_t K, uint32_t N, const Tiling& tiling) {
  return size_t(tiles_for(N, tiling.n_tile)) * tiles_for(K, tiling.k_tile) * tiling.n_tile * tiling.k_tile;
}

std::vector<int8_t> pack_weights_tiled(const int8_t* w, WeightLayout layout, uint32_t K, uint32_t N,
                                       const Tiling& tiling) {
  std::vector<int8_t> packed(packed_weight_bytes(K, N, tiling), 0);
  walk_tiled(layout, K, N, tiling, [&](size_t at, size_t from) {
    packed[at] = w[from];
    return true;
  });
  return packed;
}

bool packs_to_tiled(const int8_t* packed, size_t packed_bytes, const int8_t* w, WeightLayout layout, uint32_t K,
                    uint32_t N, const Tiling& tiling) {
  if (packed_bytes != packed_weight_bytes(K, N, tiling)) return false;
  return walk_tiled(layout, K, N, tiling, [&](size_t at, size_t from) { return packed[at] == w[from]; });
}

}  // namespace onebit::npu
