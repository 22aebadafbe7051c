// SPDX-License-Identifier: Apache-2.0
#include "npu/emu/design_elf.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/checksum.h"
#include "base/regular_file.h"
#include "npu/emu/design_program.h"

namespace onebit::npu {

namespace {

// ELF constants (kept local: <elf.h> is not needed for 20 numbers).
constexpr uint8_t kElfClass64 = 2, kElfData2Lsb = 1, kEvCurrent = 1;
constexpr uint16_t kEtExec = 2;
constexpr uint32_t kShtProgbits = 1, kShtStrtab = 3, kShtNote = 7;
constexpr uint64_t kShfAlloc = 0x2, kShfExecinstr = 0x4;
constexpr uint32_t kPtLoad = 1, kPtNote = 4;
constexpr uint32_t kPfX = 0x1, kPfR = 0x4;
constexpr size_t kEhdrBytes = 64, kPhdrBytes = 56, kShdrBytes = 64;
constexpr uint16_t kPhnum = 2, kShnum = 4, kShstrndx = 3;
constexpr size_t kNoteNameBytes = sizeof(kNoteOwner);   // 7, with the NUL
constexpr size_t kNoteBytes = 12 + 8 + kNoteDescBytes;  // header + name padded to 4 + desc
constexpr uint32_t kMaxKTile = 4096, kMaxNTile = 1024;

constexpr char kNoteSection[] = ".note.onebit";
constexpr char kProgramSection[] = ".onebit.program";
constexpr char kShstrtabSection[] = ".shstrtab";

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

void put(std::vector<uint8_t>& b, size_t off, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[off + size_t(i)] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get(std::span<const uint8_t> b, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(b[off + size_t(i)]) << (8 * i);
  return v;
}

struct SectionHeader {
  uint32_t name, type;
  uint64_t flags, addr, offset, size;
  uint32_t link, info;
  uint64_t addralign, entsize;
};

struct ProgramHeader {
  uint32_t type, flags;
  uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

// Each header's little-endian layout, written once for both directions: f(offset, field, bytes)
// for every field (Header is const when writing).
template <typename Header, typename F>
void section_header_fields(Header& s, F&& f) {
  f(0, s.name, 4), f(4, s.type, 4), f(8, s.flags, 8), f(16, s.addr, 8), f(24, s.offset, 8);
  f(32, s.size, 8), f(40, s.link, 4), f(44, s.info, 4), f(48, s.addralign, 8), f(56, s.entsize, 8);
}

template <typename Header, typename F>
void program_header_fields(Header& p, F&& f) {
  f(0, p.type, 4), f(4, p.flags, 4), f(8, p.offset, 8), f(16, p.vaddr, 8);
  f(24, p.paddr, 8), f(32, p.filesz, 8), f(40, p.memsz, 8), f(48, p.align, 8);
}

// Writes a header's fields at off, or reads them from there.
auto writer(std::vector<uint8_t>& b, size_t off) {
  return [&b, off](size_t at, uint64_t value, int bytes) { put(b, off + at, value, bytes); };
}
auto reader(std::span<const uint8_t> b, size_t off) {
  return [b, off](size_t at, auto& field, int bytes) {
    field = static_cast<std::remove_reference_t<decltype(field)>>(get(b, off + at, bytes));
  };
}

void put_shdr(std::vector<uint8_t>& b, size_t off, const SectionHeader& s) { section_header_fields(s, writer(b, off)); }

SectionHeader get_shdr(std::span<const uint8_t> b, size_t off) {
  SectionHeader s{};
  section_header_fields(s, reader(b, off));
  return s;
}

void put_phdr(std::vector<uint8_t>& b, size_t off, const ProgramHeader& p) { program_header_fields(p, writer(b, off)); }

ProgramHeader get_phdr(std::span<const uint8_t> b, size_t off) {
  ProgramHeader p{};
  program_header_fields(p, reader(b, off));
  return p;
}

std::vector<uint8_t> note_desc(const DesignInfo& info) {
  std::vector<uint8_t> d(kNoteDescBytes, 0);
  put(d, 0, info.format_version, 4);
  put(d, 4, static_cast<uint32_t>(info.target), 4);
  put(d, 8, info.K, 4);
  put(d, 12, info.N, 4);
  put(d, 16, info.m_block, 4);
  put(d, 20, info.tiling.k_tile, 4);
  put(d, 24, info.tiling.n_tile, 4);
  put(d, 28, info.k_tiles, 4);
  put(d, 32, info.n_tiles, 4);
  put(d, 36, info.weight_layout, 4);
  put(d, 40, info.instruction_count, 4);
  put(d, 44, 0, 4);  // reserved
  put(d, 48, info.program_checksum, 8);
  const char* name = target_name(info.target);
  std::memcpy(d.data() + 56, name, std::min<size_t>(std::strlen(name), 7));
  return d;
}

Error reject(const std::string& why) { return make_error(ErrorCode::kDesign, why); }

// [offset, offset + size) lies inside a file of `file_size` bytes (no overflow).
bool in_file(uint64_t offset, uint64_t size, size_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

bool overlaps(uint64_t a_off, uint64_t a_size, uint64_t b_off, uint64_t b_size) {
  return a_off < b_off + b_size && b_off < a_off + a_size;
}

Result<DesignInfo> parse_note_desc(std::span<const uint8_t> d) {
  DesignInfo info;
  info.format_version = uint32_t(get(d, 0, 4));
  if (info.format_version != kDesignFormatVersion)
    return reject("note: format version " + std::to_string(info.format_version) + ", this runtime reads version " +
                  std::to_string(kDesignFormatVersion) + " (delete the file to rebuild it)");
  const uint32_t target = uint32_t(get(d, 4, 4));
  if (target != static_cast<uint32_t>(Target::kEmu)) return reject("note: unknown target " + std::to_string(target));
  info.target = static_cast<Target>(target);
  info.K = uint32_t(get(d, 8, 4));
  info.N = uint32_t(get(d, 12, 4));
  info.m_block = uint32_t(get(d, 16, 4));
  info.tiling.k_tile = uint32_t(get(d, 20, 4));
  info.tiling.n_tile = uint32_t(get(d, 24, 4));
  info.k_tiles = uint32_t(get(d, 28, 4));
  info.n_tiles = uint32_t(get(d, 32, 4));
  info.weight_layout = uint32_t(get(d, 36, 4));
  info.instruction_count = uint32_t(get(d, 40, 4));
  const uint32_t reserved = uint32_t(get(d, 44, 4));
  info.program_checksum = get(d, 48, 8);

  char name[8] = {};
  std::memcpy(name, d.data() + 56, 8);
  if (name[7] != '\0' || std::strcmp(name, target_name(info.target)) != 0 ||
      std::any_of(name + std::strlen(name), name + 8, [](char c) { return c != '\0'; }))
    return reject("note: target name does not match target " + std::string(target_name(info.target)));
  if (reserved != 0) return reject("note: reserved field is not zero");
  if (info.K == 0 || info.K > kMaxK) return reject("note: K=" + std::to_string(info.K) + " out of range");
  if (info.N == 0 || info.N > kMaxN) return reject("note: N=" + std::to_string(info.N) + " out of range");
  if (info.m_block == 0 || info.m_block > kMaxMBlock)
    return reject("note: m_block=" + std::to_string(info.m_block) + " out of range");
  if (info.tiling.k_tile == 0 || info.tiling.k_tile > kMaxKTile || info.tiling.k_tile % 8 != 0 ||
      info.tiling.n_tile == 0 || info.tiling.n_tile > kMaxNTile || info.tiling.n_tile % 8 != 0)
    return reject("note: tiling " + std::to_string(info.tiling.k_tile) + "x" + std::to_string(info.tiling.n_tile) +
                  " out of range");
  if (info.k_tiles != tiles_for(info.K, info.tiling.k_tile) || info.n_tiles != tiles_for(info.N, info.tiling.n_tile))
    return reject("note: tile counts do not match K, N and the tiling");
  if (info.weight_layout != kWeightLayoutTiledNK)
    return reject("note: unknown weight layout " + std::to_string(info.weight_layout));
  return info;
}

}  // namespace

std::vector<uint8_t> write_design_elf(const Design& design) {
  const size_t phoff = kEhdrBytes;
  const size_t note_off = phoff + kPhnum * kPhdrBytes;
  const size_t program_off = align_up(note_off + kNoteBytes, 8);
  const size_t program_size = design.program.size();
  const std::string shstrtab =
      std::string("\0", 1) + kNoteSection + '\0' + kProgramSection + '\0' + kShstrtabSection + '\0';
  const uint32_t name_note = 1;
  const uint32_t name_program = name_note + uint32_t(sizeof(kNoteSection));
  const uint32_t name_shstrtab = name_program + uint32_t(sizeof(kProgramSection));
  const size_t shstrtab_off = program_off + program_size;
  const size_t shoff = align_up(shstrtab_off + shstrtab.size(), 8);
  std::vector<uint8_t> b(shoff + kShnum * kShdrBytes, 0);

  // ELF header.
  const uint8_t ident[16] = {0x7f, 'E', 'L', 'F', kElfClass64, kElfData2Lsb, kEvCurrent, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(b.data(), ident, 16);
  put(b, 16, kEtExec, 2);
  put(b, 18, kElfMachineOnebit, 2);
  put(b, 20, kEvCurrent, 4);
  put(b, 24, program_off, 8);  // e_entry: the program's first instruction
  put(b, 32, phoff, 8);
  put(b, 40, shoff, 8);
  put(b, 48, static_cast<uint32_t>(design.info.target), 4);  // e_flags
  put(b, 52, kEhdrBytes, 2);
  put(b, 54, kPhdrBytes, 2);
  put(b, 56, kPhnum, 2);
  put(b, 58, kShdrBytes, 2);
  put(b, 60, kShnum, 2);
  put(b, 62, kShstrndx, 2);

  // Addresses equal file offsets: the array's loader maps the file as is.
  put_phdr(b, phoff, {kPtNote, kPfR, note_off, note_off, note_off, kNoteBytes, kNoteBytes, 4});
  put_phdr(b, phoff + kPhdrBytes,
           {kPtLoad, kPfR | kPfX, program_off, program_off, program_off, program_size, program_size, 8});

  // The note: namesz, descsz, type, name (padded to 4), desc.
  put(b, note_off + 0, kNoteNameBytes, 4);
  put(b, note_off + 4, kNoteDescBytes, 4);
  put(b, note_off + 8, kNoteTypeOnebitDesign, 4);
  std::memcpy(b.data() + note_off + 12, kNoteOwner, kNoteNameBytes);
  const std::vector<uint8_t> desc = note_desc(design.info);
  std::memcpy(b.data() + note_off + 20, desc.data(), desc.size());

  std::memcpy(b.data() + program_off, design.program.data(), program_size);
  std::memcpy(b.data() + shstrtab_off, shstrtab.data(), shstrtab.size());

  put_shdr(b, shoff + 1 * kShdrBytes, {name_note, kShtNote, kShfAlloc, note_off, note_off, kNoteBytes, 0, 0, 4, 0});
  put_shdr(b, shoff + 2 * kShdrBytes,
           {name_program, kShtProgbits, kShfAlloc | kShfExecinstr, program_off, program_off, program_size, 0, 0, 8,
            kInstructionBytes});
  put_shdr(b, shoff + 3 * kShdrBytes, {name_shstrtab, kShtStrtab, 0, 0, shstrtab_off, shstrtab.size(), 0, 0, 1, 0});
  return b;
}

Result<Design> parse_design_elf(std::span<const uint8_t> b) {
  const size_t size = b.size();
  if (size < kEhdrBytes) return reject("file is " + std::to_string(size) + " bytes, shorter than an ELF64 header");
  if (b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F') return reject("not an ELF file (bad magic)");
  if (b[4] != kElfClass64) return reject("not ELF64 (EI_CLASS=" + std::to_string(b[4]) + ")");
  if (b[5] != kElfData2Lsb) return reject("not little-endian (EI_DATA=" + std::to_string(b[5]) + ")");
  if (b[6] != kEvCurrent) return reject("bad EI_VERSION " + std::to_string(b[6]));
  for (size_t i = 7; i < 16; ++i)
    if (b[i] != 0) return reject("e_ident OS/ABI or padding byte " + std::to_string(i) + " is not zero");
  if (get(b, 16, 2) != kEtExec) return reject("e_type " + std::to_string(get(b, 16, 2)) + " is not ET_EXEC");
  if (get(b, 18, 2) != kElfMachineOnebit)
    return reject("e_machine " + std::to_string(get(b, 18, 2)) + " is not the onebit array");
  if (get(b, 20, 4) != kEvCurrent) return reject("bad e_version");
  const uint64_t entry = get(b, 24, 8), phoff = get(b, 32, 8), shoff = get(b, 40, 8);
  const uint32_t flags = uint32_t(get(b, 48, 4));
  if (get(b, 52, 2) != kEhdrBytes || get(b, 54, 2) != kPhdrBytes || get(b, 58, 2) != kShdrBytes)
    return reject("unexpected ELF header or table entry sizes");
  if (get(b, 56, 2) != kPhnum) return reject("expected " + std::to_string(kPhnum) + " program headers");
  if (get(b, 60, 2) != kShnum) return reject("expected " + std::to_string(kShnum) + " sections");
  if (get(b, 62, 2) != kShstrndx) return reject("bad e_shstrndx");
  if (!in_file(phoff, kPhnum * kPhdrBytes, size) || phoff < kEhdrBytes || phoff % 8 != 0)
    return reject("program header table out of bounds (file truncated?)");
  if (!in_file(shoff, kShnum * kShdrBytes, size) || shoff < kEhdrBytes || shoff % 8 != 0)
    return reject("section header table out of bounds (file truncated?)");
  if (overlaps(phoff, kPhnum * kPhdrBytes, shoff, kShnum * kShdrBytes))
    return reject("program and section header tables overlap");

  SectionHeader sh[kShnum];
  for (size_t i = 0; i < kShnum; ++i) sh[i] = get_shdr(b, shoff + i * kShdrBytes);
  for (size_t i = 0; i < kShdrBytes; ++i)
    if (b[shoff + i] != 0) return reject("section 0 is not the null section");
  for (size_t i = 1; i < kShnum; ++i) {
    if (sh[i].link != 0 || sh[i].info != 0)
      return reject("section " + std::to_string(i) + ": sh_link/sh_info not zero");
    if (!in_file(sh[i].offset, sh[i].size, size))
      return reject("section " + std::to_string(i) + " [" + std::to_string(sh[i].offset) + ", +" +
                    std::to_string(sh[i].size) + ") runs past the end of the " + std::to_string(size) +
                    "-byte file (truncated?)");
    if (sh[i].offset < kEhdrBytes || overlaps(sh[i].offset, sh[i].size, phoff, kPhnum * kPhdrBytes) ||
        overlaps(sh[i].offset, sh[i].size, shoff, kShnum * kShdrBytes))
      return reject("section " + std::to_string(i) + " overlaps the ELF headers");
    for (size_t j = 1; j < i; ++j)
      if (overlaps(sh[i].offset, sh[i].size, sh[j].offset, sh[j].size))
        return reject("sections " + std::to_string(j) + " and " + std::to_string(i) + " overlap");
  }

  // Section names.
  const SectionHeader& strtab = sh[kShstrndx];
  if (strtab.type != kShtStrtab || strtab.flags != 0 || strtab.addr != 0 || strtab.addralign != 1 ||
      strtab.entsize != 0 || strtab.size == 0 || b[strtab.offset + strtab.size - 1] != 0 || b[strtab.offset] != 0)
    return reject(".shstrtab is malformed");
  auto name_is = [&](const SectionHeader& s, const char* want) {
    const size_t len = std::strlen(want);
    return s.name < strtab.size && len < strtab.size - s.name &&
           std::memcmp(b.data() + strtab.offset + s.name, want, len + 1) == 0;
  };
  if (!name_is(sh[1], kNoteSection)) return reject("section 1 is not " + std::string(kNoteSection));
  if (!name_is(sh[2], kProgramSection)) return reject("section 2 is not " + std::string(kProgramSection));
  if (!name_is(sh[3], kShstrtabSection)) return reject("section 3 is not " + std::string(kShstrtabSection));

  // The note.
  const SectionHeader& note = sh[1];
  if (note.type != kShtNote || note.flags != kShfAlloc || note.addr != note.offset || note.addralign != 4 ||
      note.entsize != 0 || note.offset % 4 != 0)
    return reject("note section has the wrong type, flags, address or alignment");
  if (note.size != kNoteBytes)
    return reject("note section is " + std::to_string(note.size) + " bytes, expected " + std::to_string(kNoteBytes));
  const size_t n = note.offset;
  if (get(b, n, 4) != kNoteNameBytes || get(b, n + 4, 4) != kNoteDescBytes ||
      std::memcmp(b.data() + n + 12, kNoteOwner, kNoteNameBytes) != 0 || b[n + 19] != 0)
    return reject("note owner is not \"onebit\" or its sizes are wrong");
  if (get(b, n + 8, 4) != kNoteTypeOnebitDesign) return reject("note type is not NT_ONEBIT_DESIGN");
  Result<DesignInfo> info = parse_note_desc(b.subspan(n + 20, kNoteDescBytes));
  if (!info) return info.error();
  if (flags != static_cast<uint32_t>(info->target)) return reject("e_flags do not match the note's target");

  // The program.
  const SectionHeader& prog = sh[2];
  if (prog.type != kShtProgbits || prog.flags != (kShfAlloc | kShfExecinstr) || prog.addr != prog.offset ||
      prog.addralign != 8 || prog.entsize != kInstructionBytes || prog.offset % 8 != 0)
    return reject("program section has the wrong type, flags, address or alignment");
  if (prog.size != uint64_t(info->instruction_count) * kInstructionBytes)
    return reject("program section is " + std::to_string(prog.size) + " bytes, the note declares " +
                  std::to_string(info->instruction_count) + " instructions");
  if (entry != prog.addr) return reject("e_entry is not the program's start");

  // Segments must describe exactly the note and the program.
  const ProgramHeader pn = get_phdr(b, phoff), pl = get_phdr(b, phoff + kPhdrBytes);
  if (pn.type != kPtNote || pn.flags != kPfR || pn.offset != note.offset || pn.vaddr != note.addr ||
      pn.paddr != note.addr || pn.filesz != note.size || pn.memsz != note.size || pn.align != 4)
    return reject("PT_NOTE segment does not match the note section");
  if (pl.type != kPtLoad || pl.flags != (kPfR | kPfX) || pl.offset != prog.offset || pl.vaddr != prog.addr ||
      pl.paddr != prog.addr || pl.filesz != prog.size || pl.memsz != prog.size || pl.align != 8)
    return reject("PT_LOAD segment does not match the program section");

  const std::span<const uint8_t> program = b.subspan(prog.offset, prog.size);
  const uint64_t sum = fnv1a64(program.data(), program.size());
  if (sum != info->program_checksum) return reject("program checksum mismatch (file corrupt)");
  Result<std::vector<Instruction>> decoded = decode_program(program, *info);
  if (!decoded) return decoded.error();

  Design design;
  design.info = *info;
  design.program.assign(program.begin(), program.end());
  return design;
}

Status check_design_matches(const DesignInfo& info, const DesignKey& wanted) {
  if (info.key() == wanted) return {};
  return reject("design declares " + info.key().to_string() + ", wanted " + wanted.to_string());
}

Result<Design> load_design_file(const std::string& path, const DesignKey& wanted) {
  // A design is a few kB; refuse to read anything far larger into memory.
  constexpr size_t kMaxDesignFileBytes = 1 << 20;
  Result<std::vector<uint8_t>> bytes = read_regular_file(path, kMaxDesignFileBytes);
  if (!bytes) return reject(bytes.error().reason);
  Result<Design> design = parse_design_elf(*bytes);
  if (!design) return reject(path + ": " + design.error().reason);
  if (Status s = check_design_matches(design->info, wanted); !s) return reject(path + ": " + s.reason());
  return design;
}

}  // namespace onebit::npu
