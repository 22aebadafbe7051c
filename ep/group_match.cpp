// SPDX-License-Identifier: Apache-2.0
#include "group_match.h"

#include <algorithm>
#include <cmath>

namespace onebit {

namespace {

// `value` produced by a DequantizeLinear whose output feeds one node only.
const NodeInfo* private_dequantize(const GraphIndex& g, const std::string& value) {
  const NodeInfo* dq = g.producer(value);
  if (!is_op(dq, "DequantizeLinear") || sole_consumer(g, value) == nullptr) return nullptr;
  return dq;
}

struct Declined {
  std::string reason;
};

void decline_blocked(const NodeInfo& q) {
  if (q.int_attr("block_size").value_or(0) != 0) throw Declined{q.describe() + " uses blocked quantization"};
}

// DequantizeLinear's output_dtype (opset 23+; 0 = the scale's type): the group computes in float32.
bool dequantizes_to_float(const NodeInfo& dq) {
  const int64_t type = dq.int_attr("output_dtype").value_or(0);
  return type == 0 || type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}

void decline_unsupported_dequantize(const NodeInfo& dq) {
  decline_blocked(dq);
  if (!dequantizes_to_float(dq))
    throw Declined{dq.describe() + " has output_dtype " + std::to_string(*dq.int_attr("output_dtype")) +
                   "; only float32 is claimed"};
}

// `value` if it is one constant value of `type`.
std::optional<ConstTensor> constant_scalar(const GraphIndex& g, const std::string& value,
                                           ONNXTensorElementDataType type) {
  std::optional<ConstTensor> c = value.empty() ? std::nullopt : g.constant(value);
  if (c && (c->type != type || !c->is_scalar())) c.reset();
  return c;
}

// The activation's QuantizeLinear, when the group can run it itself: it quantizes a float that
// changes per call to uint8 with a constant per-tensor scale and zero point. When its output feeds
// other nodes too (sibling projections of one input), the group also writes the quantized values
// out for them. Anything else (int8, per-axis, of a constant) stays where it is; so does one that
// another group ends in, or that a sibling took first (leave_quantize_in, decided over the whole graph).
// With a non-constant B only a QuantizeLinear feeding this group alone is taken: its output could
// reach B too (x·xᵀ), directly or through ORT's nodes, and the fused node would depend on itself.
void take_static_quantize(const GraphIndex& g, const NodeInfo& dq_x, GroupMatch& m) {
  const NodeInfo* q = g.producer(m.x);
  if (!is_op(q, "QuantizeLinear") || q->int_attr("block_size").value_or(0) != 0) return;
  if (m.b_dynamic && sole_consumer(g, m.x) != &dq_x) return;
  if (g.constant(q->input(0)) || g.type_of(q->input(0)).element != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) return;
  const std::optional<ConstTensor> scale = constant_scalar(g, q->input(1), ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  if (!scale || !std::isfinite(scale->as_double(0)) || scale->as_double(0) <= 0) return;
  if (!constant_scalar(g, q->input(2), ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8)) return;
  m.x_float = q->input(0);
  m.quantize_in = q;
  m.nodes.push_back(q);
}

// Adds the activation DQ and the weight DQ feeding inputs a and b of `anchor`.
void match_qdq_operands(const GraphIndex& g, const NodeInfo& anchor, GroupMatch& m) {
  const NodeInfo* dq_x = private_dequantize(g, anchor.input(0));
  if (dq_x == nullptr) throw Declined{"input A is not a DequantizeLinear used only here"};
  const NodeInfo* dq_w = private_dequantize(g, anchor.input(1));
  if (dq_w == nullptr) throw Declined{"input B is not a DequantizeLinear used only here"};
  m.b_dynamic = !g.constant(dq_w->input(0));
  if (m.b_dynamic && anchor.op_type == "Gemm") throw Declined{"Gemm with a non-constant B '" + dq_w->input(0) + "'"};
  if (g.constant(dq_x->input(0)) != std::nullopt) throw Declined{"activation '" + dq_x->input(0) + "' is a constant"};
  decline_unsupported_dequantize(*dq_x);
  decline_unsupported_dequantize(*dq_w);
  m.b_axis = dq_w->int_attr("axis").value_or(1);
  m.x = dq_x->input(0);
  m.x_scale = dq_x->input(1);
  m.x_zero_point = dq_x->input(2);
  m.w = dq_w->input(0);
  m.b_scale = dq_w->input(1);
  m.b_zero_point = dq_w->input(2);
  m.nodes.push_back(dq_x);
  m.nodes.push_back(dq_w);
  take_static_quantize(g, *dq_x, m);
}

// A bias value: a float constant, or DequantizeLinear(int32 constant) without a zero point
// (the form ORT's WeightBiasQuantization produces), used only here.
bool take_bias(const GraphIndex& g, const std::string& value, GroupMatch& m) {
  if (g.constant(value)) {
    m.bias = value;
    return true;
  }
  const NodeInfo* dq = private_dequantize(g, value);
  if (dq == nullptr || !g.constant(dq->input(0)) || !dq->input(2).empty() || !dequantizes_to_float(*dq)) return false;
  m.bias = dq->input(0);
  m.bias_scale = dq->input(1);
  m.nodes.push_back(dq);
  return true;
}

// Optional Add(bias) after a MatMul, then optional QuantizeLinear.
void match_tail(const GraphIndex& g, GroupMatch& m, std::string out) {
  const NodeInfo* next = sole_consumer(g, out);
  if (m.bias.empty() && is_op(next, "Add")) {
    const std::string other = next->input(0) == out ? next->input(1) : next->input(0);
    if (other != out && take_bias(g, other, m)) {
      m.nodes.push_back(next);
      out = next->outputs.at(0);
      next = sole_consumer(g, out);
    }
  }
  if (is_op(next, "QuantizeLinear")) {
    decline_blocked(*next);
    m.y_scale = next->input(1);
    m.y_zero_point = next->input(2);
    m.quantize_out = next;
    m.nodes.push_back(next);
    out = next->outputs.at(0);
  }
  m.output = out;
}

void match_qdq(const GraphIndex& g, const NodeInfo& anchor, GroupMatch& m) {
  m.kind = GroupKind::QdqMatMul;
  if (anchor.op_type == "Gemm") {
    if (anchor.int_attr("transA").value_or(0) != 0) throw Declined{"Gemm with transA=1"};
    if (anchor.float_attr("alpha").value_or(1.0f) != 1.0f) throw Declined{"Gemm with alpha != 1"};
    m.b_is_nk = anchor.int_attr("transB").value_or(0) != 0;
    if (!anchor.input(2).empty()) {
      if (anchor.float_attr("beta").value_or(1.0f) != 1.0f) throw Declined{"Gemm with beta != 1"};
      if (!take_bias(g, anchor.input(2), m)) throw Declined{"Gemm input C is not a constant bias"};
    }
  }
  match_qdq_operands(g, anchor, m);
  match_tail(g, m, anchor.outputs.at(0));
}

// quantize_dynamic's tail after MatMulInteger: Cast(to float), then Mul by a scale product
// Mul(x_scale, b_scale) used only here, then the optional bias Add / QuantizeLinear. Without the
// Cast/Mul chain the MatMulInteger stands alone.
void match_dynamic_tail(const GraphIndex& g, GroupMatch& m) {
  const NodeInfo* cast = sole_consumer(g, m.output);
  if (!is_op(cast, "Cast") || cast->int_attr("to") != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) return;
  const std::string acc_float = cast->outputs.at(0);
  const NodeInfo* mul = sole_consumer(g, acc_float);
  if (!is_op(mul, "Mul")) return;
  const std::string scales = mul->input(0) == acc_float ? mul->input(1) : mul->input(0);
  const NodeInfo* scales_mul = g.producer(scales);
  if (scales == acc_float || !is_op(scales_mul, "Mul") || sole_consumer(g, scales) == nullptr) return;
  // The weight scale is the constant factor; read_group checks both. With a non-constant B both
  // may be per call, and which is which does not matter: the float32 product commutes.
  const bool b_first = g.constant(scales_mul->input(0)).has_value();
  m.kind = GroupKind::DynamicMatMulInteger;
  m.b_scale = scales_mul->input(b_first ? 0 : 1);
  m.x_scale = scales_mul->input(b_first ? 1 : 0);
  m.nodes.insert(m.nodes.end(), {scales_mul, cast, mul});
  match_tail(g, m, mul->outputs.at(0));
  if (m.b_dynamic) return;  // both operands' DynamicQuantizeLinears stay with ORT
  // Its DynamicQuantizeLinear joins the group; if other nodes read its outputs too, the group writes
  // them out (a sibling that took it first, or other readers of its outputs than quantize_dynamic
  // chains, leave it to ORT: leave_quantize_in, decided over the whole graph).
  const NodeInfo* dql = g.producer(m.x);
  if (is_op(dql, "DynamicQuantizeLinear") && dql->outputs.size() == 3 && dql->outputs[1] == m.x_scale &&
      dql->outputs[2] == m.x_zero_point) {
    m.x_float = dql->input(0);
    m.quantize_in = dql;
    m.nodes.push_back(dql);
  }
}

bool is_nbits(const NodeInfo& node) { return node.domain == "com.microsoft" && node.op_type == "MatMulNBits"; }

// MatMulNBits and a following bias Add (float output: a QuantizeLinear after it stays with ORT).
void match_nbits(const GraphIndex& g, const NodeInfo& anchor, GroupMatch& m) {
  m.kind = GroupKind::MatMulNBits;
  m.x = anchor.input(0);
  if (g.constant(m.x)) throw Declined{"activation '" + m.x + "' is a constant"};
  m.w = anchor.input(1);
  m.b_scale = anchor.input(2);
  m.b_zero_point = anchor.input(3);
  if (!anchor.input(4).empty()) throw Declined{"g_idx '" + anchor.input(4) + "' (act-order) is not claimed"};
  m.bias = anchor.input(5);
  m.output = anchor.outputs.at(0);
  const NodeInfo* add = sole_consumer(g, m.output);
  if (!m.bias.empty() || !is_op(add, "Add")) return;
  const std::string other = add->input(0) == m.output ? add->input(1) : add->input(0);
  const std::optional<ConstTensor> bias = g.constant(other);
  if (other == m.output || !bias || bias->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || bias->shape.size() != 1)
    return;
  m.bias = other;
  m.nodes.push_back(add);
  m.output = add->outputs.at(0);
}

void match_single_node(const GraphIndex& g, const NodeInfo& anchor, GroupMatch& m) {
  if (anchor.op_type == "QLinearMatMul") {
    m.kind = GroupKind::QLinearMatMul;
    m.x = anchor.input(0);
    m.x_scale = anchor.input(1);
    m.x_zero_point = anchor.input(2);
    m.w = anchor.input(3);
    m.b_scale = anchor.input(4);
    m.b_zero_point = anchor.input(5);
    m.y_scale = anchor.input(6);
    m.y_zero_point = anchor.input(7);
  } else {
    m.kind = GroupKind::MatMulInteger;
    m.x = anchor.input(0);
    m.w = anchor.input(1);
    m.x_zero_point = anchor.input(2);
    m.b_zero_point = anchor.input(3);
  }
  // A constant A (say W·x written as MatMulInteger(W, x)) is not an input of the fused node.
  if (g.constant(m.x)) throw Declined{"activation '" + m.x + "' is a constant"};
  m.b_dynamic = !g.constant(m.w);
  m.output = anchor.outputs.at(0);
  if (m.kind == GroupKind::MatMulInteger) match_dynamic_tail(g, m);
}

}  // namespace

void leave_quantize_in(GroupMatch& m) {
  if (m.quantize_in == nullptr) return;
  m.nodes.erase(std::find(m.nodes.begin(), m.nodes.end(), m.quantize_in));
  m.quantize_in = nullptr;
  m.x_float.clear();
}

bool is_anchor(const NodeInfo& node) {
  return is_nbits(node) || (is_onnx(node) && (node.op_type == "MatMul" || node.op_type == "Gemm" ||
                                              node.op_type == "QLinearMatMul" || node.op_type == "MatMulInteger"));
}

MatchResult match_group(const GraphIndex& g, const NodeInfo& anchor) {
  GroupMatch m;
  m.anchor = &anchor;
  try {
    if (is_nbits(anchor))
      match_nbits(g, anchor, m);
    else if (anchor.op_type == "MatMul" || anchor.op_type == "Gemm")
      match_qdq(g, anchor, m);
    else
      match_single_node(g, anchor, m);
  } catch (const Declined& d) {
    return d.reason;
  }
  m.nodes.push_back(&anchor);
  for (const NodeInfo* node : m.nodes)
    for (const std::vector<std::string>* names : {&node->inputs, &node->outputs})
      for (const std::string& name : *names)
        if (g.is_ambiguous(name))
          return "value name '" + name + "' of " + node->describe() +
                 " stands for several values (their names differ after a NUL byte, where ORT's C API cuts them)";
  return m;
}

}  // namespace onebit
