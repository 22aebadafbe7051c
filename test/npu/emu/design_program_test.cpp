// SPDX-License-Identifier: Apache-2.0
// The design instruction set: what the generator emits, what the validator rejects, and that
// the emulator really executes the program (changing it changes the result).
#include "npu/emu/design_program.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "base/checksum.h"
#include "npu/emu/design_builder.h"
#include "npu/emu/emu_device.h"
#include "npu/weight_layout.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::must_build;
using onebit_npu_test::TempDir;

using P = std::vector<Instruction>;
const Instruction kHalt{Opcode::kHalt, 0, 0, 0};

// A design of shape 100x70 (k_tiles 1, n_tiles 2 with the generator's tiling) carrying `program`.
Design with_program(const P& program, uint32_t K = 100, uint32_t N = 70, uint32_t m_block = 4) {
  Design d = must_build(K, N, m_block);
  d.program = encode_program(program);
  d.info.instruction_count = static_cast<uint32_t>(program.size());
  d.info.program_checksum = fnv1a64(d.program.data(), d.program.size());
  return d;
}

std::string decode_error(const P& program, uint32_t K = 100, uint32_t N = 70) {
  const Design d = with_program(program, K, N);
  Result<std::vector<Instruction>> r = decode_program(d.program, d.info);
  return r ? std::string("accepted") : r.error().reason;
}

// The generator's program shape, with the tile counts of `info`.
P standard(const DesignInfo& info) {
  return {{Opcode::kLoop, 0, 0, info.n_tiles}, {Opcode::kZeroAcc, 0, 0, 0},
          {Opcode::kLoop, 1, 0, info.k_tiles}, {Opcode::kLoadA, 1, 0, 0},
          {Opcode::kLoadW, 0, 1, 0},           {Opcode::kMac, 0, 0, 0},
          {Opcode::kEndLoop, 0, 0, 0},         {Opcode::kStoreC, 0, 0, 0},
          {Opcode::kEndLoop, 0, 0, 0},         kHalt};
}

TEST(DesignProgram, GeneratorEmitsTheTileLoops) {
  const Design d = must_build(1024, 2048, 32);
  EXPECT_EQ(d.info.tiling, (Tiling{256, 64}));
  EXPECT_EQ(d.info.k_tiles, 4u);
  EXPECT_EQ(d.info.n_tiles, 32u);
  Result<P> program = decode_program(d.program, d.info);
  ASSERT_TRUE(program) << program.error().reason;
  EXPECT_EQ(*program, standard(d.info));
  EXPECT_EQ(disassemble(*program),
            "LOOP r0, 32\n  ZERO_ACC\n  LOOP r1, 4\n    LOAD_A r1\n    LOAD_W r0, r1\n    MAC\n  END_LOOP\n"
            "  STORE_C r0\nEND_LOOP\nHALT\n");
}

TEST(DesignProgram, EncodingRoundTrips) {
  const P p = {{Opcode::kLoop, 3, 0, 0x01020304u}, {Opcode::kLoadW, 2, 1, 0}, kHalt};
  const std::vector<uint8_t> bytes = encode_program(p);
  ASSERT_EQ(bytes.size(), 24u);
  EXPECT_EQ(bytes[0], 0x01);
  EXPECT_EQ(bytes[1], 3);
  EXPECT_EQ(bytes[4], 0x04);
  EXPECT_EQ(bytes[7], 0x01);
}

TEST(DesignProgram, ValidatorRejectsMalformedPrograms) {
  const DesignInfo info = must_build(100, 70, 4).info;  // k_tiles 1, n_tiles 2
  ASSERT_EQ(info.k_tiles, 1u);
  ASSERT_EQ(info.n_tiles, 2u);
  EXPECT_EQ(decode_error(standard(info)), "accepted");

  P p = standard(info);
  p.pop_back();
  EXPECT_NE(decode_error(p).find("does not end with HALT"), std::string::npos);

  p = standard(info);
  p.insert(p.begin(), kHalt);
  EXPECT_NE(decode_error(p).find("HALT before the end"), std::string::npos);

  p = standard(info);
  p.erase(p.begin() + 6);  // inner END_LOOP
  EXPECT_NE(decode_error(p).find("open LOOP"), std::string::npos);

  p = standard(info);
  p.insert(p.begin(), Instruction{Opcode::kEndLoop, 0, 0, 0});
  EXPECT_NE(decode_error(p).find("END_LOOP without LOOP"), std::string::npos);

  p = standard(info);
  p[3].r0 = 2;  // LOAD_A on an unbound register
  EXPECT_NE(decode_error(p).find("not bound"), std::string::npos);

  p = standard(info);
  p[3].r0 = 0;  // LOAD_A indexed by the column loop (2 trips, 1 depth tile)
  EXPECT_NE(decode_error(p).find("LOAD_A depth register r0 loops 2 times"), std::string::npos);

  p = standard(info);
  p[4] = {Opcode::kLoadW, 1, 0, 0};  // column and depth swapped
  EXPECT_NE(decode_error(p).find("LOAD_W column"), std::string::npos);

  p = standard(info);
  p[2].r0 = 0;  // inner loop re-binds r0
  EXPECT_NE(decode_error(p).find("already bound"), std::string::npos);

  p = standard(info);
  p[2].imm = 0;
  EXPECT_NE(decode_error(p).find("count is zero"), std::string::npos);

  p = standard(info);
  p.insert(p.begin() + 1, Instruction{Opcode::kLoop, 3, 0, 1000});  // runaway: 2 × 1000 > 2 tiles
  p.insert(p.begin() + 2, Instruction{Opcode::kEndLoop, 0, 0, 0});
  EXPECT_NE(decode_error(p).find("trip count"), std::string::npos);

  p = standard(info);
  p[5] = {Opcode::kZeroAcc, 0, 0, 0};  // no MAC
  EXPECT_NE(decode_error(p).find("no MAC"), std::string::npos);

  p = standard(info);
  p[5].imm = 7;  // immediate on MAC
  EXPECT_NE(decode_error(p).find("takes no immediate"), std::string::npos);

  p = standard(info);
  p[4].r1 = 9;
  EXPECT_NE(decode_error(p).find("register out of range"), std::string::npos);

  p = standard(info);
  p[1].r0 = 1;  // operand on ZERO_ACC
  EXPECT_NE(decode_error(p).find("takes no r0"), std::string::npos);
}

TEST(DesignProgram, ValidatorRejectsBadBytes) {
  Design d = must_build(100, 70, 4);
  std::vector<uint8_t> bytes = d.program;
  bytes[3] = 1;  // reserved
  EXPECT_FALSE(decode_program(bytes, d.info));
  bytes = d.program;
  bytes[8] = 0x42;  // unknown opcode
  Result<P> r = decode_program(bytes, d.info);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().reason.find("unknown opcode 66"), std::string::npos);
  bytes = d.program;
  bytes.pop_back();
  EXPECT_FALSE(decode_program(bytes, d.info));
  EXPECT_FALSE(decode_program({}, d.info));
  d.info.instruction_count += 1;
  r = decode_program(d.program, d.info);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().reason.find("the note declares"), std::string::npos);
}

// Runs `design` once on the emu device over A (rows = m_block rows × K) and returns C. Straight
// through the Device interface: DeviceGemm would reject the deliberately wrong programs below
// (design_check.h), and here the emulator's execution of them is what is tested.
std::vector<int32_t> run_design(const Design& design, const std::vector<int8_t>& a, const std::vector<int8_t>& w,
                                uint32_t rows) {
  TempDir dir;
  EmuDeviceOptions options;
  options.lock_path = dir.file("lock");
  auto device = open_emu_device(options);
  EXPECT_TRUE(device);
  const DesignInfo& info = design.info;
  EXPECT_EQ(rows, info.m_block);
  auto loaded = (*device)->load_design(design);
  EXPECT_TRUE(loaded) << loaded.error().reason;
  const std::vector<int8_t> packed = pack_weights_tiled(w.data(), WeightLayout::kKN, info.K, info.N, info.tiling);
  auto w_bo = (*device)->alloc_bo(packed.size());
  auto a_bo = (*device)->alloc_bo(a.size());
  auto c_bo = (*device)->alloc_bo(size_t(rows) * info.N * 4);
  std::memcpy((*w_bo)->host(), packed.data(), packed.size());
  std::memcpy((*a_bo)->host(), a.data(), a.size());
  EXPECT_TRUE((*device)->sync(**w_bo, SyncDirection::kToDevice, 0, packed.size()));
  EXPECT_TRUE((*device)->sync(**a_bo, SyncDirection::kToDevice, 0, a.size()));
  LaunchArgs args;
  args.design = loaded->get();
  args.a = a_bo->get();
  args.w = w_bo->get();
  args.c = c_bo->get();
  auto run = (*device)->launch(args);
  EXPECT_TRUE(run) << run.error().reason;
  Status s = (*device)->wait(*run, std::chrono::seconds(20));
  EXPECT_TRUE(s) << s.to_string();
  EXPECT_TRUE((*device)->sync(**c_bo, SyncDirection::kFromDevice, 0, (*c_bo)->size()));
  std::vector<int32_t> c(size_t(rows) * info.N);
  std::memcpy(c.data(), (*c_bo)->host(), c.size() * 4);
  return c;
}

TEST(DesignProgram, TheEmulatorExecutesTheProgram) {
  const uint32_t K = 300, N = 70, rows = 4;  // k_tiles 2, n_tiles 2
  std::mt19937 rng(7);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(rows) * K);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, rows, K, N);
  const Design base = must_build(K, N, rows);
  ASSERT_EQ(base.info.k_tiles, 2u);
  ASSERT_EQ(base.info.n_tiles, 2u);

  const std::vector<int32_t> c = run_design(base, a, w, rows);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], ref[i]) << i;

  // MAC twice: every result doubles.
  P twice = standard(base.info);
  twice.insert(twice.begin() + 5, Instruction{Opcode::kMac, 0, 0, 0});
  const std::vector<int32_t> c2 = run_design(with_program(twice, K, N, rows), a, w, rows);
  for (size_t i = 0; i < c2.size(); ++i) ASSERT_EQ(c2[i], 2 * ref[i]) << i;

  // No ZERO_ACC: the second column tile also carries the first tile's sums.
  P no_zero = standard(base.info);
  no_zero.erase(no_zero.begin() + 1);
  const std::vector<int32_t> c3 = run_design(with_program(no_zero, K, N, rows), a, w, rows);
  const uint32_t n_tile = base.info.tiling.n_tile;
  for (uint32_t m = 0; m < rows; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      const int64_t expect = n < n_tile ? ref[m * N + n] : ref[m * N + n] + ref[m * N + (n - n_tile)];
      ASSERT_EQ(c3[m * N + n], expect) << m << "," << n;
    }

  // ZERO_ACC and STORE_C inside the depth loop: each depth tile overwrites C, so C ends up
  // holding the last depth tile's partial sums only.
  const P last_depth_tile = {{Opcode::kLoop, 0, 0, 2},    {Opcode::kLoop, 1, 0, 2},
                             {Opcode::kZeroAcc, 0, 0, 0}, {Opcode::kLoadA, 1, 0, 0},
                             {Opcode::kLoadW, 0, 1, 0},   {Opcode::kMac, 0, 0, 0},
                             {Opcode::kStoreC, 0, 0, 0},  {Opcode::kEndLoop, 0, 0, 0},
                             {Opcode::kEndLoop, 0, 0, 0}, kHalt};
  const std::vector<int32_t> c4 = run_design(with_program(last_depth_tile, K, N, rows), a, w, rows);
  const uint32_t k_tile = base.info.tiling.k_tile;
  for (uint32_t m = 0; m < rows; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      int64_t partial = 0;
      for (uint32_t k = k_tile; k < K; ++k) partial += int64_t(a[m * K + k]) * w[size_t(k) * N + n];
      ASSERT_EQ(c4[m * N + n], partial) << m << "," << n;
    }
}

}  // namespace
}  // namespace onebit::npu
