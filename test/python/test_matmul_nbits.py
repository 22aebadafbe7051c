# SPDX-License-Identifier: Apache-2.0
"""MatMulNBits (com.microsoft) on the EP: claimed groups equal the W4A8 contract's numpy reference
(test_matmul_nbits_contract.contract) bit for bit, bias included; what the EP declines stays with
ORT's CPU EP, with the reason logged."""

from __future__ import annotations

import json

import ep_session as es
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_matmul_nbits_contract import contract

EP_NAME = es.EP_NAME


def nbits_model(
    K,
    N,
    bits=4,
    block_size=32,
    accuracy_level=4,
    zero_points=None,
    bias=None,
    bias_add=None,
    x_shape=("M", None),
    g_idx=False,
    float_type=np.float32,
    seed=0,
    b=None,
    scales=None,
):
    """A MatMulNBits node (bias as its input, or as an Add after it) and its constants."""
    rng = np.random.default_rng(seed)
    k_blocks = -(-K // block_size)
    b = rng.integers(0, 256, (N, k_blocks, block_size * bits // 8), dtype=np.uint8) if b is None else b
    scales = rng.uniform(0.001, 0.05, N * k_blocks).astype(float_type) if scales is None else scales
    inits = [numpy_helper.from_array(b, "B"), numpy_helper.from_array(scales, "scales")]
    inputs = ["A", "B", "scales", "", "", ""]
    if zero_points is not None:
        inits.append(numpy_helper.from_array(zero_points, "zero_points"))
        inputs[3] = "zero_points"
    if g_idx:
        inits.append(numpy_helper.from_array(np.arange(K, dtype=np.int32) // block_size, "g_idx"))
        inputs[4] = "g_idx"
    if bias is not None:
        inits.append(numpy_helper.from_array(bias, "bias"))
        inputs[5] = "bias"
    while inputs[-1] == "":
        inputs.pop()
    nodes = [
        helper.make_node(
            "MatMulNBits",
            inputs,
            ["Y0" if bias_add is not None else "Y"],
            "nbits",
            domain="com.microsoft",
            K=K,
            N=N,
            bits=bits,
            block_size=block_size,
            accuracy_level=accuracy_level,
        )
    ]
    if bias_add is not None:
        inits.append(numpy_helper.from_array(bias_add, "bias_add"))
        nodes.append(helper.make_node("Add", ["Y0", "bias_add"], ["Y"], "add"))
    dims = [d if d is not None else K for d in x_shape]
    elem = TensorProto.FLOAT16 if float_type == np.float16 else TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "nbits",
        [helper.make_tensor_value_info("A", elem, dims)],
        [helper.make_tensor_value_info("Y", elem, dims[:-1] + [N])],
        inits,
    )
    model = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    return model, b, scales


CASES = [(4, 576, 576, 32), (4, 1536, 67, 32), (4, 100, 37, 16), (4, 300, 64, 256), (8, 576, 192, 128), (8, 250, 9, 64)]


@pytest.mark.parametrize("with_zero_points", [False, True], ids=["sym", "zp"])
@pytest.mark.parametrize("bits,K,N,block_size", CASES)
def test_claimed_group_equals_the_contract(ep_lib, bits, K, N, block_size, with_zero_points):
    rng = np.random.default_rng(K + N + bits)
    k_blocks = -(-K // block_size)
    zero_points = rng.integers(0, 256, (N, -(-k_blocks * bits // 8)), dtype=np.uint8) if with_zero_points else None
    model, b, scales = nbits_model(K, N, bits, block_size, zero_points=zero_points, seed=K * N)
    feeds = []
    for M in (1, 3, 32):
        x = (rng.standard_normal((M, K)) * rng.uniform(0.01, 50, (M, 1))).astype(np.float32)
        x[0, 0] = 0.0 if M > 1 else x[0, 0]
        feeds.append({"A": x})
    run = es.run_with_ep(model, feeds)
    assert run.ep_nodes() == [("nbits", "MatMulNBits")]
    assert run.groups == 1 and run.group_runs == len(feeds)
    for f, (y,) in zip(feeds, run.outputs):
        want, _ = contract(f["A"], b, scales, zero_points, N, K, bits, block_size)
        assert np.array_equal(y.view(np.uint32), want.view(np.uint32)), f"M={f['A'].shape[0]}"


@pytest.mark.parametrize("spinning", ["1", "0"], ids=["spinning", "sleeping"])
def test_two_threads_spinning_or_sleeping_give_the_contract(ep_lib, spinning):
    """Two intra-op threads that spin or sleep between calls: the EP splits small calls only over
    spinning threads (test/engine/block_call_test.cpp), and every split gives the contract's y."""
    rng = np.random.default_rng(3)
    for K, N in [(576, 576), (1024, 3072)]:
        model, b, scales = nbits_model(K, N, seed=K + N)
        feeds = [{"A": rng.standard_normal((M, K)).astype(np.float32)} for M in (1, 4, 32)]
        run = es.run_with_ep(model, feeds, threads=2, config={"session.intra_op.allow_spinning": spinning})
        assert run.group_runs == len(feeds)
        for f, (y,) in zip(feeds, run.outputs):
            want, _ = contract(f["A"], b, scales, None, N, K, 4, 32)
            assert np.array_equal(y.view(np.uint32), want.view(np.uint32)), f"{K}x{N} M={f['A'].shape[0]}"


@pytest.mark.parametrize("where", ["input", "add"])
def test_bias_as_input_or_following_add_is_fused(ep_lib, where):
    K, N = 96, 40
    bias = np.linspace(-3, 3, N).astype(np.float32)
    model, b, scales = nbits_model(
        K, N, bias=bias if where == "input" else None, bias_add=bias if where == "add" else None, x_shape=(2, "S", None)
    )
    x = np.random.default_rng(1).standard_normal((2, 5, K)).astype(np.float32)
    run = es.run_with_ep(model, {"A": x})
    assert sorted(op for _, op in run.ep_nodes()) == (["Add", "MatMulNBits"] if where == "add" else ["MatMulNBits"])
    want, _ = contract(x.reshape(10, K), b, scales, None, N, K, 4, 32)
    want = (want + bias).astype(np.float32).reshape(2, 5, N)
    assert np.array_equal(run.outputs[0][0].view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("device", ["none", "emu"])
def test_calls_run_on_the_host_counted_as_host_only_with_a_device(ep_lib, tmp_path, device):
    """The device has no block-scaled design: with the emulated array a MatMulNBits call runs on the
    host, exact, and counts as host-only (traced with its reason); without a device nothing counts."""
    K, N = 128, 24
    model, b, scales = nbits_model(K, N)
    rng = np.random.default_rng(5)
    feeds = [{"A": rng.standard_normal((M, K)).astype(np.float32)} for M in (1, 40)]
    trace = tmp_path / "trace.json"
    run = es.run_with_ep(
        model,
        feeds,
        options={"device": device, "designs_dir": tmp_path / "designs", "min_device_rows": 1, "trace": trace},
    )
    for f, (y,) in zip(feeds, run.outputs):
        want, _ = contract(f["A"], b, scales, None, N, K, 4, 32)
        assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
    host_only = 2 if device == "emu" else 0
    assert (run.counters["host_only_kind"], run.counters["device_calls"]) == (host_only, 0), run.counters
    calls = [e["args"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert {(c["route"], c["reason"]) for c in calls} == {("host", "host-only-kind" if host_only else "no-device")}


@pytest.mark.parametrize(
    "variant,reason",
    [
        ({"accuracy_level": 0}, "accuracy_level=0 asks for float accuracy"),
        ({"accuracy_level": 1}, "accuracy_level=1 asks for float accuracy"),
        ({"g_idx": True}, "g_idx 'g_idx' (act-order) is not claimed"),
        ({"float_type": np.float16}, "scales 'scales' have type float16; only float scales are claimed"),
        ({"bits": 2, "block_size": 32}, "bits=2; 4 and 8 are claimed"),
    ],
)
def test_declined_groups_stay_with_ort_and_say_why(ep_lib, variant, reason):
    K, N = 64, 16
    model, _, _ = nbits_model(K, N, **variant)
    x = np.random.default_rng(2).standard_normal((3, K)).astype(variant.get("float_type", np.float32))
    es.ensure_registered()
    so = es._session_options()
    so.log_severity_level = 0  # verbose: the EP logs why it declined
    so.add_provider_for_devices(es.ep_devices(), {})
    with es.captured_stderr() as err:
        session = ort.InferenceSession(es.model_bytes(model), sess_options=so, enable_fallback=0)
        assignment = es._assignment(session)
        y = session.run(None, {"A": x})[0]
        del session
    assert EP_NAME not in assignment
    assert f"onebit: declined MatMulNBits 'nbits': {reason}" in err["text"]
    np.testing.assert_array_equal(y, es.run_cpu(model, {"A": x})[0])


def test_the_option_claims_float_accuracy_levels_too(ep_lib):
    """matmul_nbits_accuracy=any: an accuracy_level=0 node runs on the EP, under the same contract."""
    K, N = 64, 16
    model, b, scales = nbits_model(K, N, accuracy_level=0)
    x = np.random.default_rng(3).standard_normal((3, K)).astype(np.float32)
    run = es.run_with_ep(model, {"A": x}, options={"matmul_nbits_accuracy": "any"})
    assert run.ep_nodes() == [("nbits", "MatMulNBits")]
    want, _ = contract(x, b, scales, None, N, K, 4, 32)
    assert np.array_equal(run.outputs[0][0].view(np.uint32), want.view(np.uint32))


def test_a_block_of_tiny_values_contributes_nothing(ep_lib):
    """127/amax overflows below amax ~3.7e-37: that block quantizes to zeros (contract), finite output."""
    K, N = 64, 8
    model, b, scales = nbits_model(K, N)
    x = np.random.default_rng(4).standard_normal((2, K)).astype(np.float32)
    x[0, :32] = np.float32(1e-37) * np.sign(x[0, :32])  # block 0 of row 0 tiny, one value 0
    x[0, 5] = 0.0
    run = es.run_with_ep(model, {"A": x})
    y = run.outputs[0][0]
    want, _ = contract(x, b, scales, None, N, K, 4, 32)
    assert np.isfinite(y).all()
    assert np.array_equal(y.view(np.uint32), want.view(np.uint32))


def test_scales_or_zero_points_shaped_unlike_the_node_are_declined(ep_lib):
    """[blocks, N] has the right count but not a shape ORT accepts: left to ORT, which refuses it."""
    K, N = 64, 8
    k_blocks = 2
    scales = np.full((k_blocks, N), 0.01, np.float32)
    model, _, _ = nbits_model(K, N, scales=scales)
    es.ensure_registered()
    so = es._session_options()
    so.log_severity_level = 0
    so.add_provider_for_devices(es.ep_devices(), {})
    with es.captured_stderr() as err:
        with pytest.raises(Exception, match="scales"):
            ort.InferenceSession(es.model_bytes(model), sess_options=so, enable_fallback=0)
    assert (
        "onebit: declined MatMulNBits 'nbits': scales 'scales' have shape [2,8]; expected [16] or [8,2]" in err["text"]
    )


def test_siblings_reading_one_activation_are_one_fused_node(ep_lib):
    """q/k/v-like MatMulNBits nodes of one input: the claimed ones run in one fused node (fewer
    fused nodes make session creation faster), each equal to the contract; one declined
    (accuracy_level 0) stays with ORT, reading the same input."""
    K, sizes, levels = 96, (40, 24, 16), (4, 4, 0)
    nodes, inits, outputs, constants = [], [], [], []
    for i, (N, level) in enumerate(zip(sizes, levels)):
        model, b, scales = nbits_model(K, N, accuracy_level=level, seed=10 + i)
        node = model.graph.node[0]
        renamed = {name: f"{name}{i}" for name in ["B", "scales", "Y"]}
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [renamed.get(n, n) for n in node.input],
                [f"Y{i}"],
                f"nbits{i}",
                domain="com.microsoft",
                **{a.name: helper.get_attribute_value(a) for a in node.attribute},
            )
        )
        inits += [numpy_helper.from_array(b, f"B{i}"), numpy_helper.from_array(scales, f"scales{i}")]
        outputs.append(helper.make_tensor_value_info(f"Y{i}", TensorProto.FLOAT, ["M", N]))
        constants.append((b, scales, N))
    graph = helper.make_graph(
        nodes, "siblings", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", K])], outputs, inits
    )
    model = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    x = (np.random.default_rng(4).standard_normal((3, K)) * 7).astype(np.float32)
    run = es.run_with_ep(model, {"A": x})
    assert sorted(run.ep_nodes()) == [("nbits0", "MatMulNBits"), ("nbits1", "MatMulNBits")]
    assert run.fused_nodes == 1 and run.groups == 2 and run.group_runs == 2
    for i in (0, 1):
        b, scales, N = constants[i]
        want, _ = contract(x, b, scales, None, N, K, 4, 32)
        assert np.array_equal(run.outputs[0][i].view(np.uint32), want.view(np.uint32)), f"sibling {i}"
    np.testing.assert_array_equal(run.outputs[0][2], es.run_cpu(model, {"A": x})[2])
