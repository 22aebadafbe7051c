// SPDX-License-Identifier: Apache-2.0
// The fused float output of a VNNI kernel (gemm_q8_blocks' FusedFloatOutput) against the epilogue
// applied to the reference accumulators: shared by the kernel tests and the ymm template test.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/epilogue.h"
#include "kernels/gemm_q8_kernels.h"
#include "reference_gemm.h"
#include "test_operands.h"

namespace onebit_test {

// Operands as the tests draw them (values in their type's range, one weight zero point per column).
struct GemmCase {
  onebit::QType x_type, w_type;
  int64_t M, K, N;
  int32_t zx;
  std::vector<int32_t> x, w, zw;
};

// A kernel that fuses float outputs writes, for blocks [b0, b1), exactly what the epilogue in
// float32 steps gives from the reference accumulators (bit for bit), touches nothing else of y,
// and leaves acc alone; with `stream` (N a multiple of 16), through streaming stores.
inline void check_fused_float_output(onebit::GemmBlocksKernel kernel, onebit::KGroup group, const GemmCase& c,
                                     int64_t b0, int64_t b1, bool per_column, bool with_bias, bool stream = false) {
  std::mt19937 rng(static_cast<uint32_t>(c.M * 131 + c.N));
  std::uniform_real_distribution<float> value(-0.02f, 0.02f);
  onebit::Epilogue e;
  for (int64_t n = 0; n < (per_column ? c.N : 1); ++n) e.scale.push_back(value(rng));
  if (with_bias)
    for (int64_t n = 0; n < c.N; ++n) e.bias.push_back(value(rng) * 100);
  e.take_float32_steps();
  const auto x_bytes = encode(c.x, c.x_type);
  const auto w_bytes = encode(c.w, c.w_type);
  const onebit::PackedWeights packed =
      onebit::pack_weights(w_bytes.data(), c.w_type, c.K, c.N, false, c.zw.data(), c.N, group);
  const onebit::PreparedActivation prepared =
      onebit::prepare_activation({x_bytes.data(), c.x_type, c.zx, c.M}, c.K, group);
  std::vector<int32_t> acc(static_cast<size_t>(c.M * c.N), 0x5a5a5a5a);
  // y at a 64-byte boundary, as streaming stores need.
  std::vector<float> y_storage(static_cast<size_t>(c.M * c.N) + 16, -7.0f);
  float* y_data = y_storage.data() + (16 - reinterpret_cast<uintptr_t>(y_storage.data()) % 64 / sizeof(float)) % 16;
  onebit::FusedFloatOutput fused;
  ASSERT_TRUE(e.fused_float_output(y_data, fused));
  fused.stream = stream;
  kernel(prepared, packed, b0, b1, acc.data(), c.N, &fused);
  const std::vector<float> y(y_data, y_data + c.M * c.N);

  const std::vector<int64_t> want = reference_gemm(c.x, c.zx, c.w, c.zw, c.M, c.K, c.N);
  std::vector<int32_t> want32(want.begin(), want.end());
  std::vector<float> expected(y.size(), -7.0f);
  const int64_t n0 = b0 * onebit::kBlockN, n1 = std::min(b1 * onebit::kBlockN, c.N);
  e.apply_columns(want32.data(), c.M, c.N, n0, n1, expected.data());
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_EQ(acc[i], 0x5a5a5a5a) << "acc written at " << i;
    ASSERT_EQ(std::memcmp(&y[i], &expected[i], sizeof(float)), 0)
        << "M=" << c.M << " K=" << c.K << " N=" << c.N << " at " << i << ": " << y[i] << " vs " << expected[i]
        << (per_column ? " per column" : " per tensor") << (with_bias ? ", bias" : "") << (stream ? ", streamed" : "");
  }
}

}  // namespace onebit_test
