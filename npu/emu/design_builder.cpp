// SPDX-License-Identifier: Apache-2.0
#include "npu/emu/design_builder.h"

#include <algorithm>

#include "base/checksum.h"
#include "npu/emu/design_program.h"

namespace onebit::npu {

namespace {

uint32_t round_up(uint32_t v, uint32_t to) { return (v + to - 1) / to * to; }

}  // namespace

Tiling choose_tiling(uint32_t K, uint32_t N) {
  // Depth tiles of up to 256 int8 (a vectorisable dot product), column tiles of up to 64; both
  // multiples of 8 so tiles stay aligned in the weight BO.
  return {std::min<uint32_t>(256, round_up(std::max<uint32_t>(K, 1), 8)),
          std::min<uint32_t>(64, round_up(std::max<uint32_t>(N, 1), 8))};
}

Result<Design> build_design(const DesignKey& key) {
  if (key.target != Target::kEmu)
    return make_error(ErrorCode::kInvalidArgument, "no generator for target " + std::string(target_name(key.target)));
  if (key.K == 0 || key.K > kMaxK || key.N == 0 || key.N > kMaxN || key.m_block == 0 || key.m_block > kMaxMBlock)
    return make_error(ErrorCode::kInvalidArgument, "shape " + key.to_string() + " out of range (1 <= K <= " +
                                                       std::to_string(kMaxK) + ", 1 <= N <= " + std::to_string(kMaxN) +
                                                       ", 1 <= m_block <= " + std::to_string(kMaxMBlock) + ")");
  Design design;
  DesignInfo& info = design.info;
  info.target = key.target;
  info.K = key.K;
  info.N = key.N;
  info.m_block = key.m_block;
  info.tiling = choose_tiling(key.K, key.N);
  info.k_tiles = tiles_for(key.K, info.tiling.k_tile);
  info.n_tiles = tiles_for(key.N, info.tiling.n_tile);
  info.weight_layout = kWeightLayoutTiledNK;

  const std::vector<Instruction> program = {
      {Opcode::kLoop, 0, 0, info.n_tiles}, {Opcode::kZeroAcc, 0, 0, 0},
      {Opcode::kLoop, 1, 0, info.k_tiles}, {Opcode::kLoadA, 1, 0, 0},
      {Opcode::kLoadW, 0, 1, 0},           {Opcode::kMac, 0, 0, 0},
      {Opcode::kEndLoop, 0, 0, 0},         {Opcode::kStoreC, 0, 0, 0},
      {Opcode::kEndLoop, 0, 0, 0},         {Opcode::kHalt, 0, 0, 0},
  };
  design.program = encode_program(program);
  info.instruction_count = static_cast<uint32_t>(program.size());
  info.program_checksum = fnv1a64(design.program.data(), design.program.size());
  return design;
}

}  // namespace onebit::npu
