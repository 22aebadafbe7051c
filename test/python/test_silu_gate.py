# SPDX-License-Identifier: Apache-2.0
"""The SwiGLU gate Mul(Mul(gate, Sigmoid(gate)), up) after two MatMulNBits siblings joins their fused
node (ep/silu_gate_match.h): its output against the W4A8 contract's projections put through the
gate in double (a few ulps) and through ORT's own Sigmoid and Muls (float rounding); the forms the
EP leaves to ORT (a value read elsewhere, a broadcast product, an up that is no group) still run,
unchanged."""

from __future__ import annotations

import ep_session as es
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_matmul_nbits import nbits_model
from test_matmul_nbits_contract import contract

K = 96
SIGMOID_ERROR = 2e-7  # ORT's Sigmoid against σ, absolute (measured: 1.67e-7, ORT 1.30, AVX-512 and AVX2)


def gate_model(N=40, N_up=None, swapped=False, gate_out=False, sigmoid_out=False, up_is_input=False, x_dims=("M", K)):
    """gate and up MatMulNBits of input A, then the SwiGLU gate; the flags make forms the EP declines."""
    N_up = N if N_up is None else N_up
    nodes, inits, constants = [], [], {}
    for name, n, seed in (("gate", N, 1), ("up", N_up, 2)):
        if name == "up" and up_is_input:
            continue
        model, b, scales = nbits_model(K, n, seed=seed)
        attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
        nodes.append(
            helper.make_node(
                "MatMulNBits", ["A", f"B_{name}", f"s_{name}"], [name], f"{name}_proj", domain="com.microsoft", **attrs
            )
        )
        inits += [numpy_helper.from_array(b, f"B_{name}"), numpy_helper.from_array(scales, f"s_{name}")]
        constants[name] = (b, scales, n)
    nodes += [
        helper.make_node("Sigmoid", ["gate"], ["sig"], "sigmoid"),
        helper.make_node("Mul", ["sig", "gate"] if swapped else ["gate", "sig"], ["silu"], "silu"),
        helper.make_node("Mul", ["up", "silu"] if swapped else ["silu", "up"], ["Y"], "gated"),
    ]
    lead = list(x_dims[:-1])
    inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, list(x_dims))]
    if up_is_input:
        inputs.append(helper.make_tensor_value_info("up", TensorProto.FLOAT, lead + [N]))
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, lead + [N])]
    if gate_out:
        outputs.append(helper.make_tensor_value_info("gate", TensorProto.FLOAT, lead + [N]))
    if sigmoid_out:
        outputs.append(helper.make_tensor_value_info("sig", TensorProto.FLOAT, lead + [N]))
    graph = helper.make_graph(nodes, "swiglu", inputs, outputs, inits)
    model = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    return model, constants


def projection(x, constants, name):
    b, scales, n = constants[name]
    y, _ = contract(x.reshape(-1, K), b, scales, None, n, K, 4, 32)
    return y.reshape(x.shape[:-1] + (n,))


def ulps(a, b):
    """Distance in units in the last place, element by element (float32)."""
    ia, ib = (np.asarray(v, np.float32).view(np.int32).astype(np.int64) for v in (a, b))
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return np.abs(ia - ib)


def in_double(gate, up):
    """The graph's value with σ in double, each Mul's product rounded to float32."""
    sigmoid = (1.0 / (1.0 + np.exp(-gate.astype(np.float64)))).astype(np.float32)
    return (gate * sigmoid).astype(np.float32) * up


def through_ort(gate, up):
    """ORT's CPU EP running the gate alone on the same projections."""
    nodes = [
        helper.make_node("Sigmoid", ["gate"], ["sig"]),
        helper.make_node("Mul", ["gate", "sig"], ["silu"]),
        helper.make_node("Mul", ["silu", "up"], ["Y"]),
    ]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(gate.shape)) for n in ("gate", "up", "Y")]
    model = helper.make_model(
        helper.make_graph(nodes, "g", vi[:2], vi[2:]), opset_imports=[helper.make_opsetid("", 21)]
    )
    model.ir_version = 10
    return es.run_cpu(model, {"gate": gate, "up": up})[0]


@pytest.mark.parametrize(
    "x_dims,rows", [(("M", K), (1,)), (("M", K), (3,)), (("M", K), (37,)), ((2, "S", K), (2, 5))], ids=str
)
@pytest.mark.parametrize("swapped", [False, True], ids=["gate_first", "up_first"])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_gate_runs_in_the_projections_fused_node(ep_lib, x_dims, rows, swapped, threads):
    model, constants = gate_model(swapped=swapped, x_dims=x_dims)
    rng = np.random.default_rng(sum(rows))
    # Wide activations: gate values from about -40 to 40, σ saturating at both ends.
    x = (rng.standard_normal(rows + (K,)) * 30).astype(np.float32)
    run = es.run_with_ep(model, {"A": x}, threads=threads)
    assert sorted(op for _, op in run.ep_nodes()) == ["MatMulNBits", "MatMulNBits", "Mul", "Mul", "Sigmoid"]
    assert run.fused_nodes == 1 and run.group_runs == 2 and run.counters["gate_runs"] == 1
    (y,) = run.outputs[0]
    gate, up = projection(x, constants, "gate"), projection(x, constants, "up")
    assert np.abs(gate).max() > 20, "the case should reach σ's flat ends"
    want = in_double(gate, up)
    # Below a gate of -87 the EP's σ is 0 where the exact value is under 1e-37 (kernels/README.md).
    assert np.all((ulps(y, want) <= 4) | (np.abs(y - want) < 1e-30))
    # ORT's Sigmoid is within SIGMOID_ERROR of σ absolutely (not relatively: it is 0 below -15.8):
    # the two differ by that times |gate · up|, plus the products' rounding.
    bound = np.abs(gate * up) * SIGMOID_ERROR + np.abs(y) * 4e-7
    assert np.all(np.abs(y - through_ort(gate, up)) <= bound)


@pytest.mark.parametrize(
    "form",
    ["gate_out", "sigmoid_out", "broadcast", "up_is_input"],
)
def test_forms_left_to_ort_run_as_before(ep_lib, form):
    """The gate stays with ORT when a value inside it is read elsewhere, the product broadcasts, or up
    is not a projection of the node; the projections themselves are still the EP's."""
    model, constants = gate_model(
        N_up=1 if form == "broadcast" else None,
        gate_out=form == "gate_out",
        sigmoid_out=form == "sigmoid_out",
        up_is_input=form == "up_is_input",
    )
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((4, K)) * 5).astype(np.float32)
    feeds = {"A": x}
    if form == "up_is_input":
        feeds["up"] = rng.standard_normal((4, 40)).astype(np.float32)
    run = es.run_with_ep(model, feeds)
    assert run.counters["gate_runs"] == 0
    assert all(op == "MatMulNBits" for _, op in run.ep_nodes()), run.ep_nodes()
    gate = projection(x, constants, "gate")
    up = feeds["up"] if form == "up_is_input" else projection(x, constants, "up")
    np.testing.assert_allclose(
        run.outputs[0][0], through_ort(gate, np.broadcast_to(up, gate.shape).copy()), rtol=0, atol=0
    )


def test_orts_sigmoid_is_within_the_bound_the_comparison_assumes():
    """The premise of the bound against ORT: its Sigmoid within SIGMOID_ERROR of σ over [-30, 30]."""
    x = np.linspace(-30, 30, 600_001).astype(np.float32)
    node = helper.make_node("Sigmoid", ["x"], ["y"])
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [len(x)]) for n in ("x", "y")]
    model = helper.make_model(
        helper.make_graph([node], "s", vi[:1], vi[1:]), opset_imports=[helper.make_opsetid("", 21)]
    )
    model.ir_version = 10
    theirs = es.run_cpu(model, {"x": x})[0].astype(np.float64)
    worst = np.abs(theirs - 1.0 / (1.0 + np.exp(-x.astype(np.float64)))).max()
    es.record_measurement(f"ORT's Sigmoid against σ in double over [-30, 30]: {worst:.3g} at most (absolute)")
    assert worst <= SIGMOID_ERROR


@pytest.mark.parametrize("read", ["gate", "up", "sig", "silu"])
def test_a_value_an_if_branch_reads_leaves_the_gate_to_ort(ep_lib, read):
    """A subgraph reading a value inside the gate is a reader like any other: the gate stays with ORT."""
    from test_skip_norm import if_reading

    model, constants = gate_model()
    model.graph.node.append(if_reading(read))
    model.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    model.graph.output.append(helper.make_tensor_value_info("branch", TensorProto.FLOAT, None))
    x = (np.random.default_rng(9).standard_normal((3, K)) * 5).astype(np.float32)
    run = es.run_with_ep(model, {"A": x, "c": np.array(False)})
    assert run.counters["gate_runs"] == 0
    gate, up = projection(x, constants, "gate"), projection(x, constants, "up")
    np.testing.assert_array_equal(run.outputs[0][0], through_ort(gate, up))
    values = {"gate": gate, "up": up}
    if read in values:
        np.testing.assert_array_equal(run.outputs[0][1], -values[read])
