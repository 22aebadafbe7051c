// SPDX-License-Identifier: Apache-2.0
// The SkipSimplifiedLayerNormalization claim rules on graphs built in the test: the plain form and
// each reason a node is left to ORT, with its exact text.
#include "ep/skip_norm_match.h"

#include <gtest/gtest.h>

#include <functional>

#include "test_graph.h"

namespace onebit::test {
namespace {

const Shape kRows = std::vector<int64_t>{kSymbolic, 4};

// input + skip (+ bias) -> norm -> normed (read by a projection), sum
TestGraph norm() {
  TestGraph g;
  for (const char* v : {"input", "skip", "normed", "sum"}) g.value(v, kF32, kRows);
  g.constant("gamma", kF32, {4}, {1, 2, 3, 4}).constant("bias", kF32, {4}, {0, 0, 1, 1});
  g.node("SkipSimplifiedLayerNormalization", "norm", {"input", "skip", "gamma", "bias"}, {"normed", "", "", "sum"}, {},
         {{"epsilon", 1e-5f}}, "com.microsoft");
  g.value("y", kF32, kRows).node("Relu", "reader", {"normed"}, {"y"}).output("y").output("sum");
  return g;
}

std::string decline(const TestGraph& g) {
  const GraphIndex index(g.description());
  for (const NodeInfo& node : index.nodes())
    if (is_skip_norm(node)) return skip_norm_decline(index, node);
  return "no norm";
}

TEST(SkipNormMatch, ThePlainFormIsClaimed) {
  EXPECT_EQ(decline(norm()), "");
  TestGraph g = norm();
  g.set_input("norm", 3, "");
  EXPECT_EQ(decline(g), "") << "without a bias";
}

TEST(SkipNormMatch, EveryOtherFormSaysWhy) {
  const std::vector<std::tuple<const char*, std::function<void(TestGraph&)>, const char*>> forms = {
      {"another attribute", [](TestGraph& g) { g.int_attr("norm", "stash_type", 1); },
       "attribute stash_type is not computed by the EP"},
      {"a float attribute", [](TestGraph& g) { g.float_attr("norm", "alpha", 1); },
       "attribute alpha is not computed by the EP"},
      {"float16 input", [](TestGraph& g) { g.value("input", kF16, kRows); },
       "input and skip are not float32 values computed at run time"},
      {"a constant skip", [](TestGraph& g) { g.constant("skip", kF32, {4}, {1, 1, 1, 1}); },
       "input and skip are not float32 values computed at run time"},
      {"gamma computed", [](TestGraph& g) { g.value("gamma", kF32, std::vector<int64_t>{4}); },
       "gamma is not a constant float32 vector"},
      {"a short bias", [](TestGraph& g) { g.constant("bias", kF32, {3}, {0, 0, 1}); },
       "bias is not a constant float32 vector as long as gamma"},
      {"mean read", [](TestGraph& g) { g.set_output("norm", 1, "mean").value("mean", kF32, kRows).output("mean"); },
       "its mean or inv_std_var is read"},
      {"output a graph output", [](TestGraph& g) { g.output("normed"); },
       "its output is a graph output, or not float32"},
      {"an ambiguous name", [](TestGraph& g) { g.ambiguous("skip"); }, "'skip' names more than one value"},
      {"two inputs", [](TestGraph& g) { g.set_input("norm", 3, "").set_input("norm", 2, ""); },
       "gamma is not a constant float32 vector"},
  };
  for (const auto& [form, change, reason] : forms) {
    TestGraph g = norm();
    change(g);
    EXPECT_EQ(decline(g), reason) << form;
  }
}

}  // namespace
}  // namespace onebit::test
