# SPDX-License-Identifier: Apache-2.0
"""An EP-independent numpy reference for the models the tests run.

`reference_run(model, feeds)` evaluates an ONNX graph node by node. Quantized MatMul groups
(the forms the EP claims) are evaluated with the EP contract's exact semantics:

    acc   = (x - zx) . (W - zw)                                   exact integers
    v     = float64(acc) * (float64(sx) * float64(sw[n])) + float64(bias[n])
    float output: float32(v)
    int8/uint8:   clip(round_half_to_even(v / float64(sy)) + zy)

where bias[n] is the float32 value of the bias (a float initializer, or ONNX DequantizeLinear of
an int32 initializer, which is computed in float32). QLinearMatMul follows the ONNX reference
implementation (multiplier a_scale*b_scale/y_scale in the scales' dtype, then float64), and
MatMulInteger is exact. Every other node is evaluated with its ONNX semantics in numpy (float32
arithmetic like ORT's CPU kernels), or with onnx.reference for an op not listed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

INT_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def constants_of(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and "value" in _attrs(node):
            consts[node.output[0]] = numpy_helper.to_array(_attrs(node)["value"])
    return consts


@dataclass
class Group:
    """One fused quantized MatMul group, as the EP contract describes it."""

    nodes: list  # NodeProtos in the group
    x_name: str  # quantized activation (runtime)
    x_scale: np.ndarray
    x_zp: np.ndarray | None
    w: np.ndarray  # [K, N] (transposed already if transB=1)
    w_scale: np.ndarray  # scalar or [N]
    w_zp: np.ndarray | None  # scalar or [N]
    bias: np.ndarray | None  # float32 [N]
    y_scale: np.ndarray | None
    y_zp: np.ndarray | None
    y_dtype: np.dtype | None  # None = float output
    out_name: str
    reshape_out: bool = False  # Gemm output keeps rank 2


def _dq_value(consts, node):
    """Value of a DequantizeLinear whose inputs are all constant (ONNX semantics, float32)."""
    x = consts[node.input[0]]
    s = consts[node.input[1]]
    zp = consts[node.input[2]] if len(node.input) > 2 and node.input[2] else None
    return dequantize(x, s, zp, _attrs(node).get("axis", 1))


def find_groups(model: onnx.ModelProto) -> list[Group]:
    """Find the quantized MatMul groups (QDQ MatMul/Gemm forms) in a graph."""
    g = model.graph
    consts = constants_of(model)
    producer = {o: n for n in g.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    graph_outputs = {o.name for o in g.output}

    def const(name):
        return name in consts

    def sole_consumer(name):
        c = consumers.get(name, [])
        if len(c) == 1 and name not in graph_outputs:
            return c[0]
        return None

    groups = []
    for node in g.node:
        if node.op_type not in ("MatMul", "Gemm"):
            continue
        at = _attrs(node)
        trans_b = 0
        if node.op_type == "Gemm":
            if at.get("alpha", 1.0) != 1.0 or at.get("beta", 1.0) != 1.0 or at.get("transA", 0) != 0:
                continue
            trans_b = at.get("transB", 0)
        dq_x = producer.get(node.input[0])
        dq_w = producer.get(node.input[1])
        if dq_x is None or dq_w is None or dq_x.op_type != "DequantizeLinear" or dq_w.op_type != "DequantizeLinear":
            continue
        if const(dq_x.input[0]) or not const(dq_w.input[0]):
            continue
        if not all(const(i) for i in dq_x.input[1:] if i) or not all(const(i) for i in dq_w.input[1:] if i):
            continue
        if consts[dq_x.input[1]].size != 1:
            continue
        w = consts[dq_w.input[0]]
        if w.dtype not in INT_TYPES or w.ndim != 2:
            continue
        w_at = _attrs(dq_w)
        if w_at.get("block_size", 0):
            continue
        w_scale = consts[dq_w.input[1]]
        w_zp = consts[dq_w.input[2]] if len(dq_w.input) > 2 and dq_w.input[2] else None
        out_axis = 0 if trans_b else 1
        if w_scale.size != 1 and (w_at.get("axis", 1) % 2) != out_axis:
            continue
        if trans_b:
            w = np.ascontiguousarray(w.T)
        N = w.shape[1]
        nodes = [dq_x, dq_w, node]
        out = node.output[0]
        bias = None
        if node.op_type == "Gemm" and len(node.input) > 2 and node.input[2]:
            bname = node.input[2]
            bias = _const_bias(consts, producer, bname, nodes)
            if bias is None or bias.size != N:
                continue
        nxt = sole_consumer(out)
        if bias is None and nxt is not None and nxt.op_type == "Add":
            other = nxt.input[1] if nxt.input[0] == out else nxt.input[0]
            b = _const_bias(consts, producer, other, nodes, dry=True)
            if b is not None and b.size == N and b.ndim == 1:
                bias = _const_bias(consts, producer, other, nodes)
                nodes.append(nxt)
                out = nxt.output[0]
                nxt = sole_consumer(out)
        y_scale = y_zp = y_dtype = None
        if nxt is not None and nxt.op_type == "QuantizeLinear" and all(const(i) for i in nxt.input[1:] if i):
            ys = consts[nxt.input[1]]
            yz = consts[nxt.input[2]] if len(nxt.input) > 2 and nxt.input[2] else np.array(0, np.uint8)
            if ys.size == 1 and yz.dtype in INT_TYPES:
                y_scale, y_zp, y_dtype = ys, yz, yz.dtype
                nodes.append(nxt)
                out = nxt.output[0]
        groups.append(
            Group(
                nodes,
                dq_x.input[0],
                consts[dq_x.input[1]],
                consts[dq_x.input[2]] if len(dq_x.input) > 2 and dq_x.input[2] else None,
                w,
                w_scale,
                w_zp,
                bias,
                y_scale,
                y_zp,
                y_dtype,
                out,
            )
        )
    return groups


def _const_bias(consts, producer, name, nodes, dry=False):
    if name in consts:
        b = consts[name]
        return b.astype(np.float32) if b.dtype == np.float32 else None
    p = producer.get(name)
    if p is not None and p.op_type == "DequantizeLinear" and all(i in consts for i in p.input if i):
        if consts[p.input[0]].dtype != np.int32:
            return None
        if not dry:
            nodes.append(p)
        return _dq_value(consts, p)
    return None


# ---------------------------------------------------------------------------------------------
# Exact group arithmetic
# ---------------------------------------------------------------------------------------------


def exact_acc(x, x_zp, w, w_zp):
    """int64 accumulators of (x - zx) . (W - zw); x [..., K], w [K, N]."""
    xi = x.astype(np.int64) - (np.int64(0) if x_zp is None else x_zp.astype(np.int64).reshape(()))
    wi = w.astype(np.int64) - (
        np.int64(0)
        if w_zp is None
        else w_zp.astype(np.int64).reshape(-1)[None, :]
        if w_zp.size > 1
        else w_zp.astype(np.int64).reshape(())
    )
    # Exact integer matmul (int64 numpy matmul is exact for these sizes).
    return np.matmul(xi, wi)


def group_output(grp: Group, x: np.ndarray) -> np.ndarray:
    acc = exact_acc(x, grp.x_zp, grp.w, grp.w_zp)
    N = grp.w.shape[1]
    scale = np.float64(grp.x_scale.reshape(())) * np.broadcast_to(grp.w_scale.astype(np.float64).reshape(-1), (N,))
    v = acc.astype(np.float64) * scale
    if grp.bias is not None:
        v = v + grp.bias.astype(np.float32).astype(np.float64).reshape(-1)
    if grp.y_dtype is None:
        return v.astype(np.float32)
    lo, hi = np.iinfo(grp.y_dtype).min, np.iinfo(grp.y_dtype).max
    q = np.rint(v / np.float64(grp.y_scale.reshape(()))) + np.float64(grp.y_zp.reshape(()))
    return np.clip(q, lo, hi).astype(grp.y_dtype)


# ---------------------------------------------------------------------------------------------
# ONNX semantics of the remaining nodes
# ---------------------------------------------------------------------------------------------


def _bshape(param, x_ndim, axis):
    if param.size == 1:
        return param.reshape(())
    shape = [1] * x_ndim
    shape[axis % x_ndim] = param.size
    return param.reshape(shape)


def dequantize(x, scale, zp=None, axis=1):
    s = _bshape(scale, x.ndim, axis)
    xf = x.astype(np.float32)
    if zp is not None:
        xf = xf - _bshape(zp, x.ndim, axis).astype(np.float32)
    return (xf * s).astype(scale.dtype)


def quantize(x, scale, zp=None, axis=1, dtype=None):
    dtype = np.dtype(dtype if zp is None else zp.dtype) if (zp is not None or dtype) else np.dtype(np.uint8)
    s = _bshape(scale, x.ndim, axis)
    q = np.rint(np.divide(x, s).astype(x.dtype))
    if zp is not None:
        q = q.astype(np.float64) + _bshape(zp, x.ndim, axis).astype(np.float64)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    return np.clip(q, lo, hi).astype(dtype)


def qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    """ONNX reference QLinearMatMul (onnx/reference/ops/op_qlinear_matmul.py)."""
    A = a.astype(np.int64) - a_zp.astype(np.int64).reshape(())
    B = b.astype(np.int64)
    bz = b_zp.astype(np.int64)
    B = B - (bz.reshape(-1) if bz.size > 1 else bz.reshape(()))
    C = np.matmul(A, B)
    mult = a_scale * b_scale / y_scale  # in the scales' dtype, as ONNX's reference does
    mult = mult.reshape(-1) if mult.size > 1 else mult.reshape(())
    D = C.astype(np.float64) * mult.astype(np.float64) + np.float64(y_zp.reshape(()))
    info = np.iinfo(y_zp.dtype)
    return np.clip(np.rint(D), info.min, info.max).astype(y_zp.dtype)


def matmul_integer(A, B, a_zp=None, b_zp=None):
    Ai = A.astype(np.int64)
    if a_zp is not None:
        Ai = Ai - a_zp.astype(np.int64).reshape(())
    Bi = B.astype(np.int64)
    if b_zp is not None:
        Bi = Bi - (b_zp.astype(np.int64).reshape(-1) if b_zp.size > 1 else b_zp.astype(np.int64).reshape(()))
    return np.matmul(Ai, Bi).astype(np.int32)


def _reshape(x, shape, allowzero=0):
    shape = [int(d) for d in shape]
    if not allowzero:
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _eval_node(node, vals, opset):
    ins = [vals[i] if i else None for i in node.input]
    at = _attrs(node)
    op = node.op_type
    if op == "DequantizeLinear":
        if at.get("block_size", 0):
            return _onnx_ref(node, ins, opset)
        return [dequantize(ins[0], ins[1], ins[2] if len(ins) > 2 else None, at.get("axis", 1))]
    if op == "QuantizeLinear":
        if at.get("block_size", 0):
            return _onnx_ref(node, ins, opset)
        return [quantize(ins[0], ins[1], ins[2] if len(ins) > 2 else None, at.get("axis", 1))]
    if op == "Relu":
        return [np.maximum(ins[0], 0).astype(ins[0].dtype)]
    if op == "Identity":
        return [ins[0]]
    if op == "Reshape":
        return [_reshape(ins[0], ins[1], at.get("allowzero", 0))]
    if op == "Add":
        return [(ins[0] + ins[1]).astype(np.result_type(ins[0], ins[1]))]
    if op == "MatMul":
        return [np.matmul(ins[0], ins[1]).astype(ins[0].dtype)]
    if op == "QLinearMatMul":
        return [qlinear_matmul(*ins)]
    if op == "MatMulInteger":
        return [matmul_integer(ins[0], ins[1], ins[2] if len(ins) > 2 else None, ins[3] if len(ins) > 3 else None)]
    return _onnx_ref(node, ins, opset)


def _onnx_ref(node, ins, opset):
    from onnx.reference import ReferenceEvaluator

    names = [i for i in node.input]
    feeds = {n: v for n, v in zip(names, ins) if n}
    ev = ReferenceEvaluator(node, opsets={"": opset})
    return ev.run(None, feeds)


def reference_run(model: onnx.ModelProto, feeds: dict, groups: list[Group] | None = None) -> list[np.ndarray]:
    """Outputs of `model` (in graph.output order) under the EP contract's semantics."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 21)
    groups = find_groups(model) if groups is None else groups
    in_group = {}
    for grp in groups:
        for n in grp.nodes:
            in_group[n.output[0]] = grp
    vals = dict(constants_of(model))
    vals.update(feeds)
    for node in model.graph.node:
        grp = in_group.get(node.output[0])
        if grp is not None:
            # A group is evaluated at its MatMul/Gemm (nodes[2]): the activation is produced
            # before it, and everything after it in the group only feeds the group.
            if node.output[0] == grp.nodes[2].output[0]:
                vals[grp.out_name] = group_output(grp, vals[grp.x_name])
            continue
        outs = _eval_node(node, vals, opset)
        for name, v in zip(node.output, outs):
            if name:
                vals[name] = v
    return [vals[o.name] for o in model.graph.output]
