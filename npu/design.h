// SPDX-License-Identifier: Apache-2.0
// What a design is: one compiled program per (target, K, N, m_block) that computes
//   C[m, n] (int32) = sum_k A[m, k] * W[k, n]     for m_block rows of A per launch,
// with A int8 M×K row-major, W int8 packed in the design's tiled layout, exact int32 (the raw
// dot products; the host folds in zero points and applies the epilogue).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onebit::npu {

// Targets a design can be built for. Only the emulated array exists in this build.
enum class Target : uint32_t { kEmu = 1 };
const char* target_name(Target target);
std::optional<Target> target_from_name(std::string_view name);

// Largest K whose int8·int8 sums always fit int32: |a·w| <= 128·128.
constexpr uint32_t kMaxK = 2147483647u / (128u * 128u);
constexpr uint32_t kMaxN = 1u << 20;
constexpr uint32_t kMaxMBlock = 256;

struct DesignKey {
  Target target = Target::kEmu;
  uint32_t K = 0;
  uint32_t N = 0;
  uint32_t m_block = 0;

  bool operator==(const DesignKey&) const = default;
  std::string to_string() const;  // "emu 1024x2048 m32"
  std::string file_name() const;  // "emu_1024x2048_m32.elf"
};

// How the weights are tiled in device memory: tiles of n_tile columns × k_tile depth, ordered
// [n_tile_index][k_tile_index], each tile n-major (n_tile rows of k_tile int8), zero padded.
// Every m_block of one (K, N) uses the same tiling, so one weight BO serves all of them.
struct Tiling {
  uint32_t k_tile = 0;
  uint32_t n_tile = 0;
  bool operator==(const Tiling&) const = default;
};

constexpr uint32_t kWeightLayoutTiledNK = 1;
constexpr uint32_t kDesignFormatVersion = 1;

// The design's declaration, as carried in its ELF note.
struct DesignInfo {
  uint32_t format_version = kDesignFormatVersion;
  Target target = Target::kEmu;
  uint32_t K = 0;
  uint32_t N = 0;
  uint32_t m_block = 0;
  Tiling tiling;
  uint32_t k_tiles = 0;
  uint32_t n_tiles = 0;
  uint32_t weight_layout = kWeightLayoutTiledNK;
  uint32_t instruction_count = 0;
  uint64_t program_checksum = 0;

  DesignKey key() const { return {target, K, N, m_block}; }
};

// A design in memory: its declaration and its program (encoded instructions, design_program.h).
struct Design {
  DesignInfo info;
  std::vector<uint8_t> program;
};

inline uint32_t tiles_for(uint32_t extent, uint32_t tile) { return (extent + tile - 1) / tile; }

}  // namespace onebit::npu
