// SPDX-License-Identifier: Apache-2.0
#include "group_plan.h"

#include <cmath>
#include <optional>

#include "engine/batch_broadcast.h"
#include "engine/shared_weights.h"
#include "kernels/page_out.h"

namespace onebit {

namespace {

void require(bool ok, const std::string& reason) {
  if (!ok) throw UnsupportedGroup(reason);
}

std::optional<QType> qtype_of(ONNXTensorElementDataType t) {
  if (t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8) return QType::Int8;
  if (t == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8) return QType::Uint8;
  return std::nullopt;
}

ConstTensor need_constant(const GraphIndex& g, const std::string& value, const char* role) {
  auto t = g.constant(value);
  require(t.has_value(), std::string(role) + " '" + value + "' is not a constant initializer");
  return *t;
}

bool is_scale_type(ONNXTensorElementDataType t, bool allow_half) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || (allow_half && t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16);
}

// Quantization scales must be positive and finite; anything else is left to ORT's CPU EP.
void require_positive_scales(const ConstTensor& s, const std::string& role) {
  for (size_t i = 0; i < s.count(); ++i) {
    const double v = s.as_double(i);
    // The reason is built only for a bad value: per-channel scales are many (formatting each cost
    // about 5 % of a SmolLM2 session's creation).
    if (!(std::isfinite(v) && v > 0))
      throw UnsupportedGroup(role + " holds " + std::to_string(v) + "; expected a positive finite scale");
  }
}

// A per-tensor scale: one float element.
ConstTensor scalar_scale(const GraphIndex& g, const std::string& value, const char* role, bool allow_half) {
  ConstTensor s = need_constant(g, value, role);
  require(is_scale_type(s.type, allow_half), std::string(role) + " '" + value + "' has type " + type_name(s.type));
  require(s.is_scalar(),
          std::string(role) + " '" + value + "' is not per-tensor (shape " + shape_string(s.shape) + ")");
  require_positive_scales(s, std::string(role) + " '" + value + "'");
  return s;
}

// A zero point: absent (0), or one element of the quantized type `type`.
int32_t scalar_zero_point(const GraphIndex& g, const std::string& value, QType type, const char* role) {
  if (value.empty()) return 0;
  ConstTensor zp = need_constant(g, value, role);
  require(qtype_of(zp.type) == type, std::string(role) + " '" + value + "' has type " + type_name(zp.type));
  require(zp.is_scalar(),
          std::string(role) + " '" + value + "' is not per-tensor (shape " + shape_string(zp.shape) + ")");
  return zp.as_int(0);
}

// Weight scales or zero points: 1 value, or N values along the output-channel axis.
void require_per_channel_count(const ConstTensor& t, int64_t N, const std::string& role) {
  // Per tensor: a scalar or a one-element 1-D tensor (ORT refuses e.g. [1, 1] for DequantizeLinear).
  const bool ok = t.is_scalar() || (t.shape.size() == 1 && t.shape[0] == N);
  require(ok, role + " has shape " + shape_string(t.shape) + "; expected one value or [" + std::to_string(N) + "]");
}

// A value computed per call that must hold one element of `type` (Compute checks the count).
// With `declared_one` its declared shape must say so (every dim 1): a symbolic or unknown one may
// carry N values at run time where ORT allows that (MatMulInteger's b_zero_point, a Mul's scale),
// which ORT runs and a claimed group would refuse at every call.
void require_runtime_scalar(const GraphIndex& g, const std::string& value, ONNXTensorElementDataType type,
                            const char* role, bool declared_one = false) {
  const ValueType t = g.type_of(value);
  require(t.element == type,
          std::string(role) + " '" + value + "' has type " + type_name(t.element) + "; expected " + type_name(type));
  require(!declared_one || t.shape.has_value(),
          std::string(role) + " '" + value + "' has an unknown shape; expected one value");
  bool one = true;
  const std::vector<int64_t> shape = t.shape.value_or(std::vector<int64_t>{});
  for (int64_t d : shape) one = one && (d == 1 || (d < 0 && !declared_one));
  require(one, std::string(role) + " '" + value + "' has shape " + shape_string(shape) + "; expected one value");
}

void read_activation(const GroupMatch& m, const GraphIndex& g, GroupPlan& plan) {
  const ValueType x = g.type_of(m.x);
  const auto type = qtype_of(x.element);
  require(type.has_value(), "activation '" + m.x + "' has type " + type_name(x.element) + "; expected int8 or uint8");
  plan.x_type = *type;
  require(x.shape.has_value() && x.shape->size() >= plan.x_min_rank && x.shape->size() <= plan.x_max_rank,
          "activation '" + m.x + "' has rank " + std::to_string(x.shape ? x.shape->size() : 0) +
              "; supported ranks are " + std::to_string(plan.x_min_rank) + " to " + std::to_string(plan.x_max_rank));
  const int64_t k = x.shape->back();
  require(k < 0 || plan.K < 0 || k == plan.K,
          "activation '" + m.x + "' has K=" + std::to_string(k) + " but the weight has K=" + std::to_string(plan.K));
  if (plan.K < 0) plan.K = k;  // a non-constant B's K declared only on the activation's side
  // Rows per batch entry: a 2-D weight takes every leading dim as rows.
  plan.declared_rows = 1;
  for (size_t i = plan.b_batch.empty() ? 0 : x.shape->size() - 2; i + 1 < x.shape->size(); ++i)
    plan.declared_rows = (*x.shape)[i] < 0 || plan.declared_rows < 0 ? -1 : plan.declared_rows * (*x.shape)[i];
  if (!plan.b_batch.empty()) {
    const std::vector<int64_t> x_batch(x.shape->begin(), x.shape->end() - 2);
    require(batches_may_broadcast(x_batch, plan.b_batch),
            "activation '" + m.x + "' batch dims " + shape_string(*x.shape) + " do not broadcast with the weight's " +
                shape_string(plan.b_batch));
  }
  if (!m.x_float.empty()) {
    const ONNXTensorElementDataType t = g.type_of(m.x_float).element;
    require(t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "activation '" + m.x_float + "' has type " + type_name(t));
  }
  if (m.quantize_in != nullptr && m.quantize_in->op_type == "QuantizeLinear") {  // uint8 with constant parameters
    require(plan.x_type == QType::Uint8, "the fused QuantizeLinear of '" + m.x_float + "' does not produce uint8");
    plan.x_source = ActivationSource::QuantizeLinear;
    plan.x_quantize.scale =
        static_cast<float>(scalar_scale(g, m.quantize_in->input(1), "QuantizeLinear scale", false).as_double(0));
    plan.x_quantize.zero_point =
        scalar_zero_point(g, m.quantize_in->input(2), QType::Uint8, "QuantizeLinear zero point");
  } else if (!m.x_float.empty()) {  // a fused DynamicQuantizeLinear: uint8, scale and zero point per call
    plan.x_source = ActivationSource::DynamicQuantizeLinear;
    return;
  }
  const bool integer = m.kind == GroupKind::DynamicMatMulInteger || (m.kind == GroupKind::MatMulInteger && m.b_dynamic);
  if (integer && !m.x_zero_point.empty() && !g.constant(m.x_zero_point)) {
    require_runtime_scalar(g, m.x_zero_point, element_type_of(plan.x_type), "activation zero point");
    plan.x_zero_point_input = m.x_zero_point;
    return;
  }
  plan.x_zero_point = scalar_zero_point(g, m.x_zero_point, plan.x_type, "activation zero point");
}

// A non-constant B: its type and declared shape; a per-tensor zero point, constant or (in the
// MatMulInteger kinds, as quantize_dynamic writes them) read per call.
void read_call_operand(const GroupMatch& m, const GraphIndex& g, GroupPlan& plan) {
  const ValueType b = g.type_of(m.w);
  const auto type = qtype_of(b.element);
  require(type.has_value(), "B '" + m.w + "' has type " + type_name(b.element) + "; expected int8 or uint8");
  require(b.shape.has_value() && b.shape->size() >= 2 && b.shape->size() <= 4,
          "B '" + m.w + "' has rank " + std::to_string(b.shape ? b.shape->size() : 0) + "; supported ranks are 2 to 4");
  plan.b_per_call = true;
  plan.b_type = *type;
  plan.b_name = m.w;
  plan.b_batch.assign(b.shape->begin(), b.shape->end() - 2);
  plan.K = (*b.shape)[b.shape->size() - 2];
  plan.N = b.shape->back();
  require(plan.K <= kMaxK, "B '" + m.w + "' has K=" + std::to_string(plan.K) + " > " + std::to_string(kMaxK) +
                               " (int32 accumulators could overflow)");
  const bool integer = m.kind == GroupKind::MatMulInteger || m.kind == GroupKind::DynamicMatMulInteger;
  if (integer && !m.b_zero_point.empty() && !g.constant(m.b_zero_point)) {
    require_runtime_scalar(g, m.b_zero_point, b.element, "B zero point", true);
    plan.b_zero_point_input = m.b_zero_point;
    return;
  }
  plan.b_zero_point = scalar_zero_point(g, m.b_zero_point, plan.b_type, "zero point of the non-constant B");
}

// A non-constant B is quantized per tensor: one scale (a per-channel one is rare and declined).
void require_per_tensor_call_operand(const GroupPlan& plan, const ConstTensor& scale, const std::string& role) {
  require(!plan.b_per_call || scale.is_scalar(),
          role + " has shape " + shape_string(scale.shape) + ": a non-constant B must be quantized per tensor");
}

void read_weight(const GroupMatch& m, const GraphIndex& g, GroupSource& src) {
  if (m.b_dynamic) return read_call_operand(m, g, src.plan);
  src.w = need_constant(g, m.w, "weight");
  const auto type = qtype_of(src.w.type);
  require(type.has_value(), "weight '" + m.w + "' has type " + type_name(src.w.type) + "; expected int8 or uint8");
  src.b_type = *type;
  src.b_is_nk = m.b_is_nk;
  const auto& shape = src.w.shape;
  const bool batched_ok = m.kind != GroupKind::QdqMatMul;
  require(shape.size() == 2 || (batched_ok && shape.size() == 3),
          "weight '" + m.w + "' has shape " + shape_string(shape) + "; expected rank 2" + (batched_ok ? " or 3" : ""));
  GroupPlan& plan = src.plan;
  plan.b_batch.assign(shape.begin(), shape.end() - 2);
  plan.K = shape[shape.size() - (m.b_is_nk ? 1 : 2)];
  plan.N = shape[shape.size() - (m.b_is_nk ? 2 : 1)];
  require(plan.K > 0 && plan.N > 0, "weight '" + m.w + "' is empty " + shape_string(shape));
  require(plan.K <= kMaxK, "weight '" + m.w + "' has K=" + std::to_string(plan.K) + " > " + std::to_string(kMaxK) +
                               " (int32 accumulators could overflow)");

  if (m.b_zero_point.empty()) return;
  ConstTensor zp = need_constant(g, m.b_zero_point, "weight zero point");
  require(qtype_of(zp.type) == src.b_type, "weight zero point '" + m.b_zero_point + "' has type " + type_name(zp.type));
  require_per_channel_count(zp, plan.N, "weight zero point '" + m.b_zero_point + "'");
  for (size_t i = 0; i < zp.count(); ++i) src.b_zero_points.push_back(zp.as_int(i));
}

// DequantizeLinear wants its zero point shaped like its scale (ORT fails such a model at run time:
// the EP must not run it instead).
void require_zero_point_like_scale(const GroupMatch& m, const GroupSource& src) {
  const size_t zero_points = src.b_zero_points.size(), scales = src.plan.epilogue.scale.size();
  require(zero_points == 0 || zero_points == scales, "weight zero point '" + m.b_zero_point + "' has " +
                                                         std::to_string(zero_points) + " values but weight scale '" +
                                                         m.b_scale + "' has " + std::to_string(scales) +
                                                         "; DequantizeLinear needs them shaped alike");
}

// Per output column n: s_x * s_w[n] for a QDQ group (exact in double).
void read_qdq_scales(const GroupMatch& m, const GraphIndex& g, GroupPlan& plan) {
  const double sx = scalar_scale(g, m.x_scale, "activation scale", false).as_double(0);
  ConstTensor sw = need_constant(g, m.b_scale, "weight scale");
  require(is_scale_type(sw.type, false), "weight scale '" + m.b_scale + "' has type " + type_name(sw.type));
  require_per_tensor_call_operand(plan, sw, "weight scale '" + m.b_scale + "'");
  require_per_channel_count(sw, plan.N, "weight scale '" + m.b_scale + "'");
  require_positive_scales(sw, "weight scale '" + m.b_scale + "'");
  if (sw.count() > 1) {
    const int64_t n_axis = m.b_is_nk ? 0 : 1;
    require(m.b_axis == n_axis || m.b_axis == n_axis - 2,
            "weight scale '" + m.b_scale + "' is per-channel along axis " + std::to_string(m.b_axis) +
                ", not the output-channel axis " + std::to_string(n_axis));
  }
  for (size_t i = 0; i < sw.count(); ++i) plan.epilogue.scale.push_back(sx * sw.as_double(i));
}

void read_bias(const GroupMatch& m, const GraphIndex& g, GroupPlan& plan, size_t x_rank) {
  if (m.bias.empty()) return;
  ConstTensor b = need_constant(g, m.bias, "bias");
  bool row_shaped = b.count() == static_cast<size_t>(plan.N) && !b.shape.empty() && b.shape.size() <= x_rank;
  for (size_t i = 0; row_shaped && i + 1 < b.shape.size(); ++i) row_shaped = b.shape[i] == 1;
  require(row_shaped,
          "bias '" + m.bias + "' has shape " + shape_string(b.shape) + "; expected [" + std::to_string(plan.N) + "]");
  if (m.bias_scale.empty()) {
    require(b.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "bias '" + m.bias + "' has type " + type_name(b.type));
    for (size_t n = 0; n < b.count(); ++n) plan.epilogue.bias.push_back(b.as_double(n));
    return;
  }
  require(b.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
          "quantized bias '" + m.bias + "' has type " + type_name(b.type));
  ConstTensor s = need_constant(g, m.bias_scale, "bias scale");
  require(is_scale_type(s.type, false), "bias scale '" + m.bias_scale + "' has type " + type_name(s.type));
  require_per_channel_count(s, plan.N, "bias scale '" + m.bias_scale + "'");
  // DequantizeLinear computes in float32: keep that rounding.
  for (size_t n = 0; n < b.count(); ++n)
    plan.epilogue.bias.push_back(float(float(b.as_int(n)) * float(s.as_double(s.count() == 1 ? 0 : n))));
}

OutputKind quantized_output_kind(const GraphIndex& g, const std::string& output) {
  const ONNXTensorElementDataType t = g.type_of(output).element;
  const auto type = qtype_of(t);
  require(type.has_value(), "output '" + output + "' has type " + type_name(t) + "; expected int8 or uint8");
  return *type == QType::Int8 ? OutputKind::Int8 : OutputKind::Uint8;
}

void read_qdq_output(const GroupMatch& m, const GraphIndex& g, GroupPlan& plan) {
  if (m.y_scale.empty()) {
    const ONNXTensorElementDataType t = g.type_of(m.output).element;
    require(t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "output '" + m.output + "' has type " + type_name(t));
    plan.epilogue.kind = OutputKind::Float32;
    return;
  }
  plan.epilogue.kind = quantized_output_kind(g, m.output);
  plan.epilogue.y_scale = scalar_scale(g, m.y_scale, "output scale", false).as_double(0);
  const QType y_type = plan.epilogue.kind == OutputKind::Int8 ? QType::Int8 : QType::Uint8;
  plan.epilogue.y_zero_point = scalar_zero_point(g, m.y_zero_point, y_type, "output zero point");
}

// quantize_dynamic's Mul(x_scale, b_scale): the weight scales are constants; the activation
// scale is read per call unless it is a constant too. With a non-constant B both may be per call
// (the matcher names a constant factor b_scale, so a per-call b_scale has a per-call x_scale).
void read_dynamic_scales(const GroupMatch& m, const GraphIndex& g, GroupPlan& plan) {
  if (plan.b_per_call && !g.constant(m.b_scale)) {
    require_runtime_scalar(g, m.b_scale, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "B scale", true);
    require_runtime_scalar(g, m.x_scale, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "activation scale", true);
    plan.b_scale_input = m.b_scale;
    plan.x_scale_input = m.x_scale;
    return;
  }
  ConstTensor sw = need_constant(g, m.b_scale, "weight scale");
  require_per_tensor_call_operand(plan, sw, "weight scale '" + m.b_scale + "'");
  require(sw.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
          "weight scale '" + m.b_scale + "' has type " + type_name(sw.type));
  require_per_channel_count(sw, plan.N, "weight scale '" + m.b_scale + "'");
  for (size_t n = 0; n < sw.count(); ++n) plan.b_scale.push_back(static_cast<float>(sw.as_double(n)));
  if (auto sx = g.constant(m.x_scale)) {
    require(sx->type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && sx->count() == 1,
            "activation scale '" + m.x_scale + "' is not one float");
    for (float w : plan.b_scale) plan.epilogue.scale.push_back(static_cast<float>(float(sx->as_double(0)) * w));
    plan.b_scale.clear();
    return;
  }
  if (plan.x_source == ActivationSource::DynamicQuantizeLinear) return;
  require_runtime_scalar(g, m.x_scale, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "activation scale", plan.b_per_call);
  plan.x_scale_input = m.x_scale;
}

// QLinearMatMul requantizes with a_scale * b_scale / y_scale evaluated in the scales' own type,
// as the ONNX reference does.
void read_qlinear_scales(const GroupMatch& m, const GraphIndex& g, GroupPlan& plan) {
  const ConstTensor sa = scalar_scale(g, m.x_scale, "a_scale", true);
  const ConstTensor sy = scalar_scale(g, m.y_scale, "y_scale", true);
  ConstTensor sb = need_constant(g, m.b_scale, "b_scale");
  require(sb.type == sa.type && sy.type == sa.type, "QLinearMatMul scales of different types");
  require_per_tensor_call_operand(plan, sb, "b_scale '" + m.b_scale + "'");
  require_per_channel_count(sb, plan.N, "b_scale '" + m.b_scale + "'");
  require_positive_scales(sb, "b_scale '" + m.b_scale + "'");
  const bool half = sa.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
  auto in_type = [half](float v) { return half ? round_to_half(v) : v; };
  for (size_t n = 0; n < sb.count(); ++n) {
    const float ab = in_type(float(sa.as_double(0)) * float(sb.as_double(n)));
    plan.epilogue.scale.push_back(in_type(ab / float(sy.as_double(0))));
  }
  plan.epilogue.kind = quantized_output_kind(g, m.output);
  const QType y_type = plan.epilogue.kind == OutputKind::Int8 ? QType::Int8 : QType::Uint8;
  plan.epilogue.y_zero_point = scalar_zero_point(g, m.y_zero_point, y_type, "y_zero_point");
}

// MatMulNBits' attribute `name`, or `fallback` (its ONNX default; none: required).
int64_t nbits_attribute(const NodeInfo& node, const char* name, std::optional<int64_t> fallback) {
  const std::optional<int64_t> v = node.int_attr(name) ? node.int_attr(name) : fallback;
  require(v.has_value(), "attribute " + std::string(name) + " is missing");
  return *v;
}

// MatMulNBits: its attributes and constant B, scales and zero points, sized against each other
// (the packer checks them again), a float activation of K columns, a float output.
void read_nbits(const GroupMatch& m, const GraphIndex& g, GroupSource& src) {
  GroupPlan& plan = src.plan;
  NBitsWeights& w = src.nbits;
  w.K = nbits_attribute(*m.anchor, "K", std::nullopt);
  w.N = nbits_attribute(*m.anchor, "N", std::nullopt);
  w.bits = nbits_attribute(*m.anchor, "bits", 4);
  w.block_size = nbits_attribute(*m.anchor, "block_size", std::nullopt);
  plan.accuracy_level = nbits_attribute(*m.anchor, "accuracy_level", 0);
  require(w.bits == 4 || w.bits == 8, "bits=" + std::to_string(w.bits) + "; 4 and 8 are claimed");
  require(w.block_size >= 16 && w.block_size <= 256 && (w.block_size & (w.block_size - 1)) == 0,
          "block_size=" + std::to_string(w.block_size) + "; powers of two from 16 to 256 are claimed");
  require(w.K > 0 && w.N > 0, "K=" + std::to_string(w.K) + " N=" + std::to_string(w.N) + "; both must be positive");
  plan.K = w.K;
  plan.N = w.N;
  plan.x_source = ActivationSource::PerKBlock;
  const int64_t k_blocks = (w.K + w.block_size - 1) / w.block_size;

  const ConstTensor b = need_constant(g, m.w, "B");
  const std::vector<int64_t> b_shape{w.N, k_blocks, w.block_size * w.bits / 8};
  require(b.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
          "B '" + m.w + "' has type " + type_name(b.type) + "; expected uint8");
  require(b.shape == b_shape,
          "B '" + m.w + "' has shape " + shape_string(b.shape) + "; expected " + shape_string(b_shape));
  w.b = static_cast<const uint8_t*>(b.data);
  w.b_bytes = static_cast<int64_t>(b.count());
  src.w = b;

  const ConstTensor s = need_constant(g, m.b_scale, "scales");
  require(s.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
          "scales '" + m.b_scale + "' have type " + type_name(s.type) + "; only float scales are claimed");
  require(s.shape == std::vector<int64_t>{w.N * k_blocks} || s.shape == std::vector<int64_t>{w.N, k_blocks},
          "scales '" + m.b_scale + "' have shape " + shape_string(s.shape) + "; expected [" +
              std::to_string(w.N * k_blocks) + "] or [" + std::to_string(w.N) + "," + std::to_string(k_blocks) +
              "] (N × blocks)");
  w.scales = static_cast<const float*>(s.data);
  w.scale_count = static_cast<int64_t>(s.count());

  if (!m.b_zero_point.empty()) {
    const ConstTensor zp = need_constant(g, m.b_zero_point, "zero_points");
    const int64_t per_column = (k_blocks * w.bits + 7) / 8;
    require(zp.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
            "zero_points '" + m.b_zero_point + "' have type " + type_name(zp.type) + "; packed uint8 ones are claimed");
    require(zp.shape == std::vector<int64_t>{w.N * per_column} || zp.shape == std::vector<int64_t>{w.N, per_column},
            "zero_points '" + m.b_zero_point + "' have shape " + shape_string(zp.shape) + "; expected [" +
                std::to_string(w.N * per_column) + "] or [" + std::to_string(w.N) + "," + std::to_string(per_column) +
                "]");
    w.zero_points = static_cast<const uint8_t*>(zp.data);
    w.zero_point_bytes = static_cast<int64_t>(zp.count());
  }

  const ValueType x = g.type_of(m.x);
  require(x.element == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
          "activation '" + m.x + "' has type " + type_name(x.element));
  require(x.shape.has_value() && x.shape->size() >= plan.x_min_rank && x.shape->size() <= plan.x_max_rank,
          "activation '" + m.x + "' has rank " + std::to_string(x.shape ? x.shape->size() : 0) +
              "; supported ranks are " + std::to_string(plan.x_min_rank) + " to " + std::to_string(plan.x_max_rank));
  require(x.shape->back() < 0 || x.shape->back() == w.K, "activation '" + m.x +
                                                             "' has K=" + std::to_string(x.shape->back()) +
                                                             " but the node has K=" + std::to_string(w.K));
  read_bias(m, g, plan, x.shape->size());
  const ONNXTensorElementDataType y = g.type_of(m.output).element;
  require(y == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "output '" + m.output + "' has type " + type_name(y));
  plan.epilogue.kind = OutputKind::Float32;
}

}  // namespace

ONNXTensorElementDataType element_type_of(QType t) {
  return t == QType::Int8 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 : ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
}

GroupSource read_group(const GroupMatch& m, const GraphIndex& g) {
  GroupSource src;
  src.plan.name = m.anchor->describe();
  if (m.kind == GroupKind::MatMulNBits) {
    read_nbits(m, g, src);
    return src;
  }
  read_weight(m, g, src);
  read_activation(m, g, src.plan);
  switch (m.kind) {
    case GroupKind::QdqMatMul:
      read_qdq_scales(m, g, src.plan);
      require_zero_point_like_scale(m, src);
      read_bias(m, g, src.plan, g.type_of(m.x).shape->size());
      read_qdq_output(m, g, src.plan);
      break;
    case GroupKind::QLinearMatMul:
      read_qlinear_scales(m, g, src.plan);
      break;
    case GroupKind::MatMulInteger:
      src.plan.epilogue.kind = OutputKind::Int32;
      break;
    case GroupKind::DynamicMatMulInteger:
      read_dynamic_scales(m, g, src.plan);
      read_bias(m, g, src.plan, g.type_of(m.x).shape->size());
      read_qdq_output(m, g, src.plan);
      src.plan.epilogue.take_float32_steps();  // the chain's operators round after each step
      break;
    case GroupKind::MatMulNBits:
      break;  // read above
  }
  return src;
}

GroupPlan pack_group(GroupSource src, const WeightSharing& sharing, std::vector<PackOutcome>& outcomes) {
  GroupPlan plan = std::move(src.plan);
  if (plan.b_per_call) return plan;  // B is packed per call
  if (src.is_nbits()) {
    std::string error;
    plan.block_weights = shared_pack_nbits(src.nbits, sharing, error, &outcomes.emplace_back());
    require(plan.block_weights != nullptr, error);
    plan.block_bias.assign(plan.epilogue.bias.begin(), plan.epilogue.bias.end());  // float values, widened once
    (void)page_out(src.nbits.b, static_cast<size_t>(src.nbits.b_bytes));
    return plan;
  }
  const int64_t per_batch = plan.K * plan.N;
  const size_t batches = src.batches();
  const auto* bytes = static_cast<const uint8_t*>(src.w.data);
  const int32_t* zp = src.b_zero_points.empty() ? nullptr : src.b_zero_points.data();
  const auto zp_count = static_cast<int64_t>(src.b_zero_points.size());
  for (size_t b = 0; b < batches; ++b) {
    const uint8_t* w = bytes + b * per_batch;
    plan.weights.push_back(shared_pack_weights(w, src.b_type, plan.K, plan.N, src.b_is_nk, zp, zp_count, sharing,
                                               selected_k_group(), &outcomes.emplace_back()));
  }
  (void)page_out(bytes, src.w.count());  // ORT's copy is not read again (see page_out.h)
  return plan;
}

}  // namespace onebit
