// SPDX-License-Identifier: Apache-2.0
// Activation × activation calls: B packed per call (each batch entry) through run_group equals a
// plain reference loop; the per-call scales' epilogue; the ONEBIT_ACTIVATION_MATMULS override.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/activation_matmul_policy.h"
#include "engine/activation_scale.h"
#include "engine/group_run.h"

namespace onebit {
namespace {

constexpr int64_t K = 21, N = 19;  // past a k quad and a column block, neither a multiple
constexpr size_t kEntries = 3;

TEST(CallOperand, EachEntryMatchesAReferenceLoop) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> b(kEntries * K * N);  // uint8 B with a zero point: the shifted fold
  for (auto& v : b) v = static_cast<uint8_t>(byte(rng));
  FusedGroup g;  // B [3, K, N] per call, activations [3, M, K]
  g.name = "test group";
  g.x_zero_point = -5;
  g.b_per_call = true;
  g.b_name = "b";
  g.b_type = QType::Uint8;
  g.b_zero_point = 200;
  g.K = K;
  g.N = N;
  g.b_batch = {int64_t(kEntries)};
  g.epilogue.kind = OutputKind::Int32;
  RoutePolicy policy;
  const CallResources host{nullptr, &policy, {}};
  const std::vector<int64_t> b_dims{int64_t(kEntries), K, N};
  for (int64_t M : {1, 7}) {
    std::vector<int8_t> x(static_cast<size_t>(kEntries * M * K));
    for (auto& v : x) v = static_cast<int8_t>(byte(rng) - 128);
    const CallShape shape = call_shape(g, {int64_t(kEntries), M, K}, &b_dims);
    EXPECT_EQ(shape.y_dims, (std::vector<int64_t>{int64_t(kEntries), M, N}));
    std::vector<int32_t> y(kEntries * M * N);
    CallInputs in;
    in.x = x.data();
    in.b = b.data();
    const std::vector<CallResult> calls = run_group(g, host, shape, in, {y.data()});
    ASSERT_EQ(calls.size(), kEntries);
    for (size_t e = 0; e < kEntries; ++e) {
      EXPECT_EQ(calls[e].reason, RouteReason::NoDevice);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          int64_t sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += (x[(e * M + m) * K + k] - g.x_zero_point) * (int32_t(b[e * K * N + k * N + n]) - g.b_zero_point);
          ASSERT_EQ(y[(e * M + m) * N + n], sum) << "entry " << e << " row " << m << " column " << n;
        }
    }
  }
}

TEST(CallOperand, BothScalesPerCallGiveTheirFloat32Product) {
  Epilogue base;
  base.bias = {0.5};
  const float sx = 0.1f, sw = 0.3f;
  Epilogue e;
  epilogue_for_scales(base, sx, {&sw, 1}, e);
  ASSERT_EQ(e.scale.size(), 1u);
  EXPECT_EQ(e.scale[0], double(float(sx * sw)));  // float32, as the model's Mul computes it
  EXPECT_EQ(e.bias, base.bias);
}

TEST(ActivationMatmulPolicy, MeasuredRuleClaimsLargeDeclaredShapesOnly) {
  const auto measured = ActivationMatmuls::Measured;
  EXPECT_EQ(activation_matmul_decline(measured, 512, 512, 64, false), "");  // PV at S = 512, D = 64
  EXPECT_EQ(activation_matmul_decline(measured, 4096, 768, 1, false), "");
  EXPECT_NE(activation_matmul_decline(measured, 511, 512, 64, false).find("M=511 K=512 N=64"), std::string::npos);
  EXPECT_NE(activation_matmul_decline(measured, 512, 64, 512, false), "");   // QKᵀ: K = D
  EXPECT_NE(activation_matmul_decline(measured, 512, 512, 128, false), "");  // level, not faster
  EXPECT_NE(activation_matmul_decline(measured, -1, 1024, 64, false), "");   // a symbolic sequence length
  EXPECT_NE(activation_matmul_decline(measured, 512, 512, -1, false), "");
  EXPECT_NE(activation_matmul_decline(measured, 1, 1024, 64, false), "");  // one query row (decode)
  EXPECT_EQ(activation_matmul_decline(ActivationMatmuls::All, -1, 8, -1, false), "");
}

TEST(ActivationMatmulPolicy, GroupsOrtGetsWrongAreClaimedWhateverTheirShape) {
  // Without VNNI ORT saturates uint8 x int8, and int8 x int8 QDQ once it shifts A to uint8; a
  // uint8 B is exact there.
  EXPECT_TRUE(ort_saturates(QType::Int8, false));
  EXPECT_FALSE(ort_saturates(QType::Int8, true));
  EXPECT_FALSE(ort_saturates(QType::Uint8, false));
  const auto measured = ActivationMatmuls::Measured;
  EXPECT_EQ(activation_matmul_decline(measured, -1, 8, -1, true), "");
  EXPECT_EQ(activation_matmul_decline(measured, 1, 64, 512, true), "");
  EXPECT_EQ(activation_matmul_decline(measured, 1, kMaxK, 512, true), "");
  EXPECT_NE(activation_matmul_decline(measured, -1, 8, -1, false), "");
  // A K not declared, or past the exact bound, could fail at run time: declined.
  EXPECT_NE(activation_matmul_decline(measured, 1, -1, 64, true), "");
  EXPECT_NE(activation_matmul_decline(measured, 1, kMaxK + 1, 64, true), "");
}

TEST(ActivationMatmulPolicy, TheOverrideComesFromTheEnvironment) {
  unsetenv("ONEBIT_ACTIVATION_MATMULS");
  EXPECT_EQ(activation_matmuls_from_env(), ActivationMatmuls::Measured);
  setenv("ONEBIT_ACTIVATION_MATMULS", "all", 1);
  EXPECT_EQ(activation_matmuls_from_env(), ActivationMatmuls::All);
  setenv("ONEBIT_ACTIVATION_MATMULS", "measured", 1);
  EXPECT_EQ(activation_matmuls_from_env(), ActivationMatmuls::Measured);
  setenv("ONEBIT_ACTIVATION_MATMULS", "yes", 1);
  EXPECT_THROW(activation_matmuls_from_env(), std::invalid_argument);
  unsetenv("ONEBIT_ACTIVATION_MATMULS");
}

}  // namespace
}  // namespace onebit
