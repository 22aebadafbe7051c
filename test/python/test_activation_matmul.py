# SPDX-License-Identifier: Apache-2.0
"""Activation x activation int8 MatMuls: B changes per call, as in attention's QKᵀ and PV once a
quantizer quantizes them. Three forms: MatMulInteger with a non-constant B (quantize_dynamic with
MatMulConstBOnly off: DynamicQuantizeLinear on both inputs, then Cast and Mul by a_scale·b_scale),
QLinearMatMul with a non-constant b (quantize_static, QOperator), and DQ(a_q), DQ(b_q) -> MatMul ->
[Q] (quantize_static, QDQ).

The measured rule (engine/activation_matmul_policy.h) claims one only where the model declares
M >= 512 and K >= 512 (attention's PV at long static sequence lengths); others run on ORT with the
reason logged. ONEBIT_ACTIVATION_MATMULS=all claims every one the EP can run exactly, which is how
the path is tested on small shapes here: each call packs B and runs the exact kernel, so outputs equal an exact
integer reference (numpy int64) computed from the same integers; ORT's CPU EP is compared within
the bounds stated below."""

from __future__ import annotations

import json

import ep_session as es
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import reference
from dynamic_models import activation_quantized, attention_matmul
from onnx import TensorProto, helper
from ort_int8 import ort_u8s8_saturates
from qdq_models import init, make_model
from test_dynamic_quant import EPS32, ORT_ULPS, chain_steps, reference_dql

ONNX_TYPE = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}
DECLINE = (
    "is not a constant: an activation x activation group with M={} K={} N={} (-1: symbolic) is claimed "
    "only with M >= 512, K >= 512 and N <= 64"
)


@pytest.fixture
def claim_all(monkeypatch):
    monkeypatch.setenv("ONEBIT_ACTIVATION_MATMULS", "all")


def full_range(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def dims(prefix, rank):
    return [f"{prefix}{i}" for i in range(rank)]  # all symbolic: one model serves every shape


# ---------------------------------------------------------------------------------------------
# Hand-built groups: full-range values, nonzero zero points, both signednesses.
# ---------------------------------------------------------------------------------------------

A_ZP = {np.dtype(np.uint8): 131, np.dtype(np.int8): -7}
B_ZP = {np.dtype(np.uint8): 120, np.dtype(np.int8): 5}
SA, SB, SY = np.float32(0.0123), np.float32(0.0089), np.float32(0.37)


def matmul_integer(a_type, b_type, a_rank, b_rank, zero_points):
    """MatMulInteger(a, b[, a_zp, b_zp]) with zero points as graph inputs ("input", read per call)
    or initializers ("constant")."""
    inputs = [
        helper.make_tensor_value_info("a", ONNX_TYPE[a_type], dims("a", a_rank)),
        helper.make_tensor_value_info("b", ONNX_TYPE[b_type], dims("b", b_rank)),
    ]
    inits = []
    if zero_points == "input":
        inputs += [
            helper.make_tensor_value_info("a_zp", ONNX_TYPE[a_type], []),
            helper.make_tensor_value_info("b_zp", ONNX_TYPE[b_type], []),
        ]
    else:
        inits = [init("a_zp", np.array(A_ZP[a_type], a_type)), init("b_zp", np.array(B_ZP[b_type], b_type))]
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"], name="mmi")
    return make_model(
        [node], inputs, [helper.make_tensor_value_info("y", TensorProto.INT32, dims("y", max(a_rank, b_rank)))], inits
    )


def qlinear_matmul(a_type, b_type, a_rank, b_rank):
    """QLinearMatMul(a, b) with b an input; scales and zero points constant (quantize_static's)."""
    inits = [
        init("a_scale", SA),
        init("a_zp", np.array(A_ZP[a_type], a_type)),
        init("b_scale", SB),
        init("b_zp", np.array(B_ZP[b_type], b_type)),
        init("y_scale", SY),
        init("y_zp", np.array(A_ZP[a_type], a_type)),
    ]
    node = helper.make_node(
        "QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"], ["y"], name="qlinear"
    )
    inputs = [
        helper.make_tensor_value_info("a", ONNX_TYPE[a_type], dims("a", a_rank)),
        helper.make_tensor_value_info("b", ONNX_TYPE[b_type], dims("b", b_rank)),
    ]
    return make_model(
        [node], inputs, [helper.make_tensor_value_info("y", ONNX_TYPE[a_type], dims("y", max(a_rank, b_rank)))], inits
    )


def qdq_matmul(a_type, b_type, a_rank, b_rank, quantized_output=True, b_scale=SB):
    """DQ(a), DQ(b) -> MatMul -> [Q(y_scale, y_zp)], a and b inputs, constant scales and zero points."""
    inits = [
        init("a_scale", SA),
        init("a_zp", np.array(A_ZP[a_type], a_type)),
        init("b_scale", b_scale),
        init("b_zp", np.full(np.shape(b_scale), B_ZP[b_type], b_type)),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["a", "a_scale", "a_zp"], ["a_f"], name="dq_a"),
        helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zp"], ["b_f"], name="dq_b", axis=-1),
        helper.make_node("MatMul", ["a_f", "b_f"], ["y_f" if quantized_output else "y"], name="matmul"),
    ]
    out_type = TensorProto.FLOAT
    if quantized_output:
        inits += [init("y_scale", SY), init("y_zp", np.array(A_ZP[a_type], a_type))]
        nodes.append(helper.make_node("QuantizeLinear", ["y_f", "y_scale", "y_zp"], ["y"], name="q_y"))
        out_type = ONNX_TYPE[a_type]
    inputs = [
        helper.make_tensor_value_info("a", ONNX_TYPE[a_type], dims("a", a_rank)),
        helper.make_tensor_value_info("b", ONNX_TYPE[b_type], dims("b", b_rank)),
    ]
    return make_model(
        nodes, inputs, [helper.make_tensor_value_info("y", out_type, dims("y", max(a_rank, b_rank)))], inits
    )


def exact_acc(a, a_zp, b, b_zp):
    return np.matmul(a.astype(np.int64) - int(a_zp), b.astype(np.int64) - int(b_zp))


def requantize(v, dtype):
    """The EP contract's quantized output: saturate(round_half_even(v / y_scale) + y_zp)."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(v / np.float64(SY)) + A_ZP[np.dtype(dtype)], info.min, info.max).astype(dtype)


def expected(form, feeds, a_type, b_type):
    a, b = feeds["a"], feeds["b"]
    a_zp = feeds["a_zp"] if "a_zp" in feeds else A_ZP[a_type]
    b_zp = feeds["b_zp"] if "b_zp" in feeds else B_ZP[b_type]
    acc = exact_acc(a, a_zp, b, b_zp)
    assert np.abs(acc).max(initial=0) < 2**31
    if form.startswith("mmi"):
        return acc.astype(np.int32)
    if form == "qlinear":  # ONNX's reference: a_scale·b_scale/y_scale in float32, then float64
        return reference.qlinear_matmul(
            a,
            np.array([SA]),
            np.array([a_zp], a_type),
            b,
            np.array([SB]),
            np.array([b_zp], b_type),
            np.array([SY]),
            np.array([a_zp], a_type),
        )
    v = acc.astype(np.float64) * (np.float64(SA) * np.float64(SB))
    return v.astype(np.float32) if form == "qdq_float" else requantize(v, a_type)


def build(form, a_type, b_type, a_rank, b_rank):
    if form.startswith("mmi"):
        return matmul_integer(a_type, b_type, a_rank, b_rank, "input" if form == "mmi_zp_input" else "constant")
    if form == "qlinear":
        return qlinear_matmul(a_type, b_type, a_rank, b_rank)
    return qdq_matmul(a_type, b_type, a_rank, b_rank, quantized_output=form == "qdq")


# (a shape, b shape) per run: attention's [B,H,S,D] x [B,H,D,S], rank 2 and 3, broadcasting (a
# batch dim of 1 on either side, a rank-2 B under a batched a, a rank-2 a over a batched B),
# M = 0 and 1, K = 0, N = 0, K past a k-quad and N past a column block.
SHAPES = {
    "r4_attention": [((2, 3, 9, 8), (2, 3, 8, 9)), ((1, 3, 1, 8), (1, 3, 8, 1)), ((2, 3, 0, 8), (2, 3, 8, 0))],
    "r4_pv": [((1, 2, 17, 17), (1, 2, 17, 8)), ((2, 2, 1, 5), (2, 2, 5, 8))],
    "r4_broadcast": [((2, 1, 5, 13), (1, 3, 13, 17)), ((1, 1, 0, 13), (2, 3, 13, 17))],
    "r3": [((2, 7, 33), (2, 33, 20)), ((3, 1, 4), (3, 4, 1)), ((2, 0, 4), (2, 4, 3))],
    "r3_x_r2": [((3, 5, 19), (19, 7)), ((1, 1, 19), (19, 7))],
    "r2_x_r3": [((5, 19), (4, 19, 7))],
    "r2": [((6, 40), (40, 33)), ((1, 40), (40, 1)), ((0, 40), (40, 33)), ((4, 0), (0, 3)), ((4, 3), (3, 0))],
}
FORMS = ["mmi_zp_input", "mmi_zp_constant", "qlinear", "qdq", "qdq_float"]
TYPES = [(np.uint8, np.int8), (np.int8, np.uint8), (np.uint8, np.uint8), (np.int8, np.int8)]


def ort_bound(form):
    """|EP - ORT CPU| allowed where ORT's kernel does not saturate. MatMulInteger: exact. Quantized
    outputs: 1 LSB (ORT requantizes in float32). QDQ with a float output (None): ORT dequantizes to
    float32 and multiplies and sums in float32, so each output is within (K+2)·2⁻²³ of the sum of
    its terms' magnitudes."""
    return {"mmi_zp_input": 0, "mmi_zp_constant": 0, "qlinear": 1, "qdq": 1}.get(form)


def ort_saturates(a_type, b_type) -> bool:
    """Whether ORT's CPU EP computes this signedness with its saturating u8·s8 kernel (AVX2 without
    VNNI, measured by ort_int8): uint8 x int8, which every form (QDQ included, as ORT fuses it into
    its integer kernels) reaches; the other combinations are exact there."""
    return (a_type, b_type) == (np.dtype(np.uint8), np.dtype(np.int8)) and ort_u8s8_saturates()


@pytest.mark.parametrize("types", TYPES, ids=lambda t: f"{np.dtype(t[0])}x{np.dtype(t[1])}")
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("shapes", list(SHAPES), ids=list(SHAPES))
def test_group_claimed_and_exact(shapes, form, types, ep_lib, claim_all):
    a_type, b_type = (np.dtype(t) for t in types)
    cells = SHAPES[shapes]
    model = build(form, a_type, b_type, len(cells[0][0]), len(cells[0][1]))
    rng = np.random.default_rng(17)
    feeds = []
    for a_shape, b_shape in cells:
        f = {"a": full_range(rng, a_shape, a_type), "b": full_range(rng, b_shape, b_type)}
        if form == "mmi_zp_input":  # per call zero points, different at each call
            f["a_zp"] = np.array(A_ZP[a_type] + len(feeds), a_type)
            f["b_zp"] = np.array(B_ZP[b_type] - len(feeds), b_type)
        feeds.append(f)
    run = es.run_with_ep(model, feeds)
    assert run.groups == 1, f"{form} {shapes}: not claimed\n{run.stderr}"
    assert run.group_runs == len(feeds), run.counters
    bound = ort_bound(form)
    for f, (y,) in zip(feeds, run.outputs):
        what = f"{form} {shapes} a{list(f['a'].shape)} b{list(f['b'].shape)}"
        es.assert_exact(y, expected(form, f, a_type, b_type), what)
        if f["a"].shape[-1] == 0 or y.size == 0:
            continue  # ORT's MatMulInteger leaves a K = 0 product uninitialised; nothing to compare
        if form == "qlinear" and a_type == np.dtype(np.int8) and b_type == np.dtype(np.uint8):
            continue  # ORT's CPU EP has no int8 x uint8 QLinearMatMul kernel
        (cpu,) = es.run_cpu(model, f)
        diff = np.abs(y.astype(np.float64) - cpu.astype(np.float64)).max()
        if ort_saturates(a_type, b_type):  # the EP is exact (above); ORT's error is only recorded
            es.record_measurement(f"activation x activation {what}: ORT CPU (saturating u8·s8) differs by {diff}")
        elif bound is None:  # qdq_float: float32 dequantize, products and K sums in ORT, each rounded
            terms = np.matmul(
                np.abs(f["a"].astype(np.int64) - A_ZP[a_type]), np.abs(f["b"].astype(np.int64) - B_ZP[b_type])
            )
            limit = (f["a"].shape[-1] + 2) * EPS32 * terms * float(np.float64(SA) * np.float64(SB))
            err = np.abs(y.astype(np.float64) - cpu)
            assert (err <= limit).all(), f"{what}: ORT CPU differs by {diff} (bound (K+2)·2⁻²³·Σ|terms|)"
        else:
            assert diff <= bound, f"{what}: ORT CPU differs by {diff} LSB > {bound}"


# ---------------------------------------------------------------------------------------------
# The forms ORT's quantizers write for attention, end to end.
# ---------------------------------------------------------------------------------------------


def attention_feeds(rng, which, B=2, H=3, S=11, D=8):
    if which == "qk":
        return {
            "a": rng.standard_normal((B, H, S, D)).astype(np.float32) * 2,
            "b": rng.standard_normal((B, H, D, S)).astype(np.float32),
        }
    return {
        "a": rng.standard_normal((B, H, S, S)).astype(np.float32) * 3,
        "b": rng.standard_normal((B, H, S, D)).astype(np.float32) + 0.5,
    }


def quantized_attention(which, form, tmp_path):
    rng = np.random.default_rng(23)
    shapes = (["B", 3, "S", 8], ["B", 3, 8, "S"]) if which == "qk" else (["B", 3, "S", "S"], ["B", 3, "S", 8])
    fp32 = attention_matmul(*shapes, probabilities=which == "pv")
    return activation_quantized(fp32, tmp_path, form, [attention_feeds(rng, which) for _ in range(3)]), rng


@pytest.mark.parametrize("which", ["qk", "pv"])
def test_quantize_dynamic_attention_exact(which, ep_lib, claim_all, tmp_path):
    """quantize_dynamic (MatMulConstBOnly off): both DynamicQuantizeLinears stay with ORT, the group
    reads both scales and zero points per call; y = float32(acc) · float32(a_scale·b_scale) in
    float32, as the chain's Cast and Mul compute it, exactly, from ONNX's reference DQL of each input
    (bit-identical to ORT's, test_dynamic_quant.py); where ORT's u8·s8 kernel is exact also bit for bit ORT's CPU EP with
    graph optimizations off (its operators one by one)."""
    qmodel, rng = quantized_attention(which, "dynamic", tmp_path)
    assert {n.op_type for n in qmodel.graph.node} >= {"DynamicQuantizeLinear", "MatMulInteger"}
    feeds = [attention_feeds(rng, which), attention_feeds(rng, which, B=1, S=1), attention_feeds(rng, which, S=0)]
    run = es.run_with_ep(qmodel, feeds)
    assert run.groups == 1 and run.group_runs == len(feeds), f"{run.counters}\n{run.stderr}"
    assert "MatMulInteger" in {op for _, op in run.ep_nodes()}, run.assignment
    y_name = qmodel.graph.output[0].name
    for f, outputs in zip(feeds, run.outputs):
        y = outputs[[o.name for o in qmodel.graph.output].index(y_name)]
        # The Softmax before PV runs on ORT in both arms: the reference takes ORT's.
        a = f["a"] if which == "qk" else es.run_cpu(softmax_only(), {"a": f["a"]})[0]
        (a_q, a_s, a_zp), (b_q, b_s, b_zp) = reference_dql(a), reference_dql(f["b"])
        p = np.float32(np.float32(a_s) * np.float32(b_s))
        exact = chain_steps(exact_acc(a_q, a_zp, b_q, b_zp), np.asarray(p))
        es.assert_exact(y, exact, f"quantize_dynamic {which} a{list(f['a'].shape)}")
        if not ort_u8s8_saturates():
            unfused = es.run_cpu(qmodel, f, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
            es.assert_exact(y, unfused, f"quantize_dynamic {which}: vs ORT's operators one by one")
        cpu = es.run_cpu(qmodel, f)[0]
        err = np.abs(y.astype(np.float64) - cpu)
        assert (err <= ORT_ULPS * EPS32 * (np.abs(exact) + 1e-30)).all(), f"ORT CPU differs by up to {err.max()}"


def softmax_only():
    return make_model(
        [helper.make_node("Softmax", ["a"], ["p"], axis=-1)],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, dims("a", 4))],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, dims("a", 4))],
        [],
        opset=17,
    )


@pytest.mark.parametrize("which", ["qk", "pv"])
@pytest.mark.parametrize("form", ["qlinear", "qdq"])
def test_quantize_static_attention_on_ep(which, form, ep_lib, claim_all, tmp_path):
    """quantize_static (QOperator: QLinearMatMul; QDQ: DQ, DQ -> MatMul -> Q) with a non-constant B:
    the group is claimed and its quantized output is within 1 LSB of ORT's CPU EP (the model's
    output is that value dequantized: 1 LSB = its scale); the exactness of each form is checked on
    the hand-built groups above."""
    qmodel, rng = quantized_attention(which, form, tmp_path)
    last_dq = next(n for n in qmodel.graph.node if n.output[0] == qmodel.graph.output[0].name)
    assert last_dq.op_type == "DequantizeLinear", last_dq
    step = float(next(onnx.numpy_helper.to_array(t) for t in qmodel.graph.initializer if t.name == last_dq.input[1]))
    feeds = [attention_feeds(rng, which), attention_feeds(rng, which, B=1, S=1)]
    run = es.run_with_ep(qmodel, feeds)
    assert run.groups == 1 and run.group_runs == len(feeds), f"{run.counters}\n{run.stderr}"
    for f, (got,) in zip(feeds, run.outputs):
        (cpu,) = es.run_cpu(qmodel, f)
        assert got.shape == cpu.shape and got.dtype == cpu.dtype
        diff = np.abs(got.astype(np.float64) - cpu).max(initial=0)
        assert diff <= step * 1.0001, f"{form} {which}: ORT CPU differs by {diff / step:.2f} LSB"


def test_quantize_static_symbolic_k_quantizes_in_the_group(ep_lib, claim_all, tmp_path):
    """A QDQ MatMul of two inputs whose K only the call knows (every dim symbolic): the group runs
    A's QuantizeLinear itself, on one thread and, from 64 Ki values, over the session's threads;
    within 1 LSB of ORT's CPU EP at each size."""
    rng = np.random.default_rng(29)
    sizes = [(5, 19, 7), (1, 3, 2), (300, 401, 9), (0, 16, 4)]
    feeds = [
        {"a": rng.standard_normal((m, k)).astype(np.float32), "b": rng.standard_normal((k, n)).astype(np.float32)}
        for m, k, n in sizes
    ]
    qmodel = activation_quantized(attention_matmul(["M", "K"], ["K", "N"]), tmp_path, "qdq", feeds[:3])
    last_dq = next(n for n in qmodel.graph.node if n.output[0] == qmodel.graph.output[0].name)
    step = float(next(onnx.numpy_helper.to_array(t) for t in qmodel.graph.initializer if t.name == last_dq.input[1]))
    for threads in (1, 2):
        run = es.run_with_ep(qmodel, feeds, threads=threads)
        assert run.groups == 1 and run.group_runs == len(feeds), f"{run.counters}\n{run.stderr}"
        assert "QuantizeLinear" in {op for _, op in run.ep_nodes()}, run.assignment
        for f, (got,) in zip(feeds, run.outputs):
            (cpu,) = es.run_cpu(qmodel, f)
            assert got.shape == cpu.shape
            diff = np.abs(got.astype(np.float64) - cpu).max(initial=0)
            assert diff <= step * 1.0001, (
                f"a{list(f['a'].shape)}, {threads} threads: ORT CPU differs by {diff / step:.2f} LSB"
            )


# ---------------------------------------------------------------------------------------------
# Declines
# ---------------------------------------------------------------------------------------------


def verbose_capability_log(model) -> str:
    """The EP's verbose log of GetCapability for `model` (its claim / decline lines)."""
    es.ensure_registered()
    so = ort.SessionOptions()
    so.log_severity_level = 0
    so.add_provider_for_devices(es.ep_devices(), {})
    with es.captured_stderr() as err:
        ort.InferenceSession(es.model_bytes(model), sess_options=so, enable_fallback=0)
    return "\n".join(line for line in err["text"].splitlines() if "onebit: " in line)


def test_measured_rule_declines_symbolic_shapes_with_reason(ep_lib, monkeypatch):
    """Without the override the measured rule declines every form whose M and K are symbolic, with
    its reason; ORT runs them (uint8 x uint8, as ORT's quantizers write attention: exact in ORT on
    every CPU)."""
    monkeypatch.delenv("ONEBIT_ACTIVATION_MATMULS", raising=False)
    u8 = np.dtype(np.uint8)
    for form in FORMS:
        model = build(form, u8, u8, 4, 4)
        log = verbose_capability_log(model)
        assert DECLINE.format(-1, -1, -1) in log, f"{form}: no decline reason in the log:\n{log}"
        rng = np.random.default_rng(5)
        f = {"a": full_range(rng, (1, 2, 3, 8), u8), "b": full_range(rng, (1, 2, 8, 3), u8)}
        if form == "mmi_zp_input":
            f.update(a_zp=np.array(3, u8), b_zp=np.array(200, u8))
        run = es.run_with_ep(model, f)
        assert run.groups == 0 and not run.ep_nodes(), run.counters
        es.assert_exact(run.outputs[0][0], es.run_cpu(model, f)[0], f"{form} declined: as ORT alone")


def with_declared_k(model, K):
    """`model` (from build) with a's last dim and b's second to last declared K."""
    model.graph.input[0].type.tensor_type.shape.dim[-1].dim_value = K
    model.graph.input[1].type.tensor_type.shape.dim[-2].dim_value = K
    return model


@pytest.mark.parametrize("form", FORMS)
def test_groups_ort_gets_wrong_are_claimed_whatever_their_shape(form, ep_lib, monkeypatch):
    """uint8 x int8 with symbolic M and N, which the measured rule declines as slower: where ORT's
    kernel saturates (AVX2 without VNNI, as ORT itself shows, ort_int8.py) the EP claims it anyway
    and is exact while ORT is not; where ORT is exact it stays declined. A symbolic K stays
    declined everywhere: a call past the exact int32 bound could only fail."""
    monkeypatch.delenv("ONEBIT_ACTIVATION_MATMULS", raising=False)
    u8, s8 = np.dtype(np.uint8), np.dtype(np.int8)
    assert DECLINE.format(-1, -1, -1) in verbose_capability_log(build(form, u8, s8, 4, 4))
    model = with_declared_k(build(form, u8, s8, 4, 4), 64)
    rng = np.random.default_rng(15)
    f = {"a": full_range(rng, (1, 2, 3, 64), u8), "b": full_range(rng, (1, 2, 64, 5), s8)}
    if form == "mmi_zp_input":
        f.update(a_zp=np.array(3, u8), b_zp=np.array(-2, s8))
    run = es.run_with_ep(model, f)
    if not ort_u8s8_saturates():
        assert run.groups == 0, run.counters
        assert DECLINE.format(-1, 64, -1) in verbose_capability_log(model)
        return
    assert run.groups == 1 and run.group_runs == 1, f"{form}: not claimed where ORT saturates\n{run.stderr}"
    exact = expected(form, f, u8, s8)
    es.assert_exact(run.outputs[0][0], exact, f"{form} u8·s8 on the EP")
    (cpu,) = es.run_cpu(model, f)
    assert not np.array_equal(cpu, exact), f"{form}: ORT was exact; the claim's reason is gone"


def test_int8_qdq_with_an_int8_b_that_orts_rewrite_leaves_is_claimed_where_ort_saturates(ep_lib, monkeypatch):
    """int8 x int8 QDQ whose B is an int8 graph input (an int8 KV cache): on a CPU without VNNI
    ORT's QDQS8ToU8 rewrite makes the activation uint8 and runs its saturating u8·s8 kernel (0.82
    instead of 103.23 here, found by a hostile review); the EP claims it and is exact."""
    monkeypatch.delenv("ONEBIT_ACTIVATION_MATMULS", raising=False)
    s8 = np.dtype(np.int8)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xf"]),
        helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bf"]),
        helper.make_node("MatMul", ["xf", "bf"], ["y"]),
    ]
    inits = [
        init("sx", np.float32(0.01)),
        init("zx", np.array(0, s8)),
        init("sb", np.float32(0.01)),
        init("zb", np.array(0, s8)),
    ]
    model = make_model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", 64]),
            helper.make_tensor_value_info("b", TensorProto.INT8, [64, "n"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", "n"])],
        inits,
    )
    f = {"x": np.full((1, 64), 1.27, np.float32), "b": np.full((64, 2), 127, np.int8)}
    run = es.run_with_ep(model, f)
    if not ort_u8s8_saturates():
        assert run.groups == 0, run.counters
        return
    assert run.groups == 1, f"not claimed where ORT saturates\n{run.stderr}"
    acc = 127 * 127 * 64
    np.testing.assert_array_equal(
        run.outputs[0][0], np.full((1, 2), np.float32(acc * (np.float64(np.float32(0.01)) ** 2)))
    )
    assert not np.allclose(es.run_cpu(model, f)[0], run.outputs[0][0], rtol=1e-3), (
        "ORT was right: the claim's reason is gone"
    )


def static_shaped(form, a_shape, b_shape, b_type=np.dtype(np.int8)):
    u8 = np.dtype(np.uint8)
    model = build(form, u8, b_type, len(a_shape), len(b_shape))
    for vi, shape in zip(model.graph.input, (a_shape, b_shape)):
        for dim, value in zip(vi.type.tensor_type.shape.dim, shape):
            dim.dim_value = value
    return model


@pytest.mark.parametrize("form", ["mmi_zp_constant", "qlinear", "qdq"])
def test_measured_rule_claims_long_static_pv(form, ep_lib, monkeypatch):
    """PV of a model exported with a fixed sequence length of 512 (M = K = 512, N = 8): claimed by
    the measured rule and exact; 511 rows, K = 256 or N = 65 declined with the reason."""
    monkeypatch.delenv("ONEBIT_ACTIVATION_MATMULS", raising=False)
    u8, s8 = np.dtype(np.uint8), np.dtype(np.int8)
    rng = np.random.default_rng(9)
    f = {"a": full_range(rng, (1, 2, 512, 512), u8), "b": full_range(rng, (1, 2, 512, 8), s8)}
    run = es.run_with_ep(static_shaped(form, (1, 2, 512, 512), (1, 2, 512, 8)), f)
    assert run.groups == 1 and run.group_runs == 1, run.counters
    es.assert_exact(run.outputs[0][0], expected(form, f, u8, s8), f"{form} PV 512")
    for M, K, N in ((511, 512, 8), (512, 256, 8), (512, 512, 65)):  # uint8 B: exact in ORT everywhere
        log = verbose_capability_log(static_shaped(form, (1, 2, M, K), (1, 2, K, N), np.dtype(np.uint8)))
        assert DECLINE.format(M, K, N) in log, log


def test_per_channel_b_is_declined(ep_lib, claim_all):
    """A non-constant B with per-channel scales is rare (per-tensor only): declined with the reason."""
    model = qdq_matmul(np.dtype(np.uint8), np.dtype(np.int8), 2, 2, b_scale=np.full(6, SB, np.float32))
    model.graph.input[1].type.tensor_type.shape.dim[1].dim_value = 6
    log = verbose_capability_log(model)
    assert "zero point of the non-constant B 'b_zp' is not per-tensor (shape [6])" in log, log
    rng = np.random.default_rng(6)
    f = {"a": full_range(rng, (3, 5), np.uint8), "b": full_range(rng, (5, 6), np.int8)}
    run = es.run_with_ep(model, f)
    assert run.groups == 0, run.counters
    es.assert_exact(run.outputs[0][0], es.run_cpu(model, f)[0], "declined per-channel B")


def test_bad_override_fails_session_creation(ep_lib, monkeypatch):
    monkeypatch.setenv("ONEBIT_ACTIVATION_MATMULS", "sometimes")
    with pytest.raises(Exception, match="ONEBIT_ACTIVATION_MATMULS=sometimes is invalid: use 'measured' or 'all'"):
        es.run_with_ep(build("qlinear", np.dtype(np.uint8), np.dtype(np.int8), 2, 2), [])


def test_b_of_unknown_rank_is_declined(ep_lib, claim_all):
    """B's rank must be known (2 to 4) when the session is created."""
    model = matmul_integer(np.dtype(np.uint8), np.dtype(np.int8), 2, 2, "constant")
    model.graph.input[1].type.tensor_type.ClearField("shape")
    assert "B 'b' has rank 0; supported ranks are 2 to 4" in verbose_capability_log(model)


def test_device_session_runs_them_on_the_host(ep_lib, claim_all, tmp_path):
    """A group whose B changes per call has no device leg (a design holds weights uploaded once):
    with the emulated array its calls run on the host, traced and counted as host-only, with no device work."""
    u8, s8 = np.dtype(np.uint8), np.dtype(np.int8)
    model = build("qlinear", u8, s8, 4, 4)
    rng = np.random.default_rng(8)
    f = {"a": full_range(rng, (2, 3, 40, 16), u8), "b": full_range(rng, (2, 3, 16, 40), s8)}
    trace = tmp_path / "trace.json"
    run = es.run_with_ep(
        model, f, options={"device": "emu", "designs_dir": tmp_path / "designs", "min_device_rows": 1, "trace": trace}
    )
    es.assert_exact(run.outputs[0][0], expected("qlinear", f, u8, s8), "device session")
    assert run.groups == 1 and run.counters["device_calls"] == 0 and run.counters["device_fallbacks"] == 0, run.counters
    assert run.counters["host_only_kind"] == 6, run.counters
    calls = [e["args"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert len(calls) == 6 and {(c["route"], c["reason"], c["K"], c["N"]) for c in calls} == {
        ("host", "host-only-kind", 16, 40)
    }


def test_per_call_zero_point_of_symbolic_shape_is_declined(ep_lib, claim_all):
    """MatMulInteger's b_zero_point may hold N values (per column): one declared [N] is declined with
    the reason, and ORT runs it; it was claimed and then refused at every call."""
    u8, s8 = np.dtype(np.uint8), np.dtype(np.int8)
    model = matmul_integer(u8, s8, 2, 2, "input")
    model.graph.input[3].type.tensor_type.shape.dim.add().dim_param = "N"
    assert "B zero point 'b_zp' has shape [?]; expected one value" in verbose_capability_log(model)
    rng = np.random.default_rng(31)
    # a below 128: no pair of products overflows int16, so ORT's value is exact on every CPU.
    f = {
        "a": rng.integers(0, 128, (4, 8)).astype(u8),
        "b": full_range(rng, (8, 3), s8),
        "a_zp": np.array(3, u8),
        "b_zp": np.array([1, -2, 3], s8),
    }
    run = es.run_with_ep(model, f)
    assert run.groups == 0, run.counters
    es.assert_exact(
        run.outputs[0][0],
        np.matmul(f["a"].astype(np.int64) - 3, f["b"].astype(np.int64) - [1, -2, 3]).astype(np.int32),
        "per-column b_zp on ORT",
    )


def test_bias_of_another_n_than_b_at_run_time_fails(ep_lib, claim_all):
    """A bias sized for B's declared N while B (a Reshape whose declared shape is wrong) has more
    columns at run time: a clear error, as on ORT; the group read past the bias and succeeded."""
    u8 = np.dtype(np.uint8)
    nodes = [
        helper.make_node("Reshape", ["b_raw", "b_shape"], ["b"]),
        helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["acc"], name="mmi"),
        helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["a_scale", "b_scale"], ["scales"]),
        helper.make_node("Mul", ["acc_f", "scales"], ["y_nobias"]),
        helper.make_node("Add", ["y_nobias", "bias"], ["y"]),
    ]
    inputs = [
        helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 8]),
        helper.make_tensor_value_info("b_raw", TensorProto.UINT8, ["T"]),
        helper.make_tensor_value_info("b_shape", TensorProto.INT64, [2]),
        helper.make_tensor_value_info("a_scale", TensorProto.FLOAT, []),
        helper.make_tensor_value_info("b_scale", TensorProto.FLOAT, []),
    ]
    model = make_model(
        nodes,
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
        [init("a_zp", np.array(100, u8)), init("b_zp", np.array(3, u8)), init("bias", np.full(3, 1000, np.float32))],
    )
    model.graph.value_info.append(helper.make_tensor_value_info("b", TensorProto.UINT8, [8, 3]))
    rng = np.random.default_rng(32)
    scales = {"a_scale": np.array(0.01, np.float32), "b_scale": np.array(0.02, np.float32)}
    good = {
        "a": full_range(rng, (4, 8), u8),
        "b_raw": full_range(rng, (24,), u8),
        "b_shape": np.array([8, 3]),
        **scales,
    }
    run = es.run_with_ep(model, good)
    assert run.groups == 1, run.counters
    es.assert_exact(
        run.outputs[0][0], es.run_cpu(model, good, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0], "N as declared"
    )
    wide = {**good, "b_raw": full_range(rng, (8 * 64,), u8), "b_shape": np.array([8, 64])}
    with pytest.raises(Exception, match=r"B 'b' of shape \[8,64\] uint8 has N=64 but the bias has 3 values"):
        es.run_with_ep(model, wide)


@pytest.mark.parametrize("form", ["mmi", "qlinear"])
def test_constant_a_with_non_constant_b_is_declined(form, ep_lib, claim_all):
    """A constant A times a non-constant B (W·x as MatMulInteger(W, x)): declined with the reason,
    and ORT runs it; it was claimed and session creation failed ("'a' is not an input of the fused node")."""
    u8, s8 = np.dtype(np.uint8), np.dtype(np.int8)
    rng = np.random.default_rng(33)
    a = full_range(rng, (4, 8), u8)
    inits = [init("a", a), init("a_zp", np.array(7, u8)), init("b_zp", np.array(-1, s8))]
    if form == "mmi":
        node = helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"], name="mmi")
        y_type = TensorProto.INT32
    else:
        inits += [init("a_scale", SA), init("b_scale", SB), init("y_scale", SY), init("y_zp", np.array(9, u8))]
        node = helper.make_node(
            "QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"], ["y"], name="mmi"
        )
        y_type = TensorProto.UINT8
    model = make_model(
        [node],
        [helper.make_tensor_value_info("b", TensorProto.INT8, ["K", "N"])],
        [helper.make_tensor_value_info("y", y_type, [4, "N"])],
        inits,
    )
    assert "activation 'a' is a constant" in verbose_capability_log(model)
    f = {"b": full_range(rng, (8, 3), s8)}
    run = es.run_with_ep(model, f)
    assert run.groups == 0, run.counters
    es.assert_exact(run.outputs[0][0], es.run_cpu(model, f)[0], f"{form} with a constant A, on ORT")


def test_per_call_activation_scale_of_symbolic_shape_is_declined(ep_lib, claim_all):
    """With a non-constant B and a constant B scale, Mul(a_scale, b_scale) with a_scale declared [N]
    may scale per column (ORT broadcasts it): declined with the reason, and ORT runs it; it was
    claimed and then refused at every such call."""
    u8 = np.dtype(np.uint8)
    nodes = [
        helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["acc"], name="mmi"),
        helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["b_scale", "a_scale"], ["scales"]),
        helper.make_node("Mul", ["acc_f", "scales"], ["y"]),
    ]
    inputs = [
        helper.make_tensor_value_info("a", TensorProto.UINT8, ["M", "K"]),
        helper.make_tensor_value_info("b", TensorProto.UINT8, ["K", "N"]),
        helper.make_tensor_value_info("a_scale", TensorProto.FLOAT, ["N"]),
    ]
    model = make_model(
        nodes,
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", "N"])],
        [init("a_zp", np.array(100, u8)), init("b_zp", np.array(3, u8)), init("b_scale", np.float32(0.5))],
    )
    assert "activation scale 'a_scale' has shape [?]; expected one value" in verbose_capability_log(model)
    rng = np.random.default_rng(34)
    f = {
        "a": full_range(rng, (4, 8), u8),
        "b": full_range(rng, (8, 3), u8),
        "a_scale": np.array([0.1, 0.2, 0.3], np.float32),
    }
    run = es.run_with_ep(model, f)
    assert run.groups == 0, run.counters
    es.assert_exact(run.outputs[0][0], es.run_cpu(model, f)[0], "per-column activation scale on ORT")
