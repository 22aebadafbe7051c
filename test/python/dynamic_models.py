# SPDX-License-Identifier: Apache-2.0
"""Float models for onnxruntime.quantization, used by test_dynamic_quant.py, test_activation_matmul.py
and bench/bench_dynamic.py: DynamicQuantizeLinear alone, MatMuls sharing one input, a small transformer encoder (BERT layout:
attention with Q/K/V/output projections, LayerNorm, a GELU feed-forward, mean pooling), and
attention's activation x activation MatMul with the three quantized forms ORT's quantizers give it."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static


def finish(graph) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # onnxruntime 1.30 reads IR <= 13
    return model


def dynamic_quantize_linear() -> onnx.ModelProto:
    """x (float, any shape) -> DynamicQuantizeLinear -> q (uint8), s, z: the operator alone."""
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"])
    graph = helper.make_graph(
        [node],
        "dql",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [
            helper.make_tensor_value_info(n, t, None)
            for n, t in (("q", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8))
        ],
    )
    return finish(graph)


def float_matmuls(x_shape, weights, bias=None, seed=0) -> onnx.ModelProto:
    """x -> MatMul(x, W_i) [+ bias_i] for each (K, N) in weights, all on the same x (one DQL feeds all)."""
    rng = np.random.default_rng(seed)
    K = weights[0][0]
    nodes, inits, outputs = [], [], []
    for i, (k, n) in enumerate(weights):
        assert k == K
        inits.append(numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), f"W{i}"))
        out = f"y{i}"
        if bias:
            inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), f"b{i}"))
            nodes.append(helper.make_node("MatMul", ["x", f"W{i}"], [f"h{i}"], name=f"mm{i}"))
            nodes.append(helper.make_node("Add", [f"h{i}", f"b{i}"], [out], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("MatMul", ["x", f"W{i}"], [out], name=f"mm{i}"))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape[:-1]) + [K])
    return finish(helper.make_graph(nodes, "float_matmuls", [x], outputs, inits))


def encoder(layers=2, hidden=64, heads=4, ffn=256, seed=0) -> onnx.ModelProto:
    """hidden states x[batch, seq, hidden] -> `layers` post-LN transformer layers -> mean over seq."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    head = hidden // heads

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op, inputs, **attrs):
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{len(nodes)}", **attrs))
        return out

    def linear(x, name, k, n):
        w = const(f"{name}.W", (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32))
        b = const(f"{name}.b", (rng.standard_normal(n) * 0.02).astype(np.float32))
        return node("Add", [node("MatMul", [x, w]), b])

    def layer_norm(x, name):
        g = const(f"{name}.g", np.ones(hidden, np.float32))
        b = const(f"{name}.b", np.zeros(hidden, np.float32))
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)

    split_shape = const("split_heads", np.array([0, 0, heads, head], np.int64))
    merge_shape = const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = const("attention_scale", np.array(1 / np.sqrt(head), np.float32))
    half, one, rsqrt2 = (
        const("half", np.float32(0.5)),
        const("one", np.float32(1)),
        const("rsqrt2", np.float32(2**-0.5)),
    )

    x = "x"
    for i in range(layers):

        def heads_of(t):
            return node("Transpose", [node("Reshape", [t, split_shape])], perm=[0, 2, 1, 3])

        q = heads_of(linear(x, f"l{i}.q", hidden, hidden))
        k = node("Transpose", [node("Reshape", [linear(x, f"l{i}.k", hidden, hidden), split_shape])], perm=[0, 2, 3, 1])
        v = heads_of(linear(x, f"l{i}.v", hidden, hidden))
        probs = node("Softmax", [node("Mul", [node("MatMul", [q, k]), scale])], axis=-1)
        context = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        x = layer_norm(node("Add", [x, linear(context, f"l{i}.o", hidden, hidden)]), f"l{i}.ln1")
        up = linear(x, f"l{i}.up", hidden, ffn)
        gelu = node("Mul", [node("Mul", [up, half]), node("Add", [one, node("Erf", [node("Mul", [up, rsqrt2])])])])
        x = layer_norm(node("Add", [x, linear(gelu, f"l{i}.down", ffn, hidden)]), f"l{i}.ln2")
    nodes.append(helper.make_node("ReduceMean", [x], ["embedding"], name="pool", axes=[1], keepdims=0))
    graph = helper.make_graph(
        nodes,
        "encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, None)],
        inits,
    )
    return finish(graph)


def dynamic_quantized(
    model, directory: pathlib.Path, per_channel=True, weight_type=QuantType.QInt8, reduce_range=False
) -> onnx.ModelProto:
    """quantize_dynamic(model) as a new model (files in `directory`)."""
    src, dst = pathlib.Path(directory) / "float.onnx", pathlib.Path(directory) / "dynamic.onnx"
    onnx.save(model, src)
    quantize_dynamic(src, dst, per_channel=per_channel, weight_type=weight_type, reduce_range=reduce_range)
    return onnx.load(dst)


def attention_matmul(a_shape, b_shape, probabilities=False) -> onnx.ModelProto:
    """y = a @ b with both operands graph inputs: attention's QKᵀ ([B,H,S,D] x [B,H,D,S]) or PV
    ([B,H,S,S] x [B,H,S,D]; probabilities=True feeds a through a Softmax, as attention does)."""
    nodes, a = [], "a"
    if probabilities:
        nodes.append(helper.make_node("Softmax", ["a"], ["p"], name="softmax", axis=-1))
        a = "p"
    nodes.append(helper.make_node("MatMul", [a, "b"], ["y"], name="attention_matmul"))
    graph = helper.make_graph(
        nodes,
        "attention_matmul",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape)),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b_shape)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return finish(graph)


class _Feeds:
    """A CalibrationDataReader over a list of feed dicts."""

    def __init__(self, feeds):
        self.feeds = iter(feeds)

    def get_next(self):
        return next(self.feeds, None)


def activation_quantized(model, directory: pathlib.Path, form: str, calibration=()) -> onnx.ModelProto:
    """An activation x activation MatMul quantized the three ways ORT's quantizers do it:
    "dynamic": quantize_dynamic with MatMulConstBOnly off (DynamicQuantizeLinear on both inputs ->
    MatMulInteger -> Cast -> Mul(a_scale·b_scale)); "qlinear": quantize_static, QOperator format
    (QLinearMatMul); "qdq": quantize_static, QDQ format (DQ on both inputs -> MatMul). The static
    forms calibrate on `calibration` (feed dicts); activations uint8, per tensor."""
    src, dst = pathlib.Path(directory) / "float.onnx", pathlib.Path(directory) / f"{form}.onnx"
    onnx.save(model, src)
    if form == "dynamic":
        quantize_dynamic(src, dst, extra_options={"MatMulConstBOnly": False})
    else:
        quantize_static(
            src,
            dst,
            _Feeds(calibration),
            op_types_to_quantize=["MatMul"],
            quant_format=QuantFormat.QOperator if form == "qlinear" else QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
    return onnx.load(dst)
