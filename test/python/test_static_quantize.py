# SPDX-License-Identifier: Apache-2.0
"""A QDQ group's activation QuantizeLinear runs inside the group when it can:

- QuantizeLinear(float x, constant scale, uint8 zero point) -> DequantizeLinear -> MatMul: all of it
  on the EP (ORT's graph assignment), and the output equals the exact group computed from the
  activation ORT's own QuantizeLinear produces, bit for bit — on random values, on exact .5 ties,
  ±0, values far out of range, ±Inf and NaN (the identity weight makes the output the quantized
  activation itself, dequantized);
- shared by sibling groups (q/k/v of one normed input): they are one fused node, each runs it, and
  the first writes the quantized activation out for any other reader, equal to ORT's bit for bit, at
  rank 2 and 3 and with no rows;
- left with ORT, and the groups still claimed, when the QuantizeLinear quantizes to int8 or
  quantizes a constant; one that ends an earlier group (a stack of QDQ groups, or quantize_dynamic's
  chain) stays in that group.
"""

from __future__ import annotations

import ep_session as es
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from qdq_models import init, make_model
from reference import exact_acc

K = 24


def quantize_then_group(
    n_groups=1, q_type=TensorProto.UINT8, zp=131, scale=0.037, weights=None, N=K, rows=("rows",), quantized_output=False
):
    """x -> QuantizeLinear -> one DequantizeLinear per group -> MatMul with int8 weights (scale 1/64
    per column); the groups share the QuantizeLinear when n_groups > 1. `rows`: x's leading dims;
    `quantized_output`: the quantized activation is a graph output too."""
    rng = np.random.default_rng(5)
    zp_array = np.array(zp, np.uint8 if q_type == TensorProto.UINT8 else np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_x", "z_x"], ["x_q"], name="quantize")]
    inits = [init("s_x", np.array(scale, np.float32)), init("z_x", zp_array)]
    outputs = []
    for i in range(n_groups):
        w = weights if weights is not None else rng.integers(-127, 128, (K, N)).astype(np.int8)
        inits += [init(f"w{i}", w), init(f"s_w{i}", np.full(N, 1 / 64, np.float32))]
        nodes += [
            helper.make_node("DequantizeLinear", ["x_q", "s_x", "z_x"], [f"x_f{i}"], name=f"dq_x{i}"),
            helper.make_node("DequantizeLinear", [f"w{i}", f"s_w{i}"], [f"w_f{i}"], axis=1, name=f"dq_w{i}"),
            helper.make_node("MatMul", [f"x_f{i}", f"w_f{i}"], [f"y{i}"], name=f"matmul{i}"),
        ]
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [*rows, N]))
    if quantized_output:
        outputs.append(helper.make_tensor_value_info("x_q", q_type, [*rows, K]))
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [*rows, K])], outputs, inits)


def ort_quantize(x, scale, zp):
    """ORT's own QuantizeLinear (CPU EP) on x: the reference for the fused one."""
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("q", TensorProto.UINT8, list(x.shape))],
        [init("s", np.array(scale, np.float32)), init("z", np.array(zp, np.uint8))],
    )
    return es.run_cpu(model, {"x": x})[0]


def where(run, op_type):
    return sorted(ep for ep, nodes in run.assignment.items() for _, op in nodes if op == op_type)


def test_the_quantize_runs_in_the_group_and_equals_ort_quantize_then_exact_gemm():
    rng = np.random.default_rng(7)
    scale, zp = 0.037, 131
    x = (rng.standard_normal((9, K)) * 3).astype(np.float32)
    x[0, :8] = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 127.5, -127.5, 0.0], np.float32) * np.float32(scale)  # ties
    model = quantize_then_group(scale=scale, zp=zp)
    run = es.run_with_ep(model, {"x": x})
    assert run.counters["groups"] == 1
    assert where(run, "QuantizeLinear") == [es.EP_NAME]
    x_q = ort_quantize(x, scale, zp)
    w = onnx.numpy_helper.to_array([t for t in model.graph.initializer if t.name == "w0"][0])
    acc = exact_acc(x_q, np.array(zp), w, None)
    expected = (acc * (np.float64(np.float32(scale)) * np.float64(np.float32(1 / 64)))).astype(np.float32)
    np.testing.assert_array_equal(run.outputs[0][0], expected)


def test_edge_values_quantize_as_ort_does():
    scale, zp = 0.25, 128
    eye = np.eye(K, dtype=np.int8) * 64  # y = (x_q - zp) * scale: the quantized activation itself
    specials = np.array(
        [
            np.nan,
            np.inf,
            -np.inf,
            1e30,
            -1e30,
            -0.0,
            0.0,
            0.125,
            0.375,
            -0.125,
            31.875,
            32.0,
            -32.0,
            -32.125,
            1e-30,
            np.float32(np.finfo(np.float32).max),
        ],
        np.float32,
    )
    x = np.resize(specials, (5, K)).astype(np.float32)
    x[4] = np.random.default_rng(3).standard_normal(K).astype(np.float32) * 40
    model = quantize_then_group(scale=scale, zp=zp, weights=eye)
    ours = es.run_with_ep(model, {"x": x})
    assert where(ours, "QuantizeLinear") == [es.EP_NAME]
    expected = (ort_quantize(x, scale, zp).astype(np.float32) - zp) * np.float32(scale)
    np.testing.assert_array_equal(ours.outputs[0][0], expected)
    np.testing.assert_array_equal(ours.outputs[0][0], es.run_cpu(model, {"x": x})[0])


def test_a_quantize_shared_by_sibling_groups_runs_in_one_and_feeds_the_others_what_ort_would():
    rng = np.random.default_rng(8)
    scale, zp = 0.037, 131
    for shape, quantized_output in [((9, K), False), ((2, 5, K), True), ((0, K), True)]:
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        if x.size:
            x.reshape(-1, K)[0, :6] = np.array([0.5, 1.5, -0.5, -2.5, 130.5, -140.5], np.float32) * np.float32(
                scale
            )  # ties
        model = quantize_then_group(n_groups=3, scale=scale, zp=zp, rows=shape[:-1], quantized_output=quantized_output)
        run = es.run_with_ep(model, {"x": x})
        assert run.counters["groups"] == 3, shape
        assert run.fused_nodes == 1, shape  # siblings: one fused node, each group quantizing x itself
        assert where(run, "QuantizeLinear") == [es.EP_NAME], shape
        x_q = ort_quantize(x, scale, zp)
        for i in range(3):
            w = onnx.numpy_helper.to_array([t for t in model.graph.initializer if t.name == f"w{i}"][0])
            acc = exact_acc(x_q.reshape(-1, K), np.array(zp), w, None).reshape(*shape[:-1], K)
            expected = (acc * (np.float64(np.float32(scale)) * np.float64(np.float32(1 / 64)))).astype(np.float32)
            np.testing.assert_array_equal(run.outputs[0][i], expected, err_msg=f"{shape} group {i}")
        if quantized_output:
            np.testing.assert_array_equal(run.outputs[0][3], x_q, err_msg=f"{shape} quantized activation")


def test_unnamed_quantizers_are_told_apart_by_the_value_they_write():
    """Any number of nodes may have an empty name. Two unnamed QuantizeLinear, in a chain (x -> Q ->
    group 0 -> Relu -> Q -> group 1) and on independent inputs with their quantized values as model
    outputs: each group is a fused node of its own, every output exact."""
    rng = np.random.default_rng(12)
    weights = [rng.integers(-127, 128, (K, K)).astype(np.int8) for _ in range(2)]
    scale, zp = 0.05, 128
    inits = [init("s", np.array(scale, np.float32)), init("z", np.array(zp, np.uint8))]
    inits += [init(f"w{i}", w) for i, w in enumerate(weights)] + [init("s_w", np.array(1 / 64, np.float32))]

    def group(i, source):
        return [
            helper.make_node("QuantizeLinear", [source, "s", "z"], [f"q{i}"]),  # unnamed
            helper.make_node("DequantizeLinear", [f"q{i}", "s", "z"], [f"x{i}"], name=f"dq_x{i}"),
            helper.make_node("DequantizeLinear", [f"w{i}", "s_w"], [f"w_f{i}"], name=f"dq_w{i}"),
            helper.make_node("MatMul", [f"x{i}", f"w_f{i}"], [f"y{i}"], name=f"matmul{i}"),
        ]

    def value(name, elem=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, elem, ["rows", K])

    def expected(x, i):
        x_q = ort_quantize(x, scale, zp)
        acc = exact_acc(x_q, np.array(zp), weights[i], None)
        return (acc * (np.float64(np.float32(scale)) * np.float64(np.float32(1 / 64)))).astype(np.float32), x_q

    chain = make_model(
        group(0, "in0") + [helper.make_node("Relu", ["y0"], ["h"], name="relu")] + group(1, "h"),
        [value("in0")],
        [value("y1")],
        inits,
    )
    independent = make_model(
        group(0, "in0") + group(1, "in1"),
        [value("in0"), value("in1")],
        [value("y0"), value("y1"), value("q0", TensorProto.UINT8), value("q1", TensorProto.UINT8)],
        inits,
    )
    x = [(rng.standard_normal((5, K)) * 2).astype(np.float32) for _ in range(2)]
    run = es.run_with_ep(chain, {"in0": x[0]})
    assert (run.fused_nodes, run.groups) == (2, 2)
    y0, _ = expected(x[0], 0)
    np.testing.assert_array_equal(run.outputs[0][0], expected(np.maximum(y0, 0), 1)[0])
    run = es.run_with_ep(independent, {"in0": x[0], "in1": x[1]})
    assert (run.fused_nodes, run.groups) == (2, 2)
    for i in range(2):
        y, x_q = expected(x[i], i)
        np.testing.assert_array_equal(run.outputs[0][i], y, err_msg=f"group {i}")
        np.testing.assert_array_equal(run.outputs[0][2 + i], x_q, err_msg=f"quantized input {i}")


def test_an_int8_quantize_stays_with_ort():
    x = np.random.default_rng(9).standard_normal((4, K)).astype(np.float32)
    run = es.run_with_ep(quantize_then_group(q_type=TensorProto.INT8, zp=-3), {"x": x})
    assert run.counters["groups"] == 1
    assert where(run, "QuantizeLinear") == ["CPUExecutionProvider"]


def test_a_quantize_ending_a_dynamic_group_stays_with_it_and_both_groups_are_claimed():
    """quantize_dynamic's group ends in a QuantizeLinear (after Mul, or Add(bias)) that quantizes the
    next QDQ group's activation: the first group keeps it, the second takes its uint8 output."""
    rng = np.random.default_rng(10)
    for with_bias in (False, True):
        h = "h_biased" if with_bias else "h"
        nodes = [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_s", "x_z"]),
            helper.make_node("MatMulInteger", ["x_q", "w1", "x_z"], ["acc"]),
            helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["x_s", "w1_s"], ["scales"]),
            helper.make_node("Mul", ["acc_f", "scales"], ["h"]),
            helper.make_node("QuantizeLinear", [h, "s_h", "z_h"], ["h_q"], name="quantize"),
            helper.make_node("DequantizeLinear", ["h_q", "s_h", "z_h"], ["h_f"]),
            helper.make_node("DequantizeLinear", ["w2", "s_w2"], ["w2_f"], axis=1),
            helper.make_node("MatMul", ["h_f", "w2_f"], ["y"]),
        ]
        # Weights in 7 bits: no pair of uint8 x int8 products overflows int16, so ORT's integer
        # kernels (the reference here) are exact on every CPU, AVX2 without VNNI included.
        inits = [
            init("w1", rng.integers(-64, 64, (K, K)).astype(np.int8)),
            init("w1_s", np.array(0.01, np.float32)),
            init("s_h", np.array(0.05, np.float32)),
            init("z_h", np.array(128, np.uint8)),
            init("w2", rng.integers(-64, 64, (K, 8)).astype(np.int8)),
            init("s_w2", np.full(8, 1 / 64, np.float32)),
        ]
        if with_bias:
            nodes.insert(5, helper.make_node("Add", ["h", "b"], ["h_biased"]))
            inits.append(init("b", np.ones(K, np.float32)))
        model = make_model(
            nodes,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
            inits,
        )
        x = rng.standard_normal((4, K)).astype(np.float32)
        run = es.run_with_ep(model, {"x": x})
        assert run.counters["groups"] == 2, f"bias={with_bias}"
        assert where(run, "QuantizeLinear") == [es.EP_NAME]
        np.testing.assert_allclose(run.outputs[0][0], es.run_cpu(model, {"x": x})[0], rtol=0, atol=1e-4)


def test_a_quantize_of_a_constant_stays_with_ort():
    """Unoptimised, a QuantizeLinear of an initializer reaches the EP unfolded: it stays with ORT and
    the group takes its output (the fused node has no input for a constant it does not own)."""
    rng = np.random.default_rng(11)
    nodes = [
        helper.make_node("QuantizeLinear", ["x_c", "s", "z"], ["x_q"]),
        helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["x_f"]),
        helper.make_node("DequantizeLinear", ["w", "s_w"], ["w_f"], axis=1),
        helper.make_node("MatMul", ["x_f", "w_f"], ["h"]),
        helper.make_node("Add", ["h", "y_in"], ["y"]),
    ]
    inits = [
        init("x_c", (rng.standard_normal((5, K)) * 3).astype(np.float32)),
        init("s", np.array(0.05, np.float32)),
        init("z", np.array(128, np.uint8)),
        init("w", rng.integers(-127, 128, (K, 8)).astype(np.int8)),
        init("s_w", np.full(8, 1 / 64, np.float32)),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("y_in", TensorProto.FLOAT, [5, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 8])],
        inits,
    )
    feeds = {"y_in": np.zeros((5, 8), np.float32)}
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    run = es.run_with_ep(model, feeds, level=level)
    assert run.counters["groups"] == 1
    assert where(run, "QuantizeLinear") == ["CPUExecutionProvider"]
    np.testing.assert_allclose(run.outputs[0][0], es.run_cpu(model, feeds, level=level)[0], rtol=0, atol=1e-4)


def test_a_quantize_whose_output_also_reaches_b_stays_with_ort(monkeypatch):
    """x·xᵀ-like groups (ONEBIT_ACTIVATION_MATMULS=all claims them): the QuantizeLinear's output feeds
    the activation and, directly or through ORT's nodes, the non-constant B. Taking it would make
    the fused node read its own output; the group is claimed without it, as before."""
    monkeypatch.setenv("ONEBIT_ACTIVATION_MATMULS", "all")
    n = 32
    direct = [helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["b"])]
    through_ort = [
        helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["bt"]),
        helper.make_node("Transpose", ["bt"], ["bf"]),
        helper.make_node("QuantizeLinear", ["bf", "s", "z"], ["bq"]),
        helper.make_node("DequantizeLinear", ["bq", "s", "z"], ["b"]),
    ]
    x = np.random.default_rng(12).standard_normal((n, n)).astype(np.float32)
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for name, b_nodes in [("direct", direct), ("through ORT", through_ort)]:
        nodes = [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["x_q"], name="quantize"),
            helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["a"]),
            *b_nodes,
            helper.make_node("MatMul", ["a", "b"], ["y"]),
        ]
        model = make_model(
            nodes,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
            [init("s", np.array(0.037, np.float32)), init("z", np.array(131, np.uint8))],
        )
        run = es.run_with_ep(model, {"x": x}, level=level)
        assert run.counters["groups"] == 1, name
        assert ("quantize", "QuantizeLinear") in run.assignment["CPUExecutionProvider"], name
        np.testing.assert_allclose(
            run.outputs[0][0], es.run_cpu(model, {"x": x}, level=level)[0], rtol=0, atol=1e-4, err_msg=name
        )
