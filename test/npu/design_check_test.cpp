// SPDX-License-Identifier: Apache-2.0
// A design that passes every load check but computes something else is rejected by its check
// run: the mutation adversarial testing found (the accumulator reset moved inside the depth loop,
// checksum recomputed) gives wrong sums once K spans two depth tiles.
#include "npu/design_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "base/checksum.h"
#include "npu/device_gemm.h"
#include "npu/emu/design_cache.h"
#include "npu/emu/design_elf.h"
#include "npu/emu/design_program.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::EmuDeviceFixture;
using onebit_npu_test::must_build;

// The generator's program with ZERO_ACC moved from before the depth loop to inside it.
Design reset_inside_depth_loop(Design design) {
  Result<std::vector<Instruction>> program = decode_program(design.program, design.info);
  EXPECT_TRUE(program);
  auto zero =
      std::find_if(program->begin(), program->end(), [](const Instruction& i) { return i.op == Opcode::kZeroAcc; });
  EXPECT_TRUE(zero != program->end() && std::next(zero)->op == Opcode::kLoop);
  std::iter_swap(zero, std::next(zero));
  design.program = encode_program(*program);
  design.info.program_checksum = fnv1a64(design.program.data(), design.program.size());
  return design;
}

using DesignCheck = EmuDeviceFixture;

TEST_F(DesignCheck, AccumulatorResetInsideTheDepthLoopIsRejected) {
  const uint32_t K = 512, N = 40;  // k_tile 256: two depth tiles
  for (uint32_t m_block : {32u, 4u}) {
    const Design bad = reset_inside_depth_loop(must_build(K, N, m_block));
    // Every load check passes: structure, checksum, the ELF round trip.
    ASSERT_TRUE(decode_program(bad.program, bad.info));
    ASSERT_TRUE(parse_design_elf(write_design_elf(bad)));
    std::mt19937 rng(3);
    const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
    GemmOptions options;
    options.block_sizes = {m_block};
    Result<std::unique_ptr<DeviceGemm>> gemm =
        DeviceGemm::create_from_designs(*device_, {bad}, w.data(), WeightLayout::kKN, options);
    ASSERT_FALSE(gemm) << "m_block " << m_block;
    EXPECT_EQ(gemm.error().code, ErrorCode::kDesign);
    EXPECT_NE(gemm.error().reason.find("design emu 512x40 m" + std::to_string(m_block) + " computes C["),
              std::string::npos)
        << gemm.error().reason;
  }
}

TEST_F(DesignCheck, FromTheCacheTheWrongDesignFailsAndTheRightOneRuns) {
  const uint32_t K = 300, N = 24;
  const DesignCache cache(tmp_.file("designs"));
  ASSERT_TRUE(cache.get({Target::kEmu, K, N, 4}));  // builds and writes the file
  const std::string path = cache.path_of({Target::kEmu, K, N, 4});
  const Design bad = reset_inside_depth_loop(must_build(K, N, 4));
  const std::vector<uint8_t> bytes = write_design_elf(bad);
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);

  std::mt19937 rng(4);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
  GemmOptions options;
  options.block_sizes = {4};
  Result<std::unique_ptr<DeviceGemm>> gemm =
      DeviceGemm::create(*device_, cache, K, N, w.data(), WeightLayout::kKN, options);
  ASSERT_FALSE(gemm);
  EXPECT_EQ(gemm.error().code, ErrorCode::kDesign) << gemm.error().reason;

  std::remove(path.c_str());  // rebuilt on the next get: the right design passes and computes exactly
  gemm = DeviceGemm::create(*device_, cache, K, N, w.data(), WeightLayout::kKN, options);
  ASSERT_TRUE(gemm) << gemm.error().reason;
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(5) * K);
  std::vector<int32_t> c(size_t(5) * N);
  ASSERT_TRUE((*gemm)->run(a.data(), 5, c.data()));
  const std::vector<int64_t> want = onebit_npu_test::reference_gemm(a, w, 5, K, N);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], want[i]) << i;
}

// One random edit of a program, at the instruction level as a faulty generator would make it:
// swap two neighbours, duplicate or delete one, change its opcode, a register or the immediate.
std::vector<Instruction> mutate(std::vector<Instruction> p, std::mt19937& rng) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const size_t at = pick(p.size());
  switch (pick(6)) {
    case 0:
      if (at + 1 < p.size()) std::swap(p[at], p[at + 1]);
      break;
    case 1:
      p.insert(p.begin() + static_cast<std::ptrdiff_t>(at), p[at]);
      break;
    case 2:
      p.erase(p.begin() + static_cast<std::ptrdiff_t>(at));
      break;
    case 3: {
      static constexpr Opcode kOps[] = {Opcode::kLoop,  Opcode::kEndLoop, Opcode::kZeroAcc, Opcode::kLoadA,
                                        Opcode::kLoadW, Opcode::kMac,     Opcode::kStoreC,  Opcode::kHalt};
      p[at].op = kOps[pick(std::size(kOps))];
      break;
    }
    case 4:
      (pick(2) ? p[at].r0 : p[at].r1) = static_cast<uint8_t>(pick(3));
      break;
    default:
      p[at].imm = static_cast<uint32_t>(pick(4));
      break;
  }
  return p;
}

// The bounded fuzz run of the loader and the check: instruction-level mutations of the program
// with the instruction count and checksum fixed up (so only structure and behaviour can catch
// them). Each mutant is rejected by the loader, rejected by its check run, or accepted and exact.
TEST_F(DesignCheck, ChecksumFixedProgramMutantsAreRejectedOrExact) {
  const uint32_t K = 300, N = 70, rows = 4;  // two depth tiles, two column tiles
  const Design design = must_build(K, N, rows);
  const std::vector<Instruction> program = *decode_program(design.program, design.info);
  std::mt19937 rng(20261202);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, size_t(K) * N);
  const std::vector<int8_t> a = onebit_npu_test::random_int8(rng, size_t(rows) * K);
  const std::vector<int64_t> ref = onebit_npu_test::reference_gemm(a, w, rows, K, N);
  GemmOptions options;
  options.block_sizes = {rows};
  constexpr int kMutants = 1500;
  int loader_rejected = 0, check_rejected = 0, exact = 0;
  for (int iter = 0; iter < kMutants; ++iter) {
    std::vector<Instruction> edited = mutate(program, rng);
    if (iter % 2) edited = mutate(edited, rng);
    Design mutant = design;
    mutant.program = encode_program(edited);
    mutant.info.instruction_count = static_cast<uint32_t>(edited.size());
    mutant.info.program_checksum = fnv1a64(mutant.program.data(), mutant.program.size());
    Result<Design> loaded = parse_design_elf(write_design_elf(mutant));
    if (!loaded) {
      ++loader_rejected;
      continue;
    }
    Result<std::unique_ptr<DeviceGemm>> gemm =
        DeviceGemm::create_from_designs(*device_, {*loaded}, w.data(), WeightLayout::kKN, options);
    if (!gemm) {
      ASSERT_EQ(gemm.error().code, ErrorCode::kDesign) << gemm.error().reason;
      ++check_rejected;
      continue;
    }
    std::vector<int32_t> c(size_t(rows) * N);
    ASSERT_TRUE((*gemm)->run(a.data(), rows, c.data()));
    for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], ref[i]) << "iteration " << iter << " element " << i;
    ++exact;
  }
  std::printf("design fuzz: %d rejected by the loader, %d by the check run, %d accepted and exact\n", loader_rejected,
              check_rejected, exact);
  EXPECT_EQ(loader_rejected + check_rejected + exact, kMutants);
  EXPECT_GT(check_rejected, 0);  // well-formed but wrong programs occur, and the check catches them
}

}  // namespace
}  // namespace onebit::npu
