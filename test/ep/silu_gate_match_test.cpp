// SPDX-License-Identifier: Apache-2.0
// The SwiGLU gate matcher on graphs built in the test: the gate over two group outputs, in either
// operand order, and each form it leaves to ORT.
#include "ep/silu_gate_match.h"

#include <gtest/gtest.h>

#include <functional>

#include "test_graph.h"

namespace onebit::test {
namespace {

const Shape kRows = std::vector<int64_t>{kSymbolic, 8};

// gate, up (outputs of groups) -> Sigmoid -> Mul(gate, sig) -> Mul(silu, up) -> y
TestGraph swiglu() {
  TestGraph g;
  for (const char* v : {"gate", "up", "sig", "silu", "y"}) g.value(v, kF32, kRows);
  g.node("Sigmoid", "sigmoid", {"gate"}, {"sig"});
  g.node("Mul", "silu", {"gate", "sig"}, {"silu"});
  g.node("Mul", "gated", {"silu", "up"}, {"y"});
  g.output("y");
  return g;
}

// Whether anything matched (the matches point into an index gone on return).
std::vector<SiluGateMatch> match(const TestGraph& g, std::vector<std::string> outputs = {"gate", "up"}) {
  return match_silu_gates(GraphIndex(g.description()), outputs);
}

TEST(SiluGateMatch, FindsTheGateInEitherOperandOrder) {
  for (bool swapped : {false, true}) {
    TestGraph g = swiglu();
    if (swapped) g.node("Mul", "silu", {"sig", "gate"}, {"silu"}).node("Mul", "gated", {"up", "silu"}, {"y"});
    const GraphIndex index(g.description());  // the match's nodes point into it
    const std::vector<SiluGateMatch> gates = match_silu_gates(index, {"up", "gate"});
    ASSERT_EQ(gates.size(), 1u) << swapped;
    EXPECT_EQ(gates[0].gate, "gate");
    EXPECT_EQ(gates[0].up, "up");
    EXPECT_EQ(gates[0].output, "y");
    ASSERT_EQ(gates[0].nodes.size(), 3u);
    EXPECT_EQ(gates[0].nodes[0]->name, "sigmoid");
    EXPECT_EQ(gates[0].nodes[1]->name, "silu");
    EXPECT_EQ(gates[0].nodes[2]->name, "gated");
  }
}

TEST(SiluGateMatch, LeavesEveryOtherFormToOrt) {
  const std::vector<std::pair<const char*, std::function<void(TestGraph&)>>> forms = {
      {"gate is a graph output", [](TestGraph& g) { g.output("gate"); }},
      {"sigmoid read elsewhere", [](TestGraph& g) { g.output("sig"); }},
      {"silu read elsewhere", [](TestGraph& g) { g.node("Relu", "other", {"silu"}, {"z"}); }},
      {"up read elsewhere", [](TestGraph& g) { g.node("Relu", "other", {"up"}, {"z"}); }},
      {"gate read by a third node", [](TestGraph& g) { g.node("Relu", "other", {"gate"}, {"z"}); }},
      {"float16", [](TestGraph& g) { g.value("up", kF16, kRows); }},
      {"an ambiguous name", [](TestGraph& g) { g.ambiguous("sig"); }},
      {"gate times its own silu", [](TestGraph& g) { g.node("Mul", "gated", {"silu", "gate"}, {"y"}); }},
      {"a Tanh for the Sigmoid", [](TestGraph& g) { g.node("Tanh", "sigmoid", {"gate"}, {"sig"}); }},
      {"a Sigmoid of another domain",
       [](TestGraph& g) { g.node("Sigmoid", "sigmoid", {"gate"}, {"sig"}, {}, {}, "com.example"); }},
      {"an Add for the product", [](TestGraph& g) { g.node("Add", "gated", {"silu", "up"}, {"y"}); }},
  };
  for (const auto& [form, change] : forms) {
    TestGraph g = swiglu();
    change(g);
    EXPECT_TRUE(match(g).empty()) << form;
  }
  EXPECT_TRUE(match(swiglu(), {"gate"}).empty()) << "up is not a group's output";
  EXPECT_TRUE(match(swiglu(), {"up"}).empty()) << "gate is not a group's output";
}

}  // namespace
}  // namespace onebit::test
