// SPDX-License-Identifier: Apache-2.0
// The design file: an ELF64 (little-endian, ET_EXEC) that `readelf -a` lists, with
//   .note.onebit     SHT_NOTE, owner "onebit", type NT_ONEBIT_DESIGN: the declaration
//                    (target, K, N, m_block, tiling, instruction count, program checksum)
//   .onebit.program  SHT_PROGBITS, alloc+exec, entsize 8: the program (design_program.h)
//   .shstrtab        section names
// and two program headers (PT_NOTE over the note, PT_LOAD over the program; e_entry = its start).
// e_machine is a private value (kElfMachineOnebit), e_flags the target.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "npu/design.h"

namespace onebit::npu {

constexpr uint16_t kElfMachineOnebit = 0x0b17;      // not an assigned EM_* value
constexpr uint32_t kNoteTypeOnebitDesign = 0x0b17;  // clear of the generic NT_* values readelf names
constexpr char kNoteOwner[] = "onebit";
constexpr size_t kNoteDescBytes = 64;

std::vector<uint8_t> write_design_elf(const Design& design);

// Validates everything before use — ELF identification, class, endianness, type, machine,
// header sizes, section and segment bounds, section names/types/flags, the note (owner, type,
// size, every field in range and consistent), the program checksum and the program itself — and
// returns the design, or an Error (ErrorCode::kDesign) whose reason says what is wrong.
// Never reads outside `bytes`.
Result<Design> parse_design_elf(std::span<const uint8_t> bytes);

// The declared shape must be the one asked for.
Status check_design_matches(const DesignInfo& info, const DesignKey& wanted);

// Reads `path`, parses it and checks it against `wanted`; reasons name the file.
Result<Design> load_design_file(const std::string& path, const DesignKey& wanted);

}  // namespace onebit::npu
