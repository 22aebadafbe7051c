# SPDX-License-Identifier: Apache-2.0
"""Near-miss graphs the EP must decline (and still give ORT CPU's outputs), invalid models, and a
claimed node fed a wrong shape at run time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import ep_session as es
import numpy as np
import onnx
import pytest
import qdq_models as qm
from onnx import TensorProto as TP
from onnx import helper
from qdq_models import init

K, N = 32, 24
RNG_SEED = 3


def _x_dq(x_type=np.int8, scale=None, zp=None, axis=None):
    """Inputs/initializers/node for DQ(x_q) -> x_f with x_q a graph input [M, K]."""
    scale = np.float32(0.02) if scale is None else scale
    zp = np.array(1, x_type) if zp is None else zp
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_f"], name="dq_x", **attrs)
    return [init("x_scale", scale), init("x_zero_point", zp)], node


def _w_dq(w=None, scale=None, zp=None, **attrs):
    rng = np.random.default_rng(RNG_SEED)
    w = qm.rand_q(rng, (K, N), np.int8) if w is None else w
    scale = np.float32(0.01) if scale is None else scale
    inits = [init("w_q", w), init("w_scale", scale)]
    ins = ["w_q", "w_scale"]
    if zp is not None:
        inits.append(init("w_zero_point", zp))
        ins.append("w_zero_point")
    return inits, helper.make_node("DequantizeLinear", ins, ["w_f"], name="dq_w", **attrs)


def _model(nodes, inits, x_type=TP.INT8, x_dims=("M", K), extra_inputs=(), out_dims=("M", N), opset=21):
    inputs = [helper.make_tensor_value_info("x_q", x_type, list(x_dims))] + list(extra_inputs)
    outputs = [helper.make_tensor_value_info("y", TP.FLOAT, list(out_dims))]
    return qm.make_model(nodes, inputs, outputs, inits, opset=opset)


def _matmul(a="x_f", b="w_f", out="y"):
    return helper.make_node("MatMul", [a, b], [out], name="matmul")


def weight_is_graph_input():
    xi, xn = _x_dq()
    dq_w = helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["w_f"], name="dq_w")
    m = _model(
        [xn, dq_w, _matmul()],
        xi + [init("w_scale", np.float32(0.01))],
        extra_inputs=[helper.make_tensor_value_info("w_q", TP.INT8, [K, N])],
    )
    w = qm.rand_q(np.random.default_rng(RNG_SEED), (K, N), np.int8)
    return m, {"w_q": w}


def weight_scale_wrong_axis():
    # Per-channel scales along K (axis 0) of a [K, N] weight: not per output channel.
    scale = np.random.default_rng(4).uniform(0.005, 0.02, size=K).astype(np.float32)
    xi, xn = _x_dq()
    wi, wn = _w_dq(scale=scale, zp=np.zeros(K, np.int8), axis=0)
    return _model([xn, wn, _matmul()], xi + wi), {}


def float_weights():
    xi, xn = _x_dq()
    w = np.random.default_rng(5).standard_normal((K, N)).astype(np.float32)
    return _model([xn, _matmul(b="w")], xi + [init("w", w)]), {}


def per_channel_activation_scale():
    scale = np.random.default_rng(6).uniform(0.01, 0.03, size=K).astype(np.float32)
    xi, xn = _x_dq(scale=scale, zp=np.zeros(K, np.int8), axis=1)
    wi, wn = _w_dq()
    return _model([xn, wn, _matmul()], xi + wi), {}


def blocked_weight_quantization():
    # opset 21 blocked DequantizeLinear: one scale per 16 rows of each column.
    scale = np.random.default_rng(7).uniform(0.005, 0.02, size=(K // 16, N)).astype(np.float32)
    xi, xn = _x_dq()
    wi, wn = _w_dq(scale=scale, axis=0, block_size=16)
    return _model([xn, wn, _matmul()], xi + wi), {}


def int4_weights():
    w = np.random.default_rng(8).integers(-8, 8, size=(K, N))
    xi, xn = _x_dq()
    w_t = helper.make_tensor("w_q", TP.INT4, [K, N], w.ravel().tolist())
    dq_w = helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["w_f"], name="dq_w")
    return _model([xn, dq_w, _matmul()], xi + [w_t, init("w_scale", np.float32(0.05))]), {}


def int16_weights():
    w = np.random.default_rng(9).integers(-3000, 3000, size=(K, N)).astype(np.int16)
    xi, xn = _x_dq()
    wi, wn = _w_dq(w=w, scale=np.float32(1e-4), zp=np.array(0, np.int16))
    return _model([xn, wn, _matmul()], xi + wi), {}


def int16_activation():
    xi, xn = _x_dq(x_type=np.int16, zp=np.array(7, np.int16))
    wi, wn = _w_dq()
    return _model([xn, wn, _matmul()], xi + wi, x_type=TP.INT16), {}


def gemm_variant(**attrs):
    def build():
        xi, xn = _x_dq()
        wi, wn = _w_dq()
        bias = np.random.default_rng(10).standard_normal(N).astype(np.float32)
        gemm = helper.make_node("Gemm", ["x_f", "w_f", "bias"], ["y"], name="gemm", **attrs)
        x_dims = (K, "M") if attrs.get("transA") else ("M", K)
        return _model([xn, wn, gemm], xi + wi + [init("bias", bias)], x_dims=x_dims), {}

    return build


def weight_on_the_left():
    # MatMul(DQ(W), DQ(x)): the constant is the left operand ([N, K] @ [K, M]).
    xi, xn = _x_dq()
    w = qm.rand_q(np.random.default_rng(11), (N, K), np.int8)
    wi, wn = _w_dq(w=w)
    return _model([xn, wn, _matmul(a="w_f", b="x_f")], xi + wi, x_dims=(K, "M"), out_dims=(N, "M")), {}


def dequantize_to_float16():
    # opset 23: DequantizeLinear(output_dtype=FLOAT16) with float32 scales, a float16 MatMul, and a
    # QuantizeLinear (float32 y_scale, allowed since opset 23) back to int8.
    xi, xn = _x_dq()
    xn.attribute.append(helper.make_attribute("output_dtype", TP.FLOAT16))
    wi, wn = _w_dq()
    wn.attribute.append(helper.make_attribute("output_dtype", TP.FLOAT16))
    q = helper.make_node("QuantizeLinear", ["y16", "y_scale", "y_zero_point"], ["y"], name="q_y")
    inits = xi + wi + [init("y_scale", np.float32(0.05)), init("y_zero_point", np.array(3, np.int8))]
    model = _model([xn, wn, _matmul(out="y16"), q], inits, opset=23)
    model.graph.output[0].type.tensor_type.elem_type = TP.INT8
    return model, {}


DECLINED = {
    "weight_scale_axis0_of_KxN": weight_scale_wrong_axis,
    "float_weights": float_weights,
    "per_channel_activation_scale": per_channel_activation_scale,
    "blocked_weight_block_size16": blocked_weight_quantization,
    "int4_weights": int4_weights,
    "int16_weights": int16_weights,
    "int16_activation": int16_activation,
    "gemm_transA1": gemm_variant(transA=1),
    "gemm_alpha_0.5": gemm_variant(alpha=0.5),
    "gemm_beta_2": gemm_variant(beta=2.0),
    "weight_on_the_left": weight_on_the_left,
}


def _activation(model, rows, seed):
    vi = model.graph.input[0]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
    dims = [d.dim_value if d.HasField("dim_value") else rows for d in vi.type.tensor_type.shape.dim]
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -128), min(info.max, 255)
    return np.random.default_rng(seed).integers(lo, hi + 1, size=dims).astype(dtype)


@pytest.mark.parametrize("name", list(DECLINED))
def test_near_miss_is_declined_and_matches_cpu(name, ep_lib):
    model, extra = DECLINED[name]()
    feeds = [dict(extra, x_q=_activation(model, m, 50 + i)) for i, m in enumerate((1, 7, 36))]
    run = es.run_with_ep(model, feeds)
    assert run.groups == 0 and run.group_runs == 0, f"{name}: the EP claimed a group it must decline: {run.counters}"
    assert not run.ep_nodes(), f"{name}: nodes assigned to the EP: {run.ep_nodes()}"
    for f, outs in zip(feeds, run.outputs):
        cpu = es.run_cpu(model, f)
        for g, c in zip(outs, cpu):
            es.assert_exact(g, c, f"{name}: output with the EP registered vs ORT CPU alone")


def test_node_names_holding_a_nul_byte_are_declined_not_refused(ep_lib):
    """ORT names the int32 bias of a fused MatMul+Add after the node ("l0_matmul\\0x/MatMulAddFusion
    _bias_int32"); its C API cuts names at the NUL, so that bias and the DequantizeLinear output it
    feeds read as one name, "l0_matmul". The EP claimed such groups, then Compile refused them
    ("Gemm input C is not a constant bias") and session creation failed. Now they are declined and
    the model runs as on ORT's CPU EP."""
    model = qm.build_qdq_stack(dims=(64, 128, 64, 32), float_output=False)
    for node in model.graph.node:
        node.name += "\0x"
    feeds = [{"x_q": qm.random_activation(np.int8, (rows, 64), seed=40 + rows)} for rows in (1, 5)]
    run = es.run_with_ep(model, feeds)
    assert run.groups == 0 and run.group_runs == 0, run.counters
    for f, outs in zip(feeds, run.outputs):
        for g, c in zip(outs, es.run_cpu(model, f), strict=True):
            es.assert_exact(g, c, "a NUL-named stack with the EP registered vs ORT CPU alone")


def test_a_weight_that_is_a_graph_input_is_an_activation_x_activation_group(ep_lib, monkeypatch):
    """DQ of an int8 weight given per call is not a constant-weight group: the activation x activation
    rule decides. Where ORT's kernel saturates (ort_int8.py) an int8 B with a declared K is claimed
    and exact; elsewhere it is declined (symbolic M, K = 32) and gives ORT's outputs."""
    from ort_int8 import ort_u8s8_saturates

    monkeypatch.delenv("ONEBIT_ACTIVATION_MATMULS", raising=False)
    model, extra = weight_is_graph_input()
    feeds = [dict(extra, x_q=_activation(model, m, 50 + i)) for i, m in enumerate((1, 7, 36))]
    run = es.run_with_ep(model, feeds)
    if not ort_u8s8_saturates():
        assert run.groups == 0 and run.group_runs == 0, run.counters
        for f, outs in zip(feeds, run.outputs):
            es.assert_exact(outs[0], es.run_cpu(model, f)[0], "declined: ORT's output")
        return
    assert run.groups == 1 and run.group_runs == len(feeds), run.counters
    for f, outs in zip(feeds, run.outputs):
        acc = (f["x_q"].astype(np.int64) - 1) @ f["w_q"].astype(np.int64)  # x zero point 1, w's 0
        exact = (acc * (np.float64(np.float32(0.02)) * np.float64(np.float32(0.01)))).astype(np.float32)
        np.testing.assert_allclose(outs[0], exact, rtol=2**-23, atol=0)


def weight_zero_point_shaped_unlike_scale(zp_count, scale_count, zp_shape=None):
    def build():
        rng = np.random.default_rng(12)
        zp = rng.integers(-5, 6, size=N).astype(np.int8) if zp_count > 1 else np.array(2, np.int8)
        if zp_shape is not None:
            zp = zp.reshape(zp_shape)
        scale = rng.uniform(0.005, 0.02, size=N).astype(np.float32) if scale_count > 1 else np.float32(0.01)
        xi, xn = _x_dq()
        wi, wn = _w_dq(scale=scale, zp=zp, axis=1)
        return _model([xn, wn, _matmul()], xi + wi)

    return build


# Models ORT's CPU EP accepts at session creation but fails when run, and its error.
REFUSED_AT_RUN_TIME = {
    "per_channel_weight_zp_per_tensor_scale": (
        weight_zero_point_shaped_unlike_scale(N, 1),
        "x_zero_point must be null",
    ),
    "per_tensor_weight_zp_per_channel_scale": (
        weight_zero_point_shaped_unlike_scale(1, N),
        "x_zero_point must be null",
    ),
    # Found by matcher_fuzz.py: one value, but rank 2 (ORT wants a scalar or a 1-D tensor).
    "weight_zp_one_value_rank_2": (weight_zero_point_shaped_unlike_scale(1, 1, (1, 1)), "x_zero_point must be null"),
    "dequantize_output_dtype_float16": (lambda: dequantize_to_float16()[0], "Tensor type mismatch"),
}


@pytest.mark.parametrize("name", list(REFUSED_AT_RUN_TIME))
def test_model_ort_refuses_is_declined_and_fails_as_in_ort(name, ep_lib):
    """The EP must not run what ORT refuses (it would return numbers for an invalid model, or
    ignore DequantizeLinear's output_dtype): it declines the group, so the run fails with ORT's
    own error, as it does without the EP."""
    build, message = REFUSED_AT_RUN_TIME[name]
    model = build()
    feeds = {"x_q": _activation(model, 3, 60)}
    with pytest.raises(Exception, match=message):
        es.run_cpu(model, feeds)
    run = es.run_with_ep(model, [])
    assert run.groups == 0 and not run.ep_nodes(), f"the EP claimed the group: {run.counters} {run.ep_nodes()}"
    with pytest.raises(Exception, match=message):
        es.run_with_ep(model, feeds)


# ---------------------------------------------------------------------------------------------
# Errors: run in a child process, so a crash is reported as a failure instead of ending the suite.
# ---------------------------------------------------------------------------------------------

CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import ep_session as es
result = {"created": False, "runs": []}
try:
    sess = es.create_ep_session(sys.argv[2])
    result["created"] = True
    for path in sys.argv[3:]:
        x = np.load(path)
        try:
            y = sess.run(None, {"x_q": x})[0]
            result["runs"].append({"ok": True, "shape": list(y.shape)})
        except Exception as e:
            result["runs"].append({"ok": False, "error": str(e)})
except Exception as e:
    result["error"] = str(e)
print("RESULT " + json.dumps(result))
"""


def run_child(model, inputs):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        arrays = []
        for i, x in enumerate(inputs):
            arrays.append(os.path.join(d, f"x{i}.npy"))
            np.save(arrays[-1], x)
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, os.path.dirname(os.path.abspath(__file__)), path, *arrays],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ),
        )
    assert proc.returncode == 0, f"child process died (exit {proc.returncode}); stderr:\n{proc.stderr[-3000:]}"
    line = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def test_mismatched_k_is_rejected_clearly(ep_lib):
    """Weight [K+1, N] against activation [M, K]: an invalid model. ORT (or the EP) must refuse it
    with an error naming the problem, not crash."""
    xi, xn = _x_dq()
    w = qm.rand_q(np.random.default_rng(12), (K + 1, N), np.int8)
    wi, wn = _w_dq(w=w)
    model = _model([xn, wn, _matmul()], xi + wi)
    res = run_child(model, [np.zeros((4, K), np.int8)])
    if res["created"]:
        assert res["runs"] and not res["runs"][0]["ok"], f"an invalid model ran: {res}"
        msg = res["runs"][0]["error"]
    else:
        msg = res["error"]
    # ORT 1.30's shape inference rejects it at session creation: "Node (matmul) Op (MatMul)
    # [ShapeInferenceError] Incompatible dimensions for matrix multiplication".
    assert "matmul" in msg, f"error does not name the node: {msg}"
    assert "dimension" in msg.lower() or (str(K) in msg and str(K + 1) in msg), f"unclear error: {msg}"


def test_runtime_wrong_k_fails_clearly_and_session_survives(ep_lib):
    """Activation declared [M, K'] (both symbolic) so ORT cannot reject a bad K before our kernel:
    the claimed node must fail the run with a message naming the node and the shape, and the
    session must keep working for a correct input."""
    xi, xn = _x_dq()
    wi, wn = _w_dq()
    model = _model([xn, wn, _matmul()], xi + wi, x_dims=("M", "K"))
    good = np.random.default_rng(61).integers(-128, 128, size=(5, K)).astype(np.int8)
    bad = np.random.default_rng(62).integers(-128, 128, size=(5, K + 1)).astype(np.int8)
    res = run_child(model, [good, bad, good])
    assert res["created"], res
    ok1, err, ok2 = res["runs"]
    assert ok1 == {"ok": True, "shape": [5, N]}, res
    assert not err["ok"], f"a wrong-K input ran: {res}"
    msg = err["error"]
    print("wrong-K error:", msg)
    assert str(K + 1) in msg and str(K) in msg, f"error does not name the shapes: {msg}"
    assert "OnebitExecutionProvider" in msg or "matmul" in msg, f"error does not name the node: {msg}"
    assert ok2 == {"ok": True, "shape": [5, N]}, f"session unusable after the error: {res}"


def test_runtime_wrong_k_is_claimed(ep_lib):
    """The model of the previous test is claimed (so the error really comes from the EP's kernel)."""
    xi, xn = _x_dq()
    wi, wn = _w_dq()
    model = _model([xn, wn, _matmul()], xi + wi, x_dims=("M", "K"))
    run = es.run_with_ep(model, {"x_q": np.ones((2, K), np.int8)})
    assert run.groups == 1 and run.group_runs == 1, run.counters
