// SPDX-License-Identifier: Apache-2.0
// Finds the quantized MatMul group around an anchor node (MatMul, Gemm, QLinearMatMul,
// MatMulInteger): which nodes to fuse and which value plays which role. Structure only;
// the values themselves are checked by read_group (group_plan.h).
// DynamicMatMulInteger is quantize_dynamic's chain, MatMulInteger → Cast(float) →
// Mul(·, Mul(x_scale, b_scale)) → [Add(bias)]: its activation scale and zero point come from a
// DynamicQuantizeLinear, fused too (the kernel then takes the float activation; with a constant B
// only); when other groups read its outputs too (Q/K/V), the first claimed writes them out for them,
// and the others read them per call. One read by anything else stays with ORT.
// A QDQ group's activation QuantizeLinear joins it likewise when it quantizes to uint8 with a
// constant per-tensor scale (else it stays with ORT); if other nodes read its output too (the
// q/k/v projections of one normed input), the group writes that output for them (only with a
// constant B: a non-constant one could depend on that output).
// Any kind but Gemm may have a non-constant B (activation × activation, b_dynamic): B is then
// packed per call, and the quantize_dynamic chain's two scales may both be per call.
// MatMulNBits (com.microsoft: A float, B packed 4/8-bit blocks, scales, [zero_points], [g_idx],
// [bias]) is one node, with a following bias Add where the model has one; read_group checks its
// attributes and constants.
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "graph_index.h"

namespace onebit {

enum class GroupKind { QdqMatMul, QLinearMatMul, MatMulInteger, DynamicMatMulInteger, MatMulNBits };

struct GroupMatch {
  GroupKind kind = GroupKind::QdqMatMul;
  const NodeInfo* anchor = nullptr;
  std::vector<const NodeInfo*> nodes;    // everything to fuse, anchor included
  std::string x, x_scale, x_zero_point;  // quantized activation; "" = absent zero point
  std::string x_float;                   // input of a fused DynamicQuantizeLinear or QuantizeLinear; "" = none
  const NodeInfo* quantize_in =
      nullptr;  // the activation's QuantizeLinear or DynamicQuantizeLinear (input x_float), if fused
  const NodeInfo* quantize_out = nullptr;  // the QuantizeLinear of the output, if the group ends in one
  std::string w, b_scale, b_zero_point;    // the weight (B); MatMulNBits: blob, block scales, packed zero points
  bool b_dynamic = false;                  // B is not a constant: it changes per call
  bool b_is_nk = false;                    // Gemm transB=1: W is [N, K]
  int64_t b_axis = 1;                      // the weight DequantizeLinear's axis attribute
  std::string bias;                        // float bias, or int32 bias with bias_scale
  std::string bias_scale;
  std::string y_scale, y_zero_point;  // QuantizeLinear / QLinearMatMul output
  std::string output;                 // the group's output value
};

// Either the group anchored at `anchor`, or why it is declined.
using MatchResult = std::variant<GroupMatch, std::string>;

// True for the op types a group can be anchored at (ONNX's, and com.microsoft's MatMulNBits).
bool is_anchor(const NodeInfo& node);

MatchResult match_group(const GraphIndex& graph, const NodeInfo& anchor);

// Leaves the activation's QuantizeLinear to ORT or to a sibling (another group ends in it, or took
// it first): the group then takes the quantized activation, as without it.
void leave_quantize_in(GroupMatch& m);

}  // namespace onebit
