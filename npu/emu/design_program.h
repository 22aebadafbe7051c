// SPDX-License-Identifier: Apache-2.0
// The instruction set of a design's program, as the emulated array executes it.
//
// A compute tile holds three local buffers: an A tile (m_block × k_tile int8), a W tile
// (n_tile × k_tile int8) and an accumulator tile (m_block × n_tile int32). Loops bind a
// register to a tile index; the DMA instructions name the register that selects the tile.
// The generator emits, for example:
//
//   LOOP r0, n_tiles        ; r0 = column tile
//     ZERO_ACC
//     LOOP r1, k_tiles      ; r1 = depth tile
//       LOAD_A r1           ; A[0:m_block, r1*k_tile : +k_tile] -> A tile (zero past K)
//       LOAD_W r0, r1       ; packed W tile (r0, r1) -> W tile
//       MAC                 ; acc += A tile · W tileᵀ  (int32)
//     END_LOOP
//     STORE_C r0            ; acc -> C[0:m_block, r0*n_tile : +n_tile] (clipped at N)
//   END_LOOP
//   HALT
//
// Encoding: 8 bytes per instruction, little-endian: opcode u8, r0 u8, r1 u8, reserved u8 (0),
// imm u32 (the loop count for LOOP, else 0).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "npu/design.h"

namespace onebit::npu {

enum class Opcode : uint8_t {
  kLoop = 0x01,
  kEndLoop = 0x02,
  kZeroAcc = 0x03,
  kLoadA = 0x04,
  kLoadW = 0x05,
  kMac = 0x06,
  kStoreC = 0x07,
  kHalt = 0x0f,
};

struct Instruction {
  Opcode op = Opcode::kHalt;
  uint8_t r0 = 0;
  uint8_t r1 = 0;
  uint32_t imm = 0;
  bool operator==(const Instruction&) const = default;
};

constexpr size_t kInstructionBytes = 8;
constexpr size_t kMaxInstructions = 4096;
constexpr uint8_t kLoopRegisters = 4;

const char* opcode_name(Opcode op);

std::vector<uint8_t> encode_program(const std::vector<Instruction>& program);

// Decodes and checks that the program is well formed for the design it belongs to: known
// opcodes, zero reserved fields, balanced loops (depth <= kLoopRegisters, a register bound once
// per nest), every tile register bound by an enclosing loop whose count is exactly the number
// of tiles it indexes (so no access can leave the declared shape), nested trip counts no larger
// than the design's tile count (so no program runs away), at least one MAC and one
// STORE_C, and HALT as the last instruction and only there.
Result<std::vector<Instruction>> decode_program(std::span<const uint8_t> bytes, const DesignInfo& info);

// One instruction per line, e.g. "LOOP r0, 64"; for diagnostics and tests.
std::string disassemble(const std::vector<Instruction>& program);

}  // namespace onebit::npu
