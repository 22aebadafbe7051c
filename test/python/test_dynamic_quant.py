# SPDX-License-Identifier: Apache-2.0
"""Dynamically quantized models (onnxruntime.quantization.quantize_dynamic).

quantize_dynamic turns each MatMul into DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q, x_zp,
w_zp) -> Cast(float) -> Mul(., Mul(x_scale, w_scale)) [-> Add(bias)]. The EP claims everything from
the MatMulInteger on and reads x_scale and x_zp per call; DynamicQuantizeLinear stays with ORT (one
DQL usually feeds several MatMuls, e.g. Q, K and V). Checked here, on models quantized in the test:

- every MatMulInteger group runs on the EP (trace counters and ORT's node assignment);
- the output equals, bit for bit, the model's own operators evaluated from the same integers:
  acc = (x_q - x_zp)·(W_q - w_zp) exact, p[n] = float32(x_scale·w_scale[n]) (the model's Mul),
  y = float32(acc)·p[n] [+ bias[n]] in float32, rounded after each step as Cast, Mul and Add do,
  with x_q, x_scale, x_zp from ONNX's reference DynamicQuantizeLinear (onnx.reference), so the DQL
  ORT ran is checked too; where ORT's u8·s8 kernel is exact also bit for bit ORT's CPU EP with graph optimizations off
  (it runs those operators one by one);
- ORT's own CPU EP (which runs its fused DynamicQuantizeMatMul) is within ORT_ULPS float32 ulps.

ORT's u8·s8 kernel is exact only on VNNI CPUs; on AVX2-only CPUs it saturates int16 pair sums of
full-range weights, so where ort_int8.py finds it saturating the models are quantized with
reduce_range (7-bit weights, as ORT advises for such CPUs), which keeps ORT exact and the bound
meaningful.
"""

from __future__ import annotations

import dynamic_models
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from dynamic_models import encoder, float_matmuls
from ep_session import assert_exact, create_ep_session, record_measurement, run_cpu, run_with_ep
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.quantization import QuantType
from ort_int8 import ort_u8s8_saturates

REDUCE_RANGE = ort_u8s8_saturates()


def dynamic_quantized(model, tmp_path, per_channel=True, weight_type=QuantType.QInt8):
    return dynamic_models.dynamic_quantized(model, tmp_path, per_channel, weight_type, reduce_range=REDUCE_RANGE)


# ORT computes float32(float32(acc) * p) (+ bias in float32): up to three float32 roundings where
# the EP rounds once, so |EP - ORT| <= 4 float32 ulps of the terms' magnitude.
ORT_ULPS = 4
EPS32 = float(np.finfo(np.float32).eps)


def reference_dql(x: np.ndarray):
    """ONNX's reference DynamicQuantizeLinear (onnx.reference): x_q, x_scale, x_zp. An empty x
    (which the reference cannot reduce) has no elements to quantize: scale and zero point unused."""
    if x.size == 0:
        return np.zeros(x.shape, np.uint8), np.float32(1.0), np.uint8(0)
    return ReferenceEvaluator(dynamic_models.dynamic_quantize_linear()).run(None, {"x": x})


def dynamic_groups(qmodel: onnx.ModelProto) -> dict:
    """Graph output name -> (W_q, w_zp, w_scale, bias or None), walking quantize_dynamic's chain."""
    consts = {t.name: numpy_helper.to_array(t) for t in qmodel.graph.initializer}
    consumer = {}
    producer = {o: n for n in qmodel.graph.node for o in n.output}
    for n in qmodel.graph.node:
        for i in n.input:
            consumer.setdefault(i, []).append(n)
    groups = {}
    for mmi in (n for n in qmodel.graph.node if n.op_type == "MatMulInteger"):
        (cast,) = consumer[mmi.output[0]]
        (mul,) = consumer[cast.output[0]]
        scales = producer[mul.input[1] if mul.input[0] == cast.output[0] else mul.input[0]]
        w_scale = next(consts[i] for i in scales.input if i in consts)
        out, bias = mul.output[0], None
        nxt = consumer.get(out, [])
        if len(nxt) == 1 and nxt[0].op_type == "Add":
            bias = consts[next(i for i in nxt[0].input if i != out)]
            out = nxt[0].output[0]
        groups[out] = (consts[mmi.input[1]], consts[mmi.input[3]], w_scale, bias)
    return groups


def chain_steps(acc: np.ndarray, p: np.ndarray, bias=None) -> np.ndarray:
    """The model's Cast(acc) -> Mul(p) -> [Add(bias)] in float32, rounded after each step."""
    v = acc.astype(np.float32) * p.astype(np.float32)
    return v if bias is None else v + bias.astype(np.float32)


def exact_outputs(qmodel, x: np.ndarray) -> dict:
    """The EP contract evaluated in numpy from the reference DQL's integers."""
    x_q, x_scale, x_zp = reference_dql(x)
    xi = x_q.astype(np.int64) - np.int64(x_zp)
    out = {}
    for name, (w, w_zp, w_scale, bias) in dynamic_groups(qmodel).items():
        acc = xi @ (w.astype(np.int64) - w_zp.astype(np.int64))
        assert np.abs(acc).max(initial=0) < 2**31
        p = (np.float32(x_scale) * w_scale.astype(np.float32)).astype(np.float32)  # the model's Mul
        out[name] = chain_steps(acc, p, bias)
    return out


def check_model(qmodel, feeds_x: list[np.ndarray], label: str):
    names = [o.name for o in qmodel.graph.output]
    n_groups = sum(n.op_type == "MatMulInteger" for n in qmodel.graph.node)
    run = run_with_ep(qmodel, [{"x": x} for x in feeds_x])
    assert run.groups == n_groups, f"{label}: {run.groups} of {n_groups} MatMulInteger groups claimed\n{run.stderr}"
    assert run.group_runs == n_groups * len(feeds_x), run.counters
    on_ep = {name for name, op in run.ep_nodes() if op == "MatMulInteger"}
    assert on_ep == {n.name for n in qmodel.graph.node if n.op_type == "MatMulInteger"}, run.assignment
    # Every DynamicQuantizeLinear runs on the EP: fused into its group, or, shared by several, into the
    # first claimed, which writes its outputs for the others; one whose outputs anything but
    # quantize_dynamic chains reads (here: the model returns them) stays with ORT.
    graph_outputs = {o.name for o in qmodel.graph.output}
    for dql in (n for n in qmodel.graph.node if n.op_type == "DynamicQuantizeLinear"):
        ours = not graph_outputs.intersection(dql.output)
        assert (dql.name in {name for name, _ in run.ep_nodes()}) == ours, (dql.name, ours, run.assignment)
    worst = 0.0
    for x, outputs in zip(feeds_x, run.outputs):
        exact = exact_outputs(qmodel, x)
        cpu = run_cpu(qmodel, {"x": x})
        unfused = (
            run_cpu(qmodel, {"x": x}, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
            if not ort_u8s8_saturates()
            else None
        )
        for i, (name, got, ort_y) in enumerate(zip(names, outputs, cpu)):
            assert_exact(got, exact[name], f"{label} {name} x{list(x.shape)}")
            if unfused is not None:
                assert_exact(got, unfused[i], f"{label} {name} x{list(x.shape)} vs ORT's operators one by one")
            # ORT's roundings are relative to the size of the product and the bias.
            w, w_zp, w_scale, bias = dynamic_groups(qmodel)[name]
            scale = np.abs(exact[name].astype(np.float64)) + (0 if bias is None else np.abs(bias))
            err = np.abs(got.astype(np.float64) - ort_y.astype(np.float64))
            assert (err <= ORT_ULPS * EPS32 * (scale + 1e-30)).all(), (
                f"{label} {name}: ORT CPU differs by up to {err.max()} (bound {ORT_ULPS} ulps)"
            )
            if got.size:
                worst = max(worst, float((err / (scale + 1e-30)).max()) / EPS32)
    record_measurement(f"dynamic {label}: ORT CPU vs EP at most {worst:.2f} float32 ulps (bound {ORT_ULPS})")


CASES = [
    # (label, x shapes per run, weights [(K, N)...], bias, per_channel, weight type)
    ("r2_tensor_s8", [(1, 64), (7, 64), (0, 64)], [(64, 48)], False, False, QuantType.QInt8),
    ("r2_channel_s8_bias", [(1, 64), (5, 64), (0, 64)], [(64, 48), (64, 32)], True, True, QuantType.QInt8),
    ("r2_tensor_u8_bias", [(3, 67)], [(67, 45)], True, False, QuantType.QUInt8),
    (
        "r3_channel_s8_bias",
        [(2, 5, 96), (1, 1, 96), (3, 0, 96)],
        [(96, 64), (96, 64), (96, 128)],
        True,
        True,
        QuantType.QInt8,
    ),
    ("r4_channel_s8", [(2, 3, 4, 40)], [(40, 24)], False, True, QuantType.QInt8),
    ("r4_tensor_u8_bias", [(1, 2, 3, 33), (2, 2, 1, 33)], [(33, 17)], True, False, QuantType.QUInt8),
    # One MatMul per model: its DQL is fused; K from 1 to past 8-lane multiples for the quantize loop.
    ("fused_dql_k1", [(1, 1), (9, 1)], [(1, 8)], True, True, QuantType.QInt8),
    ("fused_dql_k13", [(1, 13), (3, 13), (0, 13)], [(13, 20)], False, True, QuantType.QInt8),
    ("fused_dql_k300", [(1, 300), (17, 300)], [(300, 40)], True, True, QuantType.QInt8),
    # Outputs of 1 MiB and more are written with streaming stores (engine/host_leg.h).
    ("streamed_output", [(1024, 64), (1100, 64)], [(64, 512)], True, True, QuantType.QInt8),
]


@pytest.mark.parametrize("label,shapes,weights,bias,per_channel,weight_type", CASES, ids=[c[0] for c in CASES])
def test_quantize_dynamic_groups_on_ep(label, shapes, weights, bias, per_channel, weight_type, ep_lib, tmp_path):
    rank = len(shapes[0])
    x_shape = ["batch"] * (rank - 1) + [weights[0][0]]
    qmodel = dynamic_quantized(float_matmuls(x_shape, weights, bias), tmp_path, per_channel, weight_type)
    rng = np.random.default_rng(7)
    feeds = [(rng.standard_normal(s) * 3 + 0.5).astype(np.float32) for s in shapes]
    check_model(qmodel, feeds, label)


def test_quantize_dynamic_gemm(ep_lib, tmp_path):
    """quantize_dynamic rewrites Gemm(x, W, b, transB=1) into the same chain with an Add: claimed."""
    rng = np.random.default_rng(8)
    inits = [
        numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b"),
    ]
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "b"], ["y"], transB=1)],
        "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    qmodel = dynamic_quantized(model, tmp_path)
    check_model(qmodel, [rng.standard_normal((m, 64)).astype(np.float32) for m in (1, 6)], "gemm_transb1")


# Inputs at the edges of DynamicQuantizeLinear: all zero, all equal, a range without 0 on either
# side, exact .5 ties of x/scale. The model has one MatMul, so the EP runs the DQL itself; check_model
# checks it against ONNX's reference bit for bit through the exact outputs.
EDGE_INPUTS = {
    "all_zero": np.zeros((3, 16)),  # ORT's and the EP's scale 1, ONNX's reference 1/255: y = bias in each
    "all_equal_positive": np.full((3, 16), 2.5),
    "all_equal_negative": np.full((3, 16), -1.25),
    "range_above_zero": np.linspace(2.0, 5.0, 48).reshape(3, 16),
    "range_below_zero": np.linspace(-5.0, -2.0, 48).reshape(3, 16),
    "ties": np.array([[-127.5, 0.5, 1.5, 2.5, 127.5, -0.5, 3.5, 4.5] * 2] * 3),
}


@pytest.mark.parametrize("edge", sorted(EDGE_INPUTS))
def test_dynamic_quantize_edges(edge, ep_lib, tmp_path):
    qmodel = dynamic_quantized(float_matmuls(["batch", 16], [(16, 24)], bias=True), tmp_path)
    check_model(qmodel, [EDGE_INPUTS[edge].astype(np.float32)], f"edge {edge}")


def dql_and_ep_outputs(qmodel, x):
    """EP outputs of qmodel with its DQL's three outputs added as graph outputs, and ORT CPU's."""
    dql = next(n for n in qmodel.graph.node if n.op_type == "DynamicQuantizeLinear")
    m = onnx.ModelProto()
    m.CopyFrom(qmodel)
    for name, t in zip(dql.output, (TensorProto.UINT8, TensorProto.FLOAT, TensorProto.UINT8)):
        m.graph.output.append(helper.make_tensor_value_info(name, t, None))
    run = run_with_ep(m, {"x": x})
    assert run.groups == 1, run.stderr
    return run.outputs[0], run_cpu(m, {"x": x})


@pytest.mark.parametrize("special", ["inf", "-inf"])
def test_fused_dql_infinite_inputs(special, ep_lib, tmp_path):
    """±Inf in x with the DQL fused: the EP's DQL gives ORT's scale (Inf) and values, so the
    outputs equal ORT CPU's (NaN at the same places, the rest within the bound)."""
    qmodel = dynamic_quantized(float_matmuls(["batch", 16], [(16, 24)], bias=True), tmp_path)
    x = np.random.default_rng(4).standard_normal((3, 16)).astype(np.float32)
    x[1, 5] = np.float32(special)
    run = run_with_ep(qmodel, {"x": x})
    assert "DynamicQuantizeLinear" in {op for _, op in run.ep_nodes()}, run.assignment
    y, cpu = run.outputs[0][0], run_cpu(qmodel, {"x": x})[0]
    assert (np.isnan(y) == np.isnan(cpu)).all()
    finite = np.isfinite(y)
    assert np.allclose(y[finite], cpu[finite], rtol=ORT_ULPS * EPS32, atol=0), np.abs(y - cpu)[finite].max()


def test_fused_dql_nan_input(ep_lib, tmp_path):
    """A NaN in x with the DQL fused: ONNX's reference DQL gives scale NaN, so every output of the
    call is NaN (ORT's own DQL result depends on where the NaN sits, so ORT CPU is no reference)."""
    qmodel = dynamic_quantized(float_matmuls(["batch", 16], [(16, 24)], bias=True), tmp_path)
    x = np.random.default_rng(4).standard_normal((3, 16)).astype(np.float32)
    x[2, 15] = np.nan
    run = run_with_ep(qmodel, {"x": x})
    assert "DynamicQuantizeLinear" in {op for _, op in run.ep_nodes()}, run.assignment
    assert np.isnan(run.outputs[0][0]).all(), run.outputs[0][0]
    assert np.isnan(reference_dql(x)[1])


def test_all_zero_input(ep_lib, tmp_path):
    """All-zero x: ORT's DQL gives scale 1.0 where ONNX's reference gives 1/255 (x_q and x_zp are 0
    in both), so y = bias either way; the EP's y is exactly the bias, as ORT's."""
    qmodel = dynamic_quantized(float_matmuls(["batch", 16], [(16, 24)], bias=True), tmp_path)
    x = np.zeros((2, 16), np.float32)
    (y, x_q, x_scale, x_zp), cpu = dql_and_ep_outputs(qmodel, x)
    assert float(x_scale) == 1.0 and int(x_zp) == 0 and not x_q.any()
    ((_, _, _, bias),) = dynamic_groups(qmodel).values()
    assert_exact(y, np.broadcast_to(bias, y.shape).astype(np.float32), "all-zero x")
    assert_exact(y, cpu[0], "all-zero x vs ORT CPU")


@pytest.mark.parametrize("special", ["nan", "inf", "-inf"])
def test_nan_inf_inputs(special, ep_lib, tmp_path):
    """NaN/Inf in x: the EP computes with exactly the x_q, x_scale, x_zp ORT's DQL produced (ORT's
    DQL skips NaN in its min/max and quantizes NaN to 0; ±Inf gives scale Inf), and its float32
    scale product; the outputs equal ORT's CPU EP, NaN where ORT's are NaN."""
    qmodel = dynamic_quantized(float_matmuls(["batch", 16], [(16, 24)], bias=True), tmp_path)
    x = np.random.default_rng(3).standard_normal((3, 16)).astype(np.float32)
    x[1, 5] = np.float32(special)
    (y, x_q, x_scale, x_zp), cpu = dql_and_ep_outputs(qmodel, x)
    ((w, w_zp, w_scale, bias),) = dynamic_groups(qmodel).values()
    acc = (x_q.astype(np.int64) - np.int64(x_zp)) @ (w.astype(np.int64) - w_zp.astype(np.int64))
    p = (np.float32(x_scale) * w_scale).astype(np.float32)
    with np.errstate(invalid="ignore"):
        expected = chain_steps(acc, p, bias)
    assert_exact(y, expected, f"x with {special}")
    assert (np.isnan(y) == np.isnan(cpu[0])).all(), f"x with {special}: NaN where ORT has none, or not where it has"
    infinite = np.isinf(y)
    assert_exact(y[infinite], cpu[0][infinite], f"x with {special}: infinite outputs vs ORT CPU")
    finite = np.isfinite(y)
    err = np.abs(y[finite].astype(np.float64) - cpu[0][finite])
    magnitude = np.abs(expected[finite]) + np.abs(np.broadcast_to(bias, y.shape)[finite])
    assert (err <= ORT_ULPS * EPS32 * magnitude).all(), f"x with {special}: ORT CPU differs by up to {err.max()}"


def hand_built_chain(K=16, N=24, weight_is_input=False, scale_dims=("S",), quantized_output=False):
    """quantize_dynamic's chain with x_q, x_scale and x_zp as graph inputs (scale listed first, so the
    fused node's input order differs from the MatMulInteger's); optionally a QuantizeLinear after
    (y_scale 0.05, y_zp 120, uint8). Returns the model and W_q."""
    rng = np.random.default_rng(5)
    inits = [
        numpy_helper.from_array(rng.uniform(0.01, 0.05, N).astype(np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(N, np.int8), "w_zp"),
    ]
    inputs = [
        helper.make_tensor_value_info("x_scale", TensorProto.FLOAT, list(scale_dims)),
        helper.make_tensor_value_info("x_q", TensorProto.UINT8, ["M", K]),
        helper.make_tensor_value_info("x_zp", TensorProto.UINT8, []),
    ]
    w = rng.integers(-127, 128, (K, N)).astype(np.int8)
    if weight_is_input:
        inputs.append(helper.make_tensor_value_info("w_q", TensorProto.INT8, [K, N]))
    else:
        inits.append(numpy_helper.from_array(w, "w_q"))
    nodes = [
        helper.make_node("Mul", ["x_scale", "w_scale"], ["p"], name="scales_mul"),
        helper.make_node("MatMulInteger", ["x_q", "w_q", "x_zp", "w_zp"], ["acc"], name="mmi"),
        helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["acc_f", "p"], ["y"], name="out_mul"),
    ]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    if quantized_output:
        inits += [
            numpy_helper.from_array(np.array(0.05, np.float32), "y_scale"),
            numpy_helper.from_array(np.array(120, np.uint8), "y_zp"),
        ]
        nodes[-1].output[0] = "y_f"
        nodes.append(helper.make_node("QuantizeLinear", ["y_f", "y_scale", "y_zp"], ["y"], name="q_out"))
        out = helper.make_tensor_value_info("y", TensorProto.UINT8, None)
    graph = helper.make_graph(nodes, "chain", inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, w


def chain_feeds(M=5, K=16, seed=9):
    rng = np.random.default_rng(seed)
    return {
        "x_scale": np.array([0.037], np.float32),
        "x_q": rng.integers(0, 256, (M, K)).astype(np.uint8),
        "x_zp": np.array(131, np.uint8),
    }


def test_scale_and_zero_point_inputs_in_any_order(ep_lib):
    """x_scale and x_zp as graph inputs (no DQL), listed before x_q: claimed, exact."""
    model, w = hand_built_chain()
    feeds = chain_feeds()
    run = run_with_ep(model, feeds)
    assert run.groups == 1 and run.group_runs == 1, run.counters
    acc = (feeds["x_q"].astype(np.int64) - 131) @ w.astype(np.int64)
    w_scale = numpy_helper.to_array(model.graph.initializer[0])
    p = (np.float32(0.037) * w_scale).astype(np.float32)
    assert_exact(run.outputs[0][0], chain_steps(acc, p), "hand-built chain")


def test_quantized_output(ep_lib):
    """The chain followed by QuantizeLinear: claimed whole; y = saturate(round_half_even(v / y_scale) + y_zp),
    in float32 like the chain."""
    model, w = hand_built_chain(quantized_output=True)
    feeds = chain_feeds(M=7)
    run = run_with_ep(model, feeds)
    assert run.groups == 1 and {op for _, op in run.ep_nodes()} >= {"MatMulInteger", "QuantizeLinear"}, run.assignment
    acc = (feeds["x_q"].astype(np.int64) - 131) @ w.astype(np.int64)
    p = (np.float32(0.037) * numpy_helper.to_array(model.graph.initializer[0])).astype(np.float32)
    v = chain_steps(acc, p)
    expected = np.clip(np.rint(v / np.float32(0.05)) + np.float32(120), 0, 255).astype(np.uint8)
    assert_exact(run.outputs[0][0], expected, "chain -> QuantizeLinear")


def test_activation_weight_is_declined(ep_lib):
    """A non-constant B (activation × activation) is declined; ORT runs it, same outputs as ORT alone."""
    model, w = hand_built_chain(weight_is_input=True)
    feeds = dict(chain_feeds(), w_q=w)
    run = run_with_ep(model, feeds)
    assert run.groups == 0 and not run.ep_nodes(), run.counters
    assert_exact(run.outputs[0][0], run_cpu(model, feeds)[0], "declined chain vs ORT CPU")


def test_scale_with_two_values_fails_clearly(ep_lib):
    """x_scale declared [S] and fed two values: the run fails with a message naming the activation
    scale and its shape; the session keeps working."""
    model, _ = hand_built_chain()
    sess = create_ep_session(model)
    bad = dict(chain_feeds(), x_scale=np.array([0.5, 0.25], np.float32))
    with pytest.raises(Exception) as err:
        sess.run(None, bad)
    msg = str(err.value)
    assert "MatMulInteger 'mmi'" in msg and "activation scale 'x_scale' is float32 [2]; expected one float32" in msg, (
        msg
    )
    assert sess.run(None, chain_feeds())[0].shape == (5, 24)


def test_encoder_every_group_on_ep(ep_lib, tmp_path):
    """A 2-layer quantize_dynamic transformer encoder: all 12 weight MatMulIntegers run on the EP
    (attention's activation x activation MatMuls stay float: quantize_dynamic leaves them), and the
    embeddings agree with ORT's CPU EP on the same model (cosine >= 0.99999: the groups differ by a
    few float32 ulps, which can move a downstream DynamicQuantizeLinear value by one step)."""
    qmodel = dynamic_quantized(encoder(layers=2), tmp_path)
    n_groups = sum(n.op_type == "MatMulInteger" for n in qmodel.graph.node)
    assert n_groups == 12
    x = np.random.default_rng(11).standard_normal((2, 7, 64)).astype(np.float32)
    run = run_with_ep(qmodel, {"x": x})
    assert run.groups == n_groups and run.group_runs == n_groups, run.counters
    assert sum(op == "MatMulInteger" for _, op in run.ep_nodes()) == n_groups, run.assignment
    # Every DynamicQuantizeLinear runs on the EP: Q/K/V's shared one in the first of them (which writes
    # x_q, x_scale and x_zp out for the other two), those of the output projection, FFN up and FFN
    # down in their groups.
    assert sum(op == "DynamicQuantizeLinear" for _, op in run.ep_nodes()) == 8, run.assignment
    assert sum(op == "DynamicQuantizeLinear" for _, op in run.ep_nodes("CPUExecutionProvider")) == 0
    (ep_y,), cpu_y = run.outputs[0], run_cpu(qmodel, {"x": x})[0]
    cos = (ep_y * cpu_y).sum(-1) / np.linalg.norm(ep_y, axis=-1) / np.linalg.norm(cpu_y, axis=-1)
    record_measurement(
        f"dynamic encoder: EP vs ORT CPU cosine min {cos.min():.7f}, max |diff| {np.abs(ep_y - cpu_y).max():.3g}"
    )
    assert cos.min() >= 0.99999, cos


@pytest.mark.parametrize("readers", ["copies", "scale product"])
def test_a_dql_read_by_other_nodes_stays_with_ort(readers, ep_lib, tmp_path):
    """A DynamicQuantizeLinear whose outputs other nodes read (Identity and Cast, or a Mul of x_scale
    by a constant like a chain's scale product, but a model output) stays with ORT, so those readers
    get ORT's values even where the EP's DQL would differ (a NaN input); the group still runs on the
    EP, reading them per call."""
    qmodel = dynamic_quantized(float_matmuls(["batch", 16], [(16, 24)], bias=True), tmp_path)
    dql = next(n for n in qmodel.graph.node if n.op_type == "DynamicQuantizeLinear")
    x_q, x_scale, x_zp = dql.output
    if readers == "copies":
        qmodel.graph.node.extend(
            [
                helper.make_node("Identity", [x_scale], ["scale_copy"]),
                helper.make_node("Identity", [x_q], ["q_copy"]),
                helper.make_node("Cast", [x_zp], ["zp_wide"], to=TensorProto.INT32),
            ]
        )
        extra = [("scale_copy", TensorProto.FLOAT), ("q_copy", TensorProto.UINT8), ("zp_wide", TensorProto.INT32)]
    else:
        qmodel.graph.initializer.append(numpy_helper.from_array(np.array(2.0, np.float32), "two"))
        qmodel.graph.node.append(helper.make_node("Mul", [x_scale, "two"], ["scale_twice"]))
        extra = [("scale_twice", TensorProto.FLOAT)]
    qmodel.graph.output.extend([helper.make_tensor_value_info(name, t, None) for name, t in extra])
    x = np.random.default_rng(6).standard_normal((4, 16)).astype(np.float32)
    x[2, 3] = np.nan
    run = run_with_ep(qmodel, {"x": x})
    assert run.groups == 1, run.stderr
    assert (dql.name, "DynamicQuantizeLinear") in run.assignment["CPUExecutionProvider"], run.assignment
    cpu = run_cpu(qmodel, {"x": x})
    for got, want, (name, _) in zip(run.outputs[0][1:], cpu[1:], extra):
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert np.isfinite(cpu[1]).all() and not np.isnan(run.outputs[0][0]).all()


def column_chain(column: str, K=16, N=8):
    """quantize_dynamic's chain with bias, one of w_scale or bias shaped [N, 1] (`column`), the
    other [N]; 7-bit weights, so that ORT's u8·s8 kernel is exact on every CPU. Returns the model
    and (W_q, w_scale, bias) as 1-D values."""
    rng = np.random.default_rng(5)
    w = rng.integers(-63, 64, (K, N)).astype(np.int8)
    w_scale = rng.uniform(0.01, 0.05, N).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    inits = [
        numpy_helper.from_array(w_scale.reshape(N, 1) if column == "w_scale" else w_scale, "w_scale"),
        numpy_helper.from_array(np.zeros(N, np.int8), "w_zp"),
        numpy_helper.from_array(w, "w_q"),
        numpy_helper.from_array(bias.reshape(N, 1) if column == "bias" else bias, "bias"),
    ]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zp"], name="dql"),
        helper.make_node("Mul", ["x_scale", "w_scale"], ["p"], name="scales_mul"),
        helper.make_node("MatMulInteger", ["x_q", "w_q", "x_zp", "w_zp"], ["acc"], name="mmi"),
        helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["acc_f", "p"], ["v"], name="out_mul"),
        helper.make_node("Add", ["v", "bias"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "column_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, (w, w_scale, bias)


@pytest.mark.parametrize("column", ["w_scale", "bias"])
def test_a_column_scale_or_bias_at_one_row_is_left_to_ort(column, ep_lib):
    """A [N, 1] w_scale or bias broadcasts against the [1, N] product of one row: ONNX makes y [N, N].
    The EP declines such chains (its epilogue scales per output column). ORT's own fusion
    (DynamicQuantizeMatMul) mis-broadcasts a [N, 1] w_scale into a [1, N] y, with a shape warning,
    so sessions with the EP return that wrong result (docs/failure-behaviour.md); ORT at level 1
    (basic) or without graph optimizations gives ONNX's. A [N, 1] bias is not fused by ORT: right on both."""
    model, (w, w_scale, bias) = column_chain(column)
    N = w.shape[1]
    x = np.random.default_rng(8).standard_normal((1, w.shape[0])).astype(np.float32)
    x_q, x_scale, x_zp = reference_dql(x)
    acc = (x_q.astype(np.int64) - np.int64(x_zp)) @ w.astype(np.int64)
    p = np.float32(x_scale) * (w_scale.reshape(N, 1) if column == "w_scale" else w_scale)
    onnx_y = chain_steps(acc, p, bias.reshape(N, 1) if column == "bias" else bias)
    assert onnx_y.shape == (N, N)
    run = run_with_ep(model, {"x": x})
    assert run.groups == 0 and not run.ep_nodes(), run.assignment
    (ep_y,) = run.outputs[0]
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC):
        (unfused,) = run_cpu(model, {"x": x}, level=level)
        assert_exact(unfused, onnx_y, f"ORT at {level} vs ONNX")
    (fused,) = run_cpu(model, {"x": x})
    assert_exact(ep_y, fused, "declined: the session's result is ORT's")
    if column == "bias":
        assert_exact(ep_y, onnx_y, "a [N, 1] bias")
    else:
        assert ep_y.shape == (1, N), ep_y.shape  # ORT's mis-broadcast: one row instead of N
        assert not any(np.allclose(ep_y[0], row, rtol=1e-3) for row in onnx_y), (ep_y, onnx_y)
