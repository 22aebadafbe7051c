// SPDX-License-Identifier: Apache-2.0
// The matcher and the plan reader on graphs built in the test: each row a small graph and the
// group anchored at one node, then either what the group's plan holds or the decline's exact text.
#include "ep/group_match.h"

#include <gtest/gtest.h>

#include <functional>

#include "ep/group_plan.h"
#include "test_graph.h"

namespace onebit::test {
namespace {

constexpr int64_t K = 4, N = 3;
const std::vector<int64_t> kRows{kSymbolic, K};                                   // an activation [M, K]
const std::vector<double> kWeights{1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12};  // K × N

// DQ(x_q) × DQ(w_q) -> y: int8 activation (scale 0.5, zero point 1), int8 weight (scale 0.25, zero point 2).
TestGraph qdq() {
  TestGraph g;
  g.value("x_q", kI8, kRows).constant("x_scale", kF32, {}, {0.5}).constant("x_zero_point", kI8, {}, {1});
  g.constant("w_q", kI8, {K, N}, kWeights).constant("b_scale", kF32, {}, {0.25}).constant("b_zero_point", kI8, {}, {2});
  g.value("x_f", kF32, kRows)
      .value("w_f", kF32, std::vector<int64_t>{K, N})
      .value("y", kF32, std::vector<int64_t>{kSymbolic, N});
  g.node("DequantizeLinear", "dq_x", {"x_q", "x_scale", "x_zero_point"}, {"x_f"});
  g.node("DequantizeLinear", "dq_w", {"w_q", "b_scale", "b_zero_point"}, {"w_f"});
  g.node("MatMul", "matmul", {"x_f", "w_f"}, {"y"});
  g.output("y");
  return g;
}

// The QDQ group with a Gemm anchor: W is [N, K] (transB=1) and C a float bias.
TestGraph gemm() {
  TestGraph g = qdq();
  g.constant("w_q", kI8, {N, K}, kWeights).constant("bias", kF32, {N}, {1.5, -2.5, 3.5});
  g.node("Gemm", "matmul", {"x_f", "w_f", "bias"}, {"y"}, {{"transB", 1}});
  return g;
}

// QDQ with a bias Add and an output QuantizeLinear to uint8 (scale 0.5, zero point 5).
TestGraph qdq_add_quantize() {
  TestGraph g = qdq();
  g.value("mm", kF32, std::vector<int64_t>{kSymbolic, N}).value("y_f", kF32, std::vector<int64_t>{kSymbolic, N});
  g.value("y", kU8, std::vector<int64_t>{kSymbolic, N});
  g.constant("bias", kF32, {N}, {0.5, 1.5, -2})
      .constant("y_scale", kF32, {}, {0.5})
      .constant("y_zero_point", kU8, {}, {5});
  g.node("MatMul", "matmul", {"x_f", "w_f"}, {"mm"}).node("Add", "add", {"mm", "bias"}, {"y_f"});
  g.node("QuantizeLinear", "q_y", {"y_f", "y_scale", "y_zero_point"}, {"y"});
  return g;
}

// QDQ whose activation's uint8 QuantizeLinear (scale 0.5, zero point 128) joins the group.
TestGraph qdq_quantize_in() {
  TestGraph g = qdq();
  g.value("x", kF32, kRows).value("x_q", kU8, kRows).constant("x_zero_point", kU8, {}, {128});
  g.node("QuantizeLinear", "q_x", {"x", "x_scale", "x_zero_point"}, {"x_q"});
  return g;
}

// QLinearMatMul: uint8 a (0.5, 1), int8 b (0.25, 2), uint8 y (0.125, 3), scales of `scale_type`.
TestGraph qlinear_scales_of(Type scale_type) {
  TestGraph g;
  g.value("a", kU8, kRows).constant("a_scale", scale_type, {}, {0.5}).constant("a_zero_point", kU8, {}, {1});
  g.constant("b", kI8, {K, N}, kWeights)
      .constant("b_scale", scale_type, {}, {0.25})
      .constant("b_zero_point", kI8, {}, {2});
  g.constant("y_scale", scale_type, {}, {0.125}).constant("y_zero_point", kU8, {}, {3});
  g.value("y", kU8, std::vector<int64_t>{kSymbolic, N});
  g.node("QLinearMatMul", "qlinear",
         {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"}, {"y"});
  g.output("y");
  return g;
}

TestGraph qlinear() { return qlinear_scales_of(kF32); }

// MatMulInteger: uint8 a (zero point 1), int8 b (zero point 2) -> int32.
TestGraph matmul_integer() {
  TestGraph g;
  g.value("a", kU8, kRows).constant("b", kI8, {K, N}, kWeights);
  g.constant("a_zero_point", kU8, {}, {1}).constant("b_zero_point", kI8, {}, {2});
  g.value("y", kI32, std::vector<int64_t>{kSymbolic, N});
  g.node("MatMulInteger", "mmi", {"a", "b", "a_zero_point", "b_zero_point"}, {"y"});
  g.output("y");
  return g;
}

// quantize_dynamic's chain: DynamicQuantizeLinear(x) -> MatMulInteger -> Cast(float) ->
// Mul(·, Mul(x_scale, b_scale)) -> Add(bias); the weight scale 0.25.
TestGraph dynamic_chain() {
  TestGraph g;
  const Shape rows_n = std::vector<int64_t>{kSymbolic, N};
  g.value("x", kF32, kRows).value("x_q", kU8, kRows).value("x_scale", kF32, std::vector<int64_t>{});
  g.value("x_zero_point", kU8, std::vector<int64_t>{}).constant("w_q", kI8, {K, N}, kWeights);
  g.constant("b_scale", kF32, {}, {0.25}).constant("bias", kF32, {N}, {0.5, 1.5, -2});
  g.value("acc", kI32, rows_n).value("acc_f", kF32, rows_n).value("scales", kF32, std::vector<int64_t>{});
  g.value("mm", kF32, rows_n).value("y", kF32, rows_n);
  g.node("DynamicQuantizeLinear", "dql", {"x"}, {"x_q", "x_scale", "x_zero_point"});
  g.node("MatMulInteger", "mmi", {"x_q", "w_q", "x_zero_point"}, {"acc"});
  g.node("Cast", "cast", {"acc"}, {"acc_f"}, {{"to", kF32}});
  g.node("Mul", "scale_product", {"x_scale", "b_scale"}, {"scales"});
  g.node("Mul", "mul", {"acc_f", "scales"}, {"mm"}).node("Add", "add", {"mm", "bias"}, {"y"});
  g.output("y");
  return g;
}

// MatMulNBits, K = 64, N = 8, 4 bits, blocks of 32 (2 per column), packed zero points, accuracy_level 4.
constexpr int64_t kNbitsK = 64, kNbitsN = 8;
TestGraph nbits() {
  TestGraph g;
  g.value("A", kF32, std::vector<int64_t>{kSymbolic, kNbitsK})
      .value("Y", kF32, std::vector<int64_t>{kSymbolic, kNbitsN});
  g.constant("B", kU8, {kNbitsN, 2, 16}, std::vector<double>(kNbitsN * 2 * 16, 0x98));
  g.constant("scales", kF32, {kNbitsN * 2}, std::vector<double>(kNbitsN * 2, 0.5));
  g.constant("zero_points", kU8, {kNbitsN, 1}, std::vector<double>(kNbitsN, 0x87));
  g.node("MatMulNBits", "nbits", {"A", "B", "scales", "zero_points"}, {"Y"},
         {{"K", kNbitsK}, {"N", kNbitsN}, {"bits", 4}, {"block_size", 32}, {"accuracy_level", 4}}, {}, "com.microsoft");
  g.output("Y");
  return g;
}

// What a claimed group's plan holds; the defaults are a plain plan's.
struct Plan {
  GroupKind kind = GroupKind::QdqMatMul;
  std::vector<std::string> nodes;  // the fused nodes, in the matcher's order
  int64_t K = onebit::test::K, N = onebit::test::N;
  ActivationSource x_source = ActivationSource::Quantized;
  QType x_type = QType::Int8;
  int32_t x_zero_point = 0;
  std::vector<int32_t> b_zero_points;
  bool b_is_nk = false;
  std::vector<double> scale;  // the epilogue's (float32 steps: its float scales)
  std::vector<double> bias;
  std::vector<float> b_scale;  // when the activation scale arrives per call
  OutputKind output = OutputKind::Float32;
  double y_scale = 1.0;
  int32_t y_zero_point = 0;
  bool b_per_call = false;
  int32_t b_zero_point = 0;  // of a per-call B
  std::string x_scale_input, x_zero_point_input, b_scale_input, b_zero_point_input;
  int64_t bits = 0, block_size = 0;  // MatMulNBits
  int64_t accuracy_level = 4;
  int64_t nbits_zero_point_bytes = 0;
  DynamicQuantization quantize;  // a fused QuantizeLinear's scale and zero point
};

struct Row {
  std::string name;
  std::function<TestGraph()> graph;
  std::string anchor;
  std::string declined;  // the reason; "" = claimed with `plan`
  Plan plan;
};

std::string print_row(const testing::TestParamInfo<Row>& info) { return info.param.name; }
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class GroupMatchTest : public testing::TestWithParam<Row> {};

const NodeInfo& node_named(const GraphIndex& g, const std::string& name) {
  for (const NodeInfo& n : g.nodes())
    if (n.name == name) return n;
  throw std::invalid_argument("no node '" + name + "'");
}

template <typename T>
std::vector<double> widened(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

TEST_P(GroupMatchTest, ClaimsOrDeclines) {
  const Row& row = GetParam();
  const TestGraph built = row.graph();
  const GraphIndex g(built.description());
  const MatchResult result = match_group(g, node_named(g, row.anchor));
  if (const auto* why = std::get_if<std::string>(&result)) {
    EXPECT_EQ(*why, row.declined) << "declined by the matcher";
    return;
  }
  const GroupMatch& m = std::get<GroupMatch>(result);
  GroupSource source;
  try {
    source = read_group(m, g);
  } catch (const UnsupportedGroup& e) {
    EXPECT_EQ(e.what(), row.declined) << "declined by the plan reader";
    return;
  }
  ASSERT_EQ(row.declined, "") << "claimed";
  const Plan& want = row.plan;
  const GroupPlan& plan = source.plan;
  std::vector<std::string> nodes;
  for (const NodeInfo* n : m.nodes) nodes.push_back(n->name);
  EXPECT_EQ(m.kind, want.kind);
  EXPECT_EQ(nodes, want.nodes);
  EXPECT_EQ(plan.K, want.K);
  EXPECT_EQ(plan.N, want.N);
  EXPECT_EQ(plan.x_source, want.x_source);
  EXPECT_EQ(plan.x_type, want.x_type);
  EXPECT_EQ(plan.x_zero_point, want.x_zero_point);
  EXPECT_EQ(source.b_zero_points, want.b_zero_points);
  EXPECT_EQ(source.b_is_nk, want.b_is_nk);
  const Epilogue& e = plan.epilogue;
  EXPECT_EQ(e.float32_steps ? widened(e.scale32) : e.scale, want.scale);
  EXPECT_EQ(e.float32_steps ? widened(e.bias32) : e.bias, want.bias);
  EXPECT_EQ(plan.b_scale, want.b_scale);
  EXPECT_EQ(e.kind, want.output);
  EXPECT_EQ(e.y_scale, want.y_scale);
  EXPECT_EQ(e.y_zero_point, want.y_zero_point);
  EXPECT_EQ(plan.b_per_call, want.b_per_call);
  EXPECT_EQ(plan.b_zero_point, want.b_zero_point);
  EXPECT_EQ(plan.x_scale_input, want.x_scale_input);
  EXPECT_EQ(plan.x_zero_point_input, want.x_zero_point_input);
  EXPECT_EQ(plan.b_scale_input, want.b_scale_input);
  EXPECT_EQ(plan.b_zero_point_input, want.b_zero_point_input);
  EXPECT_EQ(plan.accuracy_level, want.accuracy_level);
  if (m.kind == GroupKind::MatMulNBits) {
    EXPECT_EQ(source.nbits.bits, want.bits);
    EXPECT_EQ(source.nbits.block_size, want.block_size);
    EXPECT_EQ(source.nbits.zero_point_bytes, want.nbits_zero_point_bytes);
  }
  EXPECT_EQ(plan.x_quantize.scale, want.quantize.scale);
  EXPECT_EQ(plan.x_quantize.zero_point, want.quantize.zero_point);
}

// A row's graph: a family's graph changed by `edit`.
std::function<TestGraph()> edited(TestGraph (*family)(), std::function<void(TestGraph&)> edit) {
  return [family, edit] {
    TestGraph g = family();
    edit(g);
    return g;
  };
}

const Shape kMatrix = std::vector<int64_t>{K, N};
const Shape kScalar = std::vector<int64_t>{};
const std::vector<double> kNbitsBias{1, 2, 3, 4, -1, -2, -3, -4};

const Row kQdqRows[] = {
    {"QdqMatMul",
     qdq,
     "matmul",
     "",
     {.nodes = {"dq_x", "dq_w", "matmul"}, .x_zero_point = 1, .b_zero_points = {2}, .scale = {0.125}}},
    {"QdqPerChannelWeight",
     edited(qdq,
            [](TestGraph& g) {
              g.constant("b_scale", kF32, {N}, {0.25, 0.5, 1}).constant("b_zero_point", kI8, {N}, {2, 0, -1});
            }),
     "matmul",
     "",
     {.nodes = {"dq_x", "dq_w", "matmul"},
      .x_zero_point = 1,
      .b_zero_points = {2, 0, -1},
      .scale = {0.125, 0.25, 0.5}}},
    {"QdqBiasAddAndOutputQuantizeLinear",
     qdq_add_quantize,
     "matmul",
     "",
     {.nodes = {"dq_x", "dq_w", "add", "q_y", "matmul"},
      .x_zero_point = 1,
      .b_zero_points = {2},
      .scale = {0.125},
      .bias = {0.5, 1.5, -2},
      .output = OutputKind::Uint8,
      .y_scale = 0.5,
      .y_zero_point = 5}},
    {"QdqInt32BiasThroughDequantizeLinear",
     edited(qdq_add_quantize,
            [](TestGraph& g) {
              g.constant("bias_q", kI32, {N}, {10, -20, 30}).constant("bias_scale", kF32, {}, {0.0625});
              g.value("bias", kF32, std::vector<int64_t>{N})
                  .node("DequantizeLinear", "dq_b", {"bias_q", "bias_scale"}, {"bias"});
            }),
     "matmul",
     "",
     {.nodes = {"dq_x", "dq_w", "dq_b", "add", "q_y", "matmul"},
      .x_zero_point = 1,
      .b_zero_points = {2},
      .scale = {0.125},
      .bias = {0.625, -1.25, 1.875},
      .output = OutputKind::Uint8,
      .y_scale = 0.5,
      .y_zero_point = 5}},
    // ORT's MatMulAddFusion names the bias it makes after the node ("mm\0a/..._bias_int32"); cut at
    // the NUL, two values read as one name, and the group was claimed, then refused by Compile.
    {"QdqBiasNameStandsForSeveralValues",
     edited(qdq_add_quantize, [](TestGraph& g) { g.ambiguous("bias"); }),
     "matmul",
     "value name 'bias' of Add 'add' stands for several values (their names differ after a NUL byte, where ORT's "
     "C API cuts them)",
     {}},
    {"QdqActivationQuantizeLinearJoins",
     qdq_quantize_in,
     "matmul",
     "",
     {.nodes = {"dq_x", "dq_w", "q_x", "matmul"},
      .x_source = ActivationSource::QuantizeLinear,
      .x_type = QType::Uint8,
      .x_zero_point = 128,
      .b_zero_points = {2},
      .scale = {0.125},
      .quantize = {0.5f, 128}}},
    {"QdqActivationTimesActivation",
     edited(qdq, [](TestGraph& g) { g.value("w_q", kI8, kMatrix); }),
     "matmul",
     "",
     {.nodes = {"dq_x", "dq_w", "matmul"}, .x_zero_point = 1, .scale = {0.125}, .b_per_call = true, .b_zero_point = 2}},
    {"GemmTransBWithBias",
     gemm,
     "matmul",
     "",
     {.nodes = {"dq_x", "dq_w", "matmul"},
      .x_zero_point = 1,
      .b_zero_points = {2},
      .b_is_nk = true,
      .scale = {0.125},
      .bias = {1.5, -2.5, 3.5}}},
    {"GemmTransA", edited(gemm, [](TestGraph& g) { g.int_attr("matmul", "transA", 1); }), "matmul",
     "Gemm with transA=1"},
    {"GemmAlpha", edited(gemm, [](TestGraph& g) { g.float_attr("matmul", "alpha", 0.5f); }), "matmul",
     "Gemm with alpha != 1"},
    {"GemmBeta", edited(gemm, [](TestGraph& g) { g.float_attr("matmul", "beta", 2.0f); }), "matmul",
     "Gemm with beta != 1"},
    {"GemmNonConstantC", edited(gemm, [](TestGraph& g) { g.value("bias", kF32, std::vector<int64_t>{N}); }), "matmul",
     "Gemm input C is not a constant bias"},
    {"GemmNonConstantB", edited(gemm, [](TestGraph& g) { g.value("w_q", kI8, std::vector<int64_t>{N, K}); }), "matmul",
     "Gemm with a non-constant B 'w_q'"},
    {"ActivationNotDequantized",
     edited(qdq, [](TestGraph& g) { g.value("x", kF32, kRows).set_input("matmul", 0, "x"); }), "matmul",
     "input A is not a DequantizeLinear used only here"},
    {"FloatWeight",
     edited(qdq, [](TestGraph& g) { g.constant("w", kF32, {K, N}, kWeights).set_input("matmul", 1, "w"); }), "matmul",
     "input B is not a DequantizeLinear used only here"},
    {"DequantizedActivationIsAGraphOutput", edited(qdq, [](TestGraph& g) { g.output("x_f"); }), "matmul",
     "input A is not a DequantizeLinear used only here"},
    {"ConstantActivation", edited(qdq, [](TestGraph& g) { g.constant("x_q", kI8, {2, K}, {1, 2, 3, 4, 5, 6, 7, 8}); }),
     "matmul", "activation 'x_q' is a constant"},
    {"BlockedWeightDequantize", edited(qdq, [](TestGraph& g) { g.int_attr("dq_w", "block_size", 16); }), "matmul",
     "DequantizeLinear 'dq_w' uses blocked quantization"},
    {"BlockedOutputQuantize", edited(qdq_add_quantize, [](TestGraph& g) { g.int_attr("q_y", "block_size", 16); }),
     "matmul", "QuantizeLinear 'q_y' uses blocked quantization"},
    {"DequantizeToFloat16", edited(qdq, [](TestGraph& g) { g.int_attr("dq_x", "output_dtype", kF16); }), "matmul",
     "DequantizeLinear 'dq_x' has output_dtype 10; only float32 is claimed"},
    {"WeightScaleAlongK",
     edited(qdq, [](TestGraph& g) { g.constant("b_scale", kF32, {N}, {0.25, 0.5, 1}).int_attr("dq_w", "axis", 0); }),
     "matmul", "weight scale 'b_scale' is per-channel along axis 0, not the output-channel axis 1"},
    {"WeightScaleCountUnlikeN", edited(qdq, [](TestGraph& g) { g.constant("b_scale", kF32, {K}, {1, 1, 1, 1}); }),
     "matmul", "weight scale 'b_scale' has shape [4]; expected one value or [3]"},
    {"ActivationScaleOfRank2", edited(qdq, [](TestGraph& g) { g.constant("x_scale", kF32, {1, 1}, {0.5}); }), "matmul",
     "activation scale 'x_scale' is not per-tensor (shape [1,1])"},
    {"Float16WeightScale", edited(qdq, [](TestGraph& g) { g.constant("b_scale", kF16, {}, {0.25}); }), "matmul",
     "weight scale 'b_scale' has type float16"},
    {"NegativeWeightScale", edited(qdq, [](TestGraph& g) { g.constant("b_scale", kF32, {}, {-0.25}); }), "matmul",
     "weight scale 'b_scale' holds -0.250000; expected a positive finite scale"},
    {"Int16Weight", edited(qdq, [](TestGraph& g) { g.constant("w_q", kI16, {K, N}, kWeights); }), "matmul",
     "weight 'w_q' has type int16; expected int8 or uint8"},
    {"Int16Activation", edited(qdq, [](TestGraph& g) { g.value("x_q", kI16, kRows); }), "matmul",
     "activation 'x_q' has type int16; expected int8 or uint8"},
    {"WeightZeroPointOfAnotherType", edited(qdq, [](TestGraph& g) { g.constant("b_zero_point", kU8, {}, {2}); }),
     "matmul", "weight zero point 'b_zero_point' has type uint8"},
    {"ZeroPointsUnlikeScale", edited(qdq, [](TestGraph& g) { g.constant("b_zero_point", kI8, {N}, {2, 0, 1}); }),
     "matmul",
     "weight zero point 'b_zero_point' has 3 values but weight scale 'b_scale' has 1; DequantizeLinear needs them "
     "shaped alike"},
    {"Rank3WeightInQdq",
     edited(qdq, [](TestGraph& g) { g.constant("w_q", kI8, {2, K, N}, std::vector<double>(2 * K * N, 1)); }), "matmul",
     "weight 'w_q' has shape [2,4,3]; expected rank 2"},
    {"ActivationOfRank1", edited(qdq, [](TestGraph& g) { g.value("x_q", kI8, std::vector<int64_t>{K}); }), "matmul",
     "activation 'x_q' has rank 1; supported ranks are 2 to 4"},
    {"ActivationKUnlikeWeight",
     edited(qdq, [](TestGraph& g) { g.value("x_q", kI8, std::vector<int64_t>{kSymbolic, 5}); }), "matmul",
     "activation 'x_q' has K=5 but the weight has K=4"},
    {"BiasOfNPlusOne", edited(qdq_add_quantize, [](TestGraph& g) { g.constant("bias", kF32, {N + 1}, {1, 2, 3, 4}); }),
     "matmul", "bias 'bias' has shape [4]; expected [3]"},
    {"NonConstantBWithPerChannelScale",
     edited(qdq, [](TestGraph& g) { g.value("w_q", kI8, kMatrix).constant("b_scale", kF32, {N}, {0.25, 0.5, 1}); }),
     "matmul", "weight scale 'b_scale' has shape [3]: a non-constant B must be quantized per tensor"},
    {"ActivationZeroPointPerChannel",
     edited(qdq, [](TestGraph& g) { g.constant("x_zero_point", kI8, {K}, {1, 1, 1, 1}); }), "matmul",
     "activation zero point 'x_zero_point' is not per-tensor (shape [4])"},
    {"QuantizeLinearOfAnInt8Activation", edited(qdq_quantize_in, [](TestGraph& g) { g.value("x_q", kI8, kRows); }),
     "matmul", "the fused QuantizeLinear of 'x' does not produce uint8"},
    {"NonConstantBOfInt16", edited(qdq, [](TestGraph& g) { g.value("w_q", kI16, kMatrix); }), "matmul",
     "B 'w_q' has type int16; expected int8 or uint8"},
    {"NonConstantBOfRank1", edited(qdq, [](TestGraph& g) { g.value("w_q", kI8, std::vector<int64_t>{K}); }), "matmul",
     "B 'w_q' has rank 1; supported ranks are 2 to 4"},
    {"EmptyWeight", edited(qdq, [](TestGraph& g) { g.constant("w_q", kI8, {K, 0}, {}); }), "matmul",
     "weight 'w_q' is empty [4,0]"},
    {"Int32BiasWithoutScale", edited(qdq_add_quantize, [](TestGraph& g) { g.constant("bias", kI32, {N}, {1, 2, 3}); }),
     "matmul", "bias 'bias' has type int32"},
    {"QuantizedBiasOfInt8",
     edited(qdq_add_quantize,
            [](TestGraph& g) {
              g.constant("bias_q", kI8, {N}, {10, -20, 30}).constant("bias_scale", kF32, {}, {0.0625});
              g.value("bias", kF32, std::vector<int64_t>{N})
                  .node("DequantizeLinear", "dq_b", {"bias_q", "bias_scale"}, {"bias"});
            }),
     "matmul", "quantized bias 'bias_q' has type int8"},
    {"Int8OutputWithoutQuantizeLinear",
     edited(qdq, [](TestGraph& g) { g.value("y", kI8, std::vector<int64_t>{kSymbolic, N}); }), "matmul",
     "output 'y' has type int8"},
    {"Int8ActivationScale", edited(qdq, [](TestGraph& g) { g.constant("x_scale", kI8, {}, {1}); }), "matmul",
     "activation scale 'x_scale' has type int8"},
    {"NonConstantBWithKAboveLimit",
     edited(qdq, [](TestGraph& g) { g.value("w_q", kI8, std::vector<int64_t>{kMaxK + 1, N}); }), "matmul",
     "B 'w_q' has K=" + std::to_string(kMaxK + 1) + " > " + std::to_string(kMaxK) +
         " (int32 accumulators could overflow)"},
    {"Float16BiasScale",
     edited(qdq_add_quantize,
            [](TestGraph& g) {
              g.constant("bias_q", kI32, {N}, {10, -20, 30}).constant("bias_scale", kF16, {}, {0.0625});
              g.value("bias", kF32, std::vector<int64_t>{N})
                  .node("DequantizeLinear", "dq_b", {"bias_q", "bias_scale"}, {"bias"});
            }),
     "matmul", "bias scale 'bias_scale' has type float16"},
};

const Row kSingleNodeRows[] = {
    {"QLinearMatMul",
     qlinear,
     "qlinear",
     "",
     {.kind = GroupKind::QLinearMatMul,
      .nodes = {"qlinear"},
      .x_type = QType::Uint8,
      .x_zero_point = 1,
      .b_zero_points = {2},
      .scale = {1.0},
      .output = OutputKind::Uint8,
      .y_zero_point = 3}},
    {"QLinearMatMulFloat16Scales",
     [] { return qlinear_scales_of(kF16); },
     "qlinear",
     "",
     {.kind = GroupKind::QLinearMatMul,
      .nodes = {"qlinear"},
      .x_type = QType::Uint8,
      .x_zero_point = 1,
      .b_zero_points = {2},
      .scale = {1.0},
      .output = OutputKind::Uint8,
      .y_zero_point = 3}},
    {"QLinearMatMulNonConstantB",
     edited(qlinear, [](TestGraph& g) { g.value("b", kI8, kMatrix); }),
     "qlinear",
     "",
     {.kind = GroupKind::QLinearMatMul,
      .nodes = {"qlinear"},
      .x_type = QType::Uint8,
      .x_zero_point = 1,
      .scale = {1.0},
      .output = OutputKind::Uint8,
      .y_zero_point = 3,
      .b_per_call = true,
      .b_zero_point = 2}},
    {"QLinearMatMulMixedScaleTypes", edited(qlinear, [](TestGraph& g) { g.constant("b_scale", kF16, {}, {0.25}); }),
     "qlinear", "QLinearMatMul scales of different types"},
    {"QLinearMatMulConstantA", edited(qlinear, [](TestGraph& g) { g.constant("a", kU8, {1, K}, {1, 2, 3, 4}); }),
     "qlinear", "activation 'a' is a constant"},
    {"QLinearMatMulFloatOutput",
     edited(qlinear, [](TestGraph& g) { g.value("y", kF32, std::vector<int64_t>{kSymbolic, N}); }), "qlinear",
     "output 'y' has type float32; expected int8 or uint8"},
    {"MatMulIntegerWithZeroPoints",
     matmul_integer,
     "mmi",
     "",
     {.kind = GroupKind::MatMulInteger,
      .nodes = {"mmi"},
      .x_type = QType::Uint8,
      .x_zero_point = 1,
      .b_zero_points = {2},
      .output = OutputKind::Int32}},
    {"MatMulIntegerWithoutZeroPoints",
     edited(matmul_integer, [](TestGraph& g) { g.node("MatMulInteger", "mmi", {"a", "b"}, {"y"}); }),
     "mmi",
     "",
     {.kind = GroupKind::MatMulInteger, .nodes = {"mmi"}, .x_type = QType::Uint8, .output = OutputKind::Int32}},
    {"MatMulIntegerPerChannelWeightZeroPoints",
     edited(matmul_integer, [](TestGraph& g) { g.constant("b_zero_point", kI8, {N}, {2, 0, -1}); }),
     "mmi",
     "",
     {.kind = GroupKind::MatMulInteger,
      .nodes = {"mmi"},
      .x_type = QType::Uint8,
      .x_zero_point = 1,
      .b_zero_points = {2, 0, -1},
      .output = OutputKind::Int32}},
    {"MatMulIntegerNonConstantBAndZeroPoint",
     edited(matmul_integer, [](TestGraph& g) { g.value("b", kI8, kMatrix).value("b_zero_point", kI8, kScalar); }),
     "mmi",
     "",
     {.kind = GroupKind::MatMulInteger,
      .nodes = {"mmi"},
      .x_type = QType::Uint8,
      .x_zero_point = 1,
      .output = OutputKind::Int32,
      .b_per_call = true,
      .b_zero_point_input = "b_zero_point"}},
    {"MatMulIntegerBZeroPointOfUnknownShape",
     edited(matmul_integer, [](TestGraph& g) { g.value("b", kI8, kMatrix).value("b_zero_point", kI8, std::nullopt); }),
     "mmi", "B zero point 'b_zero_point' has an unknown shape; expected one value"},
    {"MatMulIntegerNonConstantAZeroPoint",
     edited(matmul_integer, [](TestGraph& g) { g.value("a_zero_point", kU8, kScalar); }), "mmi",
     "activation zero point 'a_zero_point' is not a constant initializer"},
    {"MatMulIntegerZeroPointOfAnotherType",
     edited(matmul_integer, [](TestGraph& g) { g.constant("a_zero_point", kI8, {}, {1}); }), "mmi",
     "activation zero point 'a_zero_point' has type int8"},
    {"MatMulIntegerKAboveLimit",
     edited(matmul_integer,
            [](TestGraph& g) { g.constant("b", kI8, {kMaxK + 1, 1}, std::vector<double>(kMaxK + 1, 1)); }),
     "mmi",
     "weight 'b' has K=" + std::to_string(kMaxK + 1) + " > " + std::to_string(kMaxK) +
         " (int32 accumulators could overflow)"},
    {"MatMulIntegerBatchesDoNotBroadcast",
     edited(matmul_integer,
            [](TestGraph& g) {
              g.constant("b", kI8, {2, K, N}, std::vector<double>(2 * K * N, 1));
              g.value("a", kU8, std::vector<int64_t>{3, kSymbolic, K});
            }),
     "mmi", "activation 'a' batch dims [3,?,4] do not broadcast with the weight's [2]"},
    {"MatMulIntegerPerCallZeroPointOfAnotherType",
     edited(matmul_integer, [](TestGraph& g) { g.value("b", kI8, kMatrix).value("b_zero_point", kU8, kScalar); }),
     "mmi", "B zero point 'b_zero_point' has type uint8; expected int8"},
};

const Row kDynamicRows[] = {
    {"QuantizeDynamicChain",
     dynamic_chain,
     "mmi",
     "",
     {.kind = GroupKind::DynamicMatMulInteger,
      .nodes = {"scale_product", "cast", "mul", "add", "dql", "mmi"},
      .x_source = ActivationSource::DynamicQuantizeLinear,
      .x_type = QType::Uint8,
      .bias = {0.5, 1.5, -2},
      .b_scale = {0.25}}},
    {"QuantizeDynamicPerChannel",
     edited(dynamic_chain, [](TestGraph& g) { g.constant("b_scale", kF32, {N}, {0.25, 0.5, 1}); }),
     "mmi",
     "",
     {.kind = GroupKind::DynamicMatMulInteger,
      .nodes = {"scale_product", "cast", "mul", "add", "dql", "mmi"},
      .x_source = ActivationSource::DynamicQuantizeLinear,
      .x_type = QType::Uint8,
      .bias = {0.5, 1.5, -2},
      .b_scale = {0.25, 0.5, 1}}},
    {"QuantizeDynamicScaleAndZeroPointPerCall",
     edited(dynamic_chain, [](TestGraph& g) { g.remove_node("dql"); }),
     "mmi",
     "",
     {.kind = GroupKind::DynamicMatMulInteger,
      .nodes = {"scale_product", "cast", "mul", "add", "mmi"},
      .x_type = QType::Uint8,
      .bias = {0.5, 1.5, -2},
      .b_scale = {0.25},
      .x_scale_input = "x_scale",
      .x_zero_point_input = "x_zero_point"}},
    {"QuantizeDynamicNonConstantB",
     edited(dynamic_chain, [](TestGraph& g) { g.value("w_q", kI8, kMatrix).value("b_scale", kF32, kScalar); }),
     "mmi",
     "",
     {.kind = GroupKind::DynamicMatMulInteger,
      .nodes = {"scale_product", "cast", "mul", "add", "mmi"},
      .x_type = QType::Uint8,
      .bias = {0.5, 1.5, -2},
      .b_per_call = true,
      .x_scale_input = "x_scale",
      .x_zero_point_input = "x_zero_point",
      .b_scale_input = "b_scale"}},
    {"QuantizeDynamicBScaleOfSymbolicShape",
     edited(dynamic_chain,
            [](TestGraph& g) { g.value("w_q", kI8, kMatrix).value("b_scale", kF32, std::vector<int64_t>{kSymbolic}); }),
     "mmi", "B scale 'b_scale' has shape [?]; expected one value"},
    {"QuantizeDynamicFloat16WeightScale",
     edited(dynamic_chain, [](TestGraph& g) { g.constant("b_scale", kF16, {}, {0.25}); }), "mmi",
     "weight scale 'b_scale' has type float16"},
    {"CastToIntLeavesAPlainMatMulInteger",
     edited(dynamic_chain, [](TestGraph& g) { g.int_attr("cast", "to", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64); }), "mmi",
     "activation zero point 'x_zero_point' is not a constant initializer"},
    {"QuantizeDynamicOfFloat16", edited(dynamic_chain, [](TestGraph& g) { g.value("x", kF16, kRows); }), "mmi",
     "activation 'x' has type float16"},
    {"QuantizeDynamicConstantFloat16ActivationScale",
     edited(dynamic_chain,
            [](TestGraph& g) {
              // Both factors constant: the first is taken as the weight's.
              g.remove_node("dql").constant("x_scale", kF16, {}, {0.5});
              g.node("Mul", "scale_product", {"b_scale", "x_scale"}, {"scales"});
            }),
     "mmi", "activation scale 'x_scale' is not one float"},
    {"QuantizeDynamicActivationScaleOfTwo",
     edited(dynamic_chain, [](TestGraph& g) { g.remove_node("dql").value("x_scale", kF32, std::vector<int64_t>{2}); }),
     "mmi", "activation scale 'x_scale' has shape [2]; expected one value"},
};

const Row kNbitsRows[] = {
    {"MatMulNBits4Bit",
     nbits,
     "nbits",
     "",
     {.kind = GroupKind::MatMulNBits,
      .nodes = {"nbits"},
      .K = kNbitsK,
      .N = kNbitsN,
      .x_source = ActivationSource::PerKBlock,
      .bits = 4,
      .block_size = 32,
      .nbits_zero_point_bytes = kNbitsN}},
    {"MatMulNBits8BitWithoutZeroPoints",
     edited(nbits,
            [](TestGraph& g) {
              g.constant("B", kU8, {kNbitsN, 2, 32}, std::vector<double>(kNbitsN * 2 * 32, 7))
                  .int_attr("nbits", "bits", 8);
              g.set_input("nbits", 3, "");
            }),
     "nbits",
     "",
     {.kind = GroupKind::MatMulNBits,
      .nodes = {"nbits"},
      .K = kNbitsK,
      .N = kNbitsN,
      .x_source = ActivationSource::PerKBlock,
      .bits = 8,
      .block_size = 32}},
    {"MatMulNBitsBiasAdd",
     edited(
         nbits,
         [](TestGraph& g) {
           g.value("mm", kF32, std::vector<int64_t>{kSymbolic, kNbitsN}).constant("bias", kF32, {kNbitsN}, kNbitsBias);
           g.set_output("nbits", 0, "mm").node("Add", "add", {"mm", "bias"}, {"Y"});
         }),
     "nbits",
     "",
     {.kind = GroupKind::MatMulNBits,
      .nodes = {"add", "nbits"},
      .K = kNbitsK,
      .N = kNbitsN,
      .x_source = ActivationSource::PerKBlock,
      .bias = kNbitsBias,
      .bits = 4,
      .block_size = 32,
      .nbits_zero_point_bytes = kNbitsN}},
    {"MatMulNBitsBiasInput",
     edited(nbits, [](TestGraph& g) { g.constant("bias", kF32, {kNbitsN}, kNbitsBias).set_input("nbits", 5, "bias"); }),
     "nbits",
     "",
     {.kind = GroupKind::MatMulNBits,
      .nodes = {"nbits"},
      .K = kNbitsK,
      .N = kNbitsN,
      .x_source = ActivationSource::PerKBlock,
      .bias = kNbitsBias,
      .bits = 4,
      .block_size = 32,
      .nbits_zero_point_bytes = kNbitsN}},
    // Read as any other; GetCapability then declines it unless the session allows any accuracy level.
    {"MatMulNBitsAccuracyLevel0",
     edited(nbits, [](TestGraph& g) { g.int_attr("nbits", "accuracy_level", 0); }),
     "nbits",
     "",
     {.kind = GroupKind::MatMulNBits,
      .nodes = {"nbits"},
      .K = kNbitsK,
      .N = kNbitsN,
      .x_source = ActivationSource::PerKBlock,
      .bits = 4,
      .block_size = 32,
      .accuracy_level = 0,
      .nbits_zero_point_bytes = kNbitsN}},
    {"MatMulNBitsGIdx",
     edited(nbits,
            [](TestGraph& g) { g.value("g_idx", kI32, std::vector<int64_t>{kNbitsK}).set_input("nbits", 4, "g_idx"); }),
     "nbits", "g_idx 'g_idx' (act-order) is not claimed"},
    {"MatMulNBitsFloat16Scales",
     edited(nbits,
            [](TestGraph& g) { g.constant("scales", kF16, {kNbitsN * 2}, std::vector<double>(kNbitsN * 2, 0.5)); }),
     "nbits", "scales 'scales' have type float16; only float scales are claimed"},
    {"MatMulNBits2Bit", edited(nbits, [](TestGraph& g) { g.int_attr("nbits", "bits", 2); }), "nbits",
     "bits=2; 4 and 8 are claimed"},
    {"MatMulNBitsBlockSize8", edited(nbits, [](TestGraph& g) { g.int_attr("nbits", "block_size", 8); }), "nbits",
     "block_size=8; powers of two from 16 to 256 are claimed"},
    {"MatMulNBitsWithoutK", edited(nbits, [](TestGraph& g) { g.remove_attr("nbits", "K"); }), "nbits",
     "attribute K is missing"},
    {"MatMulNBitsScalesBlocksByN",
     edited(nbits,
            [](TestGraph& g) { g.constant("scales", kF32, {2, kNbitsN}, std::vector<double>(kNbitsN * 2, 0.5)); }),
     "nbits", "scales 'scales' have shape [2,8]; expected [16] or [8,2] (N × blocks)"},
    {"MatMulNBitsBShape",
     edited(nbits,
            [](TestGraph& g) { g.constant("B", kU8, {kNbitsN, 2, 8}, std::vector<double>(kNbitsN * 2 * 8, 0)); }),
     "nbits", "B 'B' has shape [8,2,8]; expected [8,2,16]"},
    {"MatMulNBitsNonConstantB",
     edited(nbits, [](TestGraph& g) { g.value("B", kU8, std::vector<int64_t>{kNbitsN, 2, 16}); }), "nbits",
     "B 'B' is not a constant initializer"},
    {"MatMulNBitsFloatZeroPoints",
     edited(nbits,
            [](TestGraph& g) { g.constant("zero_points", kF32, {kNbitsN, 2}, std::vector<double>(kNbitsN * 2, 8)); }),
     "nbits", "zero_points 'zero_points' have type float32; packed uint8 ones are claimed"},
    {"MatMulNBitsFloat16Activation",
     edited(nbits, [](TestGraph& g) { g.value("A", kF16, std::vector<int64_t>{kSymbolic, kNbitsK}); }), "nbits",
     "activation 'A' has type float16"},
    {"MatMulNBitsConstantActivation",
     edited(nbits, [](TestGraph& g) { g.constant("A", kF32, {1, kNbitsK}, std::vector<double>(kNbitsK, 1)); }), "nbits",
     "activation 'A' is a constant"},
    {"MatMulNBitsZeroPointsShape",
     edited(nbits,
            [](TestGraph& g) { g.constant("zero_points", kU8, {kNbitsN, 2}, std::vector<double>(kNbitsN * 2, 8)); }),
     "nbits", "zero_points 'zero_points' have shape [8,2]; expected [8] or [8,1]"},
    {"MatMulNBitsInt8B",
     edited(nbits,
            [](TestGraph& g) { g.constant("B", kI8, {kNbitsN, 2, 16}, std::vector<double>(kNbitsN * 2 * 16, 1)); }),
     "nbits", "B 'B' has type int8; expected uint8"},
    {"MatMulNBitsNZero", edited(nbits, [](TestGraph& g) { g.int_attr("nbits", "N", 0); }), "nbits",
     "K=64 N=0; both must be positive"},
    {"MatMulNBitsActivationKUnlikeNode",
     edited(nbits, [](TestGraph& g) { g.value("A", kF32, std::vector<int64_t>{kSymbolic, 32}); }), "nbits",
     "activation 'A' has K=32 but the node has K=64"},
    {"MatMulNBitsActivationOfRank5",
     edited(nbits, [](TestGraph& g) { g.value("A", kF32, std::vector<int64_t>{1, 1, 1, 1, kNbitsK}); }), "nbits",
     "activation 'A' has rank 5; supported ranks are 2 to 4"},
    {"MatMulNBitsFloat16Output",
     edited(nbits, [](TestGraph& g) { g.value("Y", kF16, std::vector<int64_t>{kSymbolic, kNbitsN}); }), "nbits",
     "output 'Y' has type float16"},
};

INSTANTIATE_TEST_SUITE_P(Qdq, GroupMatchTest, testing::ValuesIn(kQdqRows), print_row);
INSTANTIATE_TEST_SUITE_P(SingleNode, GroupMatchTest, testing::ValuesIn(kSingleNodeRows), print_row);
INSTANTIATE_TEST_SUITE_P(QuantizeDynamic, GroupMatchTest, testing::ValuesIn(kDynamicRows), print_row);
INSTANTIATE_TEST_SUITE_P(MatMulNBits, GroupMatchTest, testing::ValuesIn(kNbitsRows), print_row);

}  // namespace
}  // namespace onebit::test
