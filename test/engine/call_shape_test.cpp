// SPDX-License-Identifier: Apache-2.0
// call_shape: how a call's activation (and a per-call B) map onto a group, and the caller's
// mistakes it refuses with a message naming the group, the operand and why.
#include "engine/call_shape.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/invalid_call.h"

namespace onebit {
namespace {

using Dims = std::vector<int64_t>;

FusedGroup group(int64_t K, int64_t N, Dims b_batch = {}) {
  FusedGroup g;
  g.name = "MatMul 'proj'";
  g.K = K;
  g.N = N;
  g.b_batch = std::move(b_batch);
  return g;
}

// The message of the InvalidCall that call_shape throws ("" if it throws none).
std::string refusal(const FusedGroup& g, const Dims& x, const Dims* b = nullptr) {
  try {
    (void)call_shape(g, x, b);
  } catch (const InvalidCall& e) {
    return e.what();
  }
  return "";
}

TEST(CallShape, ATwoDimensionalWeightTakesEveryLeadingDimAsRows) {
  const CallShape s = call_shape(group(64, 24), {2, 3, 64}, nullptr);
  EXPECT_EQ(s.M, 6);
  EXPECT_EQ(s.y_dims, (Dims{2, 3, 24}));
  EXPECT_EQ(s.batches.x_entry, (std::vector<size_t>{0}));
  EXPECT_FALSE(s.empty());
  EXPECT_TRUE(call_shape(group(64, 24), {0, 64}, nullptr).empty());
}

TEST(CallShape, ABatchedWeightBroadcastsAgainstTheActivation) {
  const CallShape s = call_shape(group(8, 5, {3}), {1, 4, 8}, nullptr);
  EXPECT_EQ(s.M, 4);
  EXPECT_EQ(s.y_dims, (Dims{3, 4, 5}));
  EXPECT_EQ(s.batches.x_entry, (std::vector<size_t>{0, 0, 0}));
  EXPECT_EQ(s.batches.b_entry, (std::vector<size_t>{0, 1, 2}));
}

TEST(CallShape, AnActivationThatDoesNotFitIsRefusedByName) {
  EXPECT_EQ(refusal(group(64, 24), {2, 63}),
            "onebit: MatMul 'proj': activation of shape [2,63] int8 does not match the weight's K=64");
  EXPECT_EQ(refusal(group(64, 24), {64}),
            "onebit: MatMul 'proj': activation of shape [64] int8 has an unsupported rank");
  EXPECT_EQ(
      refusal(group(8, 5, {3}), {2, 4, 8}),
      "onebit: MatMul 'proj': activation of shape [2,4,8] int8 does not broadcast with the weight's batch dims [3]");
  FusedGroup quantizing = group(64, 24);
  quantizing.x_source = ActivationSource::DynamicQuantizeLinear;
  EXPECT_EQ(refusal(quantizing, {1, 2, 3, 4, 64}),
            "onebit: MatMul 'proj': activation of shape [1,2,3,4,64] float has an unsupported rank");
}

TEST(CallShape, APerCallBGivesTheCallsKAndNAndMustFitTheBias) {
  FusedGroup g = group(-1, -1, {-1});
  g.b_per_call = true;
  g.b_name = "scores";
  g.b_type = QType::Uint8;
  const Dims b{2, 16, 7};
  const CallShape s = call_shape(g, {2, 3, 16}, &b);
  EXPECT_EQ(s.K, 16);
  EXPECT_EQ(s.N, 7);
  EXPECT_EQ(s.y_dims, (Dims{2, 3, 7}));
  g.epilogue.bias = {0.0, 0.0, 0.0};
  EXPECT_EQ(refusal(g, {2, 3, 16}, &b),
            "onebit: MatMul 'proj': B 'scores' of shape [2,16,7] uint8 has N=7 but the bias has 3 values");
  const Dims flat{16};
  EXPECT_EQ(refusal(g, {2, 3, 16}, &flat),
            "onebit: MatMul 'proj': B 'scores' of shape [16] uint8 has an unsupported rank");
  const Dims huge{kMaxK + 1, 7};
  EXPECT_NE(refusal(g, {3, kMaxK + 1}, &huge).find("has K > 33025"), std::string::npos);
}

}  // namespace
}  // namespace onebit
