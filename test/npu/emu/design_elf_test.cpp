// SPDX-License-Identifier: Apache-2.0
// The design file: ELF64 writer, the validating loader (corrupt / truncated / mismatched files
// are rejected with a reason, never a crash), a fuzz pass, and readelf's view of it.
#include "npu/emu/design_elf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include "npu/device_gemm.h"
#include "npu/emu/emu_device.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::must_build;
using onebit_npu_test::TempDir;

std::string reject_reason(const std::vector<uint8_t>& bytes) {
  Result<Design> r = parse_design_elf(bytes);
  if (r) return "accepted";
  EXPECT_EQ(r.error().code, ErrorCode::kDesign);
  EXPECT_FALSE(r.error().reason.empty());
  return r.error().reason;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(DesignElf, RoundTrips) {
  const Design d = must_build(1024, 2048, 32);
  const std::vector<uint8_t> bytes = write_design_elf(d);
  Result<Design> back = parse_design_elf(bytes);
  ASSERT_TRUE(back) << back.error().reason;
  EXPECT_EQ(back->program, d.program);
  EXPECT_EQ(back->info.key(), (DesignKey{Target::kEmu, 1024, 2048, 32}));
  EXPECT_EQ(back->info.tiling, d.info.tiling);
  EXPECT_EQ(back->info.program_checksum, d.info.program_checksum);
  EXPECT_EQ(back->info.instruction_count, d.info.instruction_count);
  EXPECT_EQ(d.info.key().file_name(), "emu_1024x2048_m32.elf");
}

TEST(DesignElf, RejectsBadHeaders) {
  const std::vector<uint8_t> good = write_design_elf(must_build(64, 48, 4));
  auto with = [&](size_t offset, uint8_t value) {
    std::vector<uint8_t> b = good;
    b[offset] = value;
    return reject_reason(b);
  };
  EXPECT_TRUE(contains(with(0, 0x7e), "bad magic"));
  EXPECT_TRUE(contains(with(4, 1), "not ELF64"));
  EXPECT_TRUE(contains(with(5, 2), "not little-endian"));
  EXPECT_TRUE(contains(with(16, 1), "not ET_EXEC"));
  std::vector<uint8_t> x86 = good;
  x86[18] = 0x3e;
  x86[19] = 0;
  EXPECT_TRUE(contains(reject_reason(x86), "e_machine 62 is not the onebit array"));  // an x86-64 file
  EXPECT_TRUE(contains(with(48, 9), "e_flags"));
  EXPECT_TRUE(contains(with(60, 5), "sections"));
  EXPECT_TRUE(contains(with(40, 0xff), "section header table out of bounds"));
  EXPECT_TRUE(contains(reject_reason({}), "shorter than an ELF64 header"));
}

// Offsets within the note's descriptor (after the 12-byte note header and 8-byte name).
size_t note_desc_offset(const std::vector<uint8_t>& elf) {
  const std::string owner(kNoteOwner);
  for (size_t i = 0; i + owner.size() < elf.size(); ++i)
    if (std::equal(owner.begin(), owner.end(), elf.begin() + static_cast<std::ptrdiff_t>(i))) return i + 8;
  return 0;
}

TEST(DesignElf, RejectsBadNotesAndPrograms) {
  const Design d = must_build(64, 48, 4);
  const std::vector<uint8_t> good = write_design_elf(d);
  const size_t desc = note_desc_offset(good);
  ASSERT_GT(desc, 0u);
  auto with = [&](size_t offset, uint8_t value) {
    std::vector<uint8_t> b = good;
    b[offset] = value;
    return reject_reason(b);
  };
  EXPECT_TRUE(contains(with(desc + 0, 2), "format version 2"));
  EXPECT_TRUE(contains(with(desc + 4, 7), "unknown target 7"));
  EXPECT_TRUE(contains(with(desc + 8, 65), "tile counts do not match"));  // K 65 needs a second 64-deep tile
  EXPECT_TRUE(contains(with(desc + 20, 7), "tiling"));
  EXPECT_TRUE(contains(with(desc + 36, 2), "weight layout"));
  EXPECT_TRUE(contains(with(desc + 44, 1), "reserved"));
  EXPECT_TRUE(contains(with(desc + 48, static_cast<uint8_t>(good[desc + 48] ^ 1)), "checksum mismatch"));
  EXPECT_TRUE(contains(with(desc + 56, 'x'), "target name"));
  EXPECT_TRUE(contains(with(desc - 8, 'O'), "owner"));
  // One bit of the program.
  const size_t program =
      static_cast<size_t>(std::search(good.begin(), good.end(), d.program.begin(), d.program.end()) - good.begin());
  ASSERT_LT(program, good.size());
  std::vector<uint8_t> b = good;
  b[program + 8] ^= 0x01;
  EXPECT_TRUE(contains(reject_reason(b), "checksum mismatch")) << reject_reason(b);
}

TEST(DesignElf, RejectsEveryTruncation) {
  const std::vector<uint8_t> good = write_design_elf(must_build(200, 130, 32));
  for (size_t len = 0; len < good.size(); ++len) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    ASSERT_NE(reject_reason(cut), "accepted") << "truncated to " << len;
  }
  // The section header table sits at the end, so the usual report is about it or a section.
  const std::vector<uint8_t> cut(good.begin(), good.end() - 1);
  EXPECT_TRUE(contains(reject_reason(cut), "out of bounds")) << reject_reason(cut);
}

TEST(DesignElf, RejectsMismatchedShapes) {
  const Design d = must_build(1024, 2048, 32);
  EXPECT_TRUE(check_design_matches(d.info, {Target::kEmu, 1024, 2048, 32}));
  Status s = check_design_matches(d.info, {Target::kEmu, 1024, 1024, 32});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.reason(), "design declares emu 1024x2048 m32, wanted emu 1024x1024 m32");
  EXPECT_FALSE(check_design_matches(d.info, {Target::kEmu, 1024, 2048, 4}));
  EXPECT_FALSE(check_design_matches(d.info, {Target::kEmu, 2048, 2048, 32}));
}

TEST(DesignElf, LoadFileRejectsMissingEmptyCorruptAndMismatchedFiles) {
  TempDir dir;
  const DesignKey key{Target::kEmu, 96, 40, 4};
  const std::string path = dir.file(key.file_name());

  Result<Design> r = load_design_file(path, key);
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.error().reason, "cannot open")) << r.error().reason;

  write_file(path, {});
  r = load_design_file(path, key);
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.error().reason, path + ": file is 0 bytes")) << r.error().reason;

  write_file(path, std::vector<uint8_t>(5000, 0xab));
  r = load_design_file(path, key);
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.error().reason, "bad magic"));

  // A valid design under the wrong name: the declared shape decides.
  write_file(path, write_design_elf(must_build(96, 48, 4)));
  r = load_design_file(path, key);
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.error().reason, "declares emu 96x48 m4, wanted emu 96x40 m4")) << r.error().reason;

  write_file(path, write_design_elf(must_build(96, 40, 4)));
  r = load_design_file(path, key);
  ASSERT_TRUE(r) << r.error().reason;

  r = load_design_file(dir.path(), key);  // a directory
  EXPECT_FALSE(r);
}

// A few thousand random byte flips and truncations of a valid design: each is rejected with a
// reason, or accepted and then computes exactly the right result on the emu device.
TEST(DesignElf, FuzzedDesignsAreRejectedOrValid) {
  const uint32_t K = 40, N = 24, rows = 3;
  const Design design = must_build(K, N, 4);
  const std::vector<uint8_t> good = write_design_elf(design);
  std::mt19937 rng(20240917);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(rows) * K);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, rows, K, N);

  TempDir dir;
  EmuDeviceOptions options;
  options.lock_path = dir.file("lock");
  auto device = open_emu_device(options);
  ASSERT_TRUE(device);

  int accepted = 0, rejected = 0;
  std::uniform_int_distribution<size_t> pos(0, good.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> b = good;
    const int kind = iter % 4;
    if (kind == 3) {
      b.resize(pos(rng));
    } else {
      const int flips = 1 + kind * 2;  // 1, 3 or 5 bytes
      for (int f = 0; f < flips; ++f) {
        const size_t at = pos(rng);
        b[at] = iter % 2 ? static_cast<uint8_t>(b[at] ^ (1u << (byte(rng) % 8))) : static_cast<uint8_t>(byte(rng));
      }
    }
    Result<Design> parsed = parse_design_elf(b);
    if (!parsed) {
      ASSERT_FALSE(parsed.error().reason.empty());
      ++rejected;
      continue;
    }
    if (!check_design_matches(parsed->info, design.info.key())) {
      ++rejected;
      continue;
    }
    ++accepted;
    // Accepted: it must be the same design, and run right.
    ASSERT_EQ(parsed->program, design.program) << "iteration " << iter;
    auto gemm = DeviceGemm::create_from_designs(**device, {*parsed}, w.data(), WeightLayout::kKN);
    ASSERT_TRUE(gemm) << gemm.error().reason;
    std::vector<int32_t> c(size_t(rows) * N);
    ASSERT_TRUE((*gemm)->run(a.data(), rows, c.data()));
    for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], ref[i]);
  }
  std::printf("fuzz: %d mutants rejected, %d accepted (and computed exactly)\n", rejected, accepted);
  EXPECT_EQ(accepted + rejected, 4000);
  EXPECT_GT(rejected, 3000);
}

TEST(DesignElf, ReadelfListsADesignWithoutComplaint) {
  if (std::system("command -v readelf >/dev/null 2>&1") != 0) GTEST_SKIP() << "readelf not installed; skipping";
  TempDir dir;
  const std::string path = dir.file("emu_1024x2048_m32.elf");
  write_file(path, write_design_elf(must_build(1024, 2048, 32)));
  const std::string out_path = dir.file("readelf.out"), err_path = dir.file("readelf.err");
  const int rc = std::system(("readelf -a -W '" + path + "' >'" + out_path + "' 2>'" + err_path + "'").c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const std::string out = slurp(out_path), err = slurp(err_path);
  EXPECT_EQ(rc, 0) << err;
  EXPECT_EQ(err, "") << "readelf complained";
  EXPECT_FALSE(contains(out, "Warning")) << out;
  EXPECT_FALSE(contains(out, "Error")) << out;
  EXPECT_TRUE(contains(out, "ELF64")) << out;
  EXPECT_TRUE(contains(out, "EXEC")) << out;
  EXPECT_TRUE(contains(out, ".note.onebit")) << out;
  EXPECT_TRUE(contains(out, ".onebit.program")) << out;
  EXPECT_TRUE(contains(out, ".shstrtab")) << out;
  EXPECT_TRUE(contains(out, "NOTE")) << out;
  EXPECT_TRUE(contains(out, "LOAD")) << out;
  EXPECT_TRUE(contains(out, "onebit")) << out;  // the note's owner
}

}  // namespace
}  // namespace onebit::npu
