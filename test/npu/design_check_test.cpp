// SPDX-License-Identifier: Apache-2.0
// A design that passes every load check but computes something else is rejected by its check
// run: the mutation adversarial testing found (the accumulator reset moved inside the depth loop,
// checksum recomputed) gives wrong sums once K spans two depth tiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "npu/checksum.h"
#include "npu/design_cache.h"
#include "npu/design_check.h"
#include "npu/design_elf.h"
#include "npu/design_program.h"
#include "npu/device_gemm.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::EmuDeviceFixture;
using onebit_npu_test::must_build;

// The generator's program with ZERO_ACC moved from before the depth loop to inside it.
Design reset_inside_depth_loop(Design design) {
  Result<std::vector<Instruction>> program = decode_program(design.program, design.info);
  EXPECT_TRUE(program);
  auto zero = std::find_if(program->begin(), program->end(), [](const Instruction& i) { return i.op == Opcode::kZeroAcc; });
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
    Result<std::unique_ptr<DeviceGemm>> gemm = DeviceGemm::create_from_designs(*device_, {bad}, w.data(), WeightLayout::kKN, options);
    ASSERT_FALSE(gemm) << "m_block " << m_block;
    EXPECT_EQ(gemm.error().code, ErrorCode::kDesign);
    EXPECT_NE(gemm.error().reason.find("design emu 512x40 m" + std::to_string(m_block) + " computes C["), std::string::npos)
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
  Result<std::unique_ptr<DeviceGemm>> gemm = DeviceGemm::create(*device_, cache, K, N, w.data(), WeightLayout::kKN, options);
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

}  // namespace
}  // namespace onebit::npu
