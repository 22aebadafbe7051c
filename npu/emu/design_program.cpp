// SPDX-License-Identifier: Apache-2.0
#include "npu/emu/design_program.h"

#include <array>
#include <optional>

namespace onebit::npu {

namespace {

bool known_opcode(uint8_t op) {
  switch (static_cast<Opcode>(op)) {
    case Opcode::kLoop:
    case Opcode::kEndLoop:
    case Opcode::kZeroAcc:
    case Opcode::kLoadA:
    case Opcode::kLoadW:
    case Opcode::kMac:
    case Opcode::kStoreC:
    case Opcode::kHalt:
      return true;
  }
  return false;
}

// How many register operands an opcode uses (the others must be zero).
int register_operands(Opcode op) {
  switch (op) {
    case Opcode::kLoop:
      return 1;
    case Opcode::kLoadA:
      return 1;
    case Opcode::kLoadW:
      return 2;
    case Opcode::kStoreC:
      return 1;
    default:
      return 0;
  }
}

Error bad(size_t index, const std::string& why) {
  return make_error(ErrorCode::kDesign, "program instruction " + std::to_string(index) + ": " + why);
}

}  // namespace

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kLoop:
      return "LOOP";
    case Opcode::kEndLoop:
      return "END_LOOP";
    case Opcode::kZeroAcc:
      return "ZERO_ACC";
    case Opcode::kLoadA:
      return "LOAD_A";
    case Opcode::kLoadW:
      return "LOAD_W";
    case Opcode::kMac:
      return "MAC";
    case Opcode::kStoreC:
      return "STORE_C";
    case Opcode::kHalt:
      return "HALT";
  }
  return "?";
}

std::vector<uint8_t> encode_program(const std::vector<Instruction>& program) {
  std::vector<uint8_t> bytes;
  bytes.reserve(program.size() * kInstructionBytes);
  for (const Instruction& in : program) {
    bytes.push_back(static_cast<uint8_t>(in.op));
    bytes.push_back(in.r0);
    bytes.push_back(in.r1);
    bytes.push_back(0);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(in.imm >> (8 * i)));
  }
  return bytes;
}

Result<std::vector<Instruction>> decode_program(std::span<const uint8_t> bytes, const DesignInfo& info) {
  if (bytes.empty() || bytes.size() % kInstructionBytes != 0)
    return make_error(ErrorCode::kDesign, "program size " + std::to_string(bytes.size()) +
                                              " is not a positive multiple of " + std::to_string(kInstructionBytes));
  const size_t count = bytes.size() / kInstructionBytes;
  if (count > kMaxInstructions)
    return make_error(ErrorCode::kDesign, "program has " + std::to_string(count) + " instructions, more than " +
                                              std::to_string(kMaxInstructions));
  if (count != info.instruction_count)
    return make_error(ErrorCode::kDesign, "program has " + std::to_string(count) + " instructions, the note declares " +
                                              std::to_string(info.instruction_count));

  std::vector<Instruction> program(count);
  // Loop count bound to each register while its loop is open (nullopt = unbound).
  std::array<std::optional<uint32_t>, kLoopRegisters> bound{};
  std::vector<uint8_t> open_loops;  // registers of the open loops, innermost last
  bool has_mac = false;
  bool has_store = false;
  const uint64_t tile_count = uint64_t(info.k_tiles) * info.n_tiles;
  uint64_t trips = 1;  // product of the open loops' counts

  auto require_bound = [&](size_t i, uint8_t reg, uint32_t tiles, const char* what) -> std::optional<Error> {
    if (!bound[reg]) return bad(i, "register r" + std::to_string(reg) + " is not bound by an enclosing LOOP");
    if (*bound[reg] != tiles)
      return bad(i, std::string(what) + " register r" + std::to_string(reg) + " loops " + std::to_string(*bound[reg]) +
                        " times, the design has " + std::to_string(tiles) + " tiles");
    return std::nullopt;
  };

  for (size_t i = 0; i < count; ++i) {
    const uint8_t* p = bytes.data() + i * kInstructionBytes;
    if (!known_opcode(p[0])) return bad(i, "unknown opcode " + std::to_string(p[0]));
    Instruction in;
    in.op = static_cast<Opcode>(p[0]);
    in.r0 = p[1];
    in.r1 = p[2];
    in.imm = uint32_t(p[4]) | uint32_t(p[5]) << 8 | uint32_t(p[6]) << 16 | uint32_t(p[7]) << 24;
    if (p[3] != 0) return bad(i, "reserved byte is not zero");
    const int regs = register_operands(in.op);
    if (regs < 1 && in.r0 != 0) return bad(i, std::string(opcode_name(in.op)) + " takes no r0 operand");
    if (regs < 2 && in.r1 != 0) return bad(i, std::string(opcode_name(in.op)) + " takes no r1 operand");
    if ((regs >= 1 && in.r0 >= kLoopRegisters) || (regs >= 2 && in.r1 >= kLoopRegisters))
      return bad(i, "register out of range");
    if (in.op != Opcode::kLoop && in.imm != 0) return bad(i, std::string(opcode_name(in.op)) + " takes no immediate");
    program[i] = in;

    switch (in.op) {
      case Opcode::kLoop:
        if (in.imm == 0) return bad(i, "LOOP count is zero");
        if (bound[in.r0]) return bad(i, "register r" + std::to_string(in.r0) + " is already bound by an open loop");
        // Bound the work: nested trip counts may not exceed the design's tile count.
        if (in.imm > tile_count / trips)
          return bad(i, "nested LOOP trip count exceeds the design's " + std::to_string(tile_count) + " tiles");
        trips *= in.imm;
        bound[in.r0] = in.imm;
        open_loops.push_back(in.r0);
        break;
      case Opcode::kEndLoop:
        if (open_loops.empty()) return bad(i, "END_LOOP without LOOP");
        trips /= *bound[open_loops.back()];
        bound[open_loops.back()].reset();
        open_loops.pop_back();
        break;
      case Opcode::kLoadA:
        if (auto e = require_bound(i, in.r0, info.k_tiles, "LOAD_A depth")) return *e;
        break;
      case Opcode::kLoadW:
        if (auto e = require_bound(i, in.r0, info.n_tiles, "LOAD_W column")) return *e;
        if (auto e = require_bound(i, in.r1, info.k_tiles, "LOAD_W depth")) return *e;
        break;
      case Opcode::kStoreC:
        if (auto e = require_bound(i, in.r0, info.n_tiles, "STORE_C column")) return *e;
        has_store = true;
        break;
      case Opcode::kMac:
        has_mac = true;
        break;
      case Opcode::kZeroAcc:
        break;
      case Opcode::kHalt:
        if (i + 1 != count) return bad(i, "HALT before the end of the program");
        break;
    }
  }
  if (program.back().op != Opcode::kHalt) return make_error(ErrorCode::kDesign, "program does not end with HALT");
  if (!open_loops.empty()) return make_error(ErrorCode::kDesign, "program ends inside an open LOOP");
  if (!has_mac || !has_store) return make_error(ErrorCode::kDesign, "program has no MAC or no STORE_C");
  return program;
}

std::string disassemble(const std::vector<Instruction>& program) {
  std::string text;
  int depth = 0;
  for (const Instruction& in : program) {
    if (in.op == Opcode::kEndLoop) --depth;
    text.append(static_cast<size_t>(2 * (depth > 0 ? depth : 0)), ' ');
    text += opcode_name(in.op);
    switch (register_operands(in.op)) {
      case 1:
        text += " r" + std::to_string(in.r0);
        break;
      case 2:
        text += " r" + std::to_string(in.r0) + ", r" + std::to_string(in.r1);
        break;
      default:
        break;
    }
    if (in.op == Opcode::kLoop) text += ", " + std::to_string(in.imm);
    text += '\n';
    if (in.op == Opcode::kLoop) ++depth;
  }
  return text;
}

}  // namespace onebit::npu
