// SPDX-License-Identifier: Apache-2.0
// The AMX tile configuration (palette 1) and its loading, for the AMX kernels. Include only inside
// a `#pragma GCC target("amx-tile")` region.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace onebit {
namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes of a row, per tile
  uint8_t rows[16] = {};
};

// GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes of the configuration, so the
// stores of the rest may be dropped as dead (seen: a tile left unconfigured, tilezero faulting
// with SIGILL); the empty asm makes the whole structure read first.
inline void load_tile_config(const TileConfig& config) {
  __asm__ volatile("" : : "m"(config));
  _tile_loadconfig(&config);
}

}  // namespace
}  // namespace onebit
