# SPDX-License-Identifier: Apache-2.0
"""A SkipSimplifiedLayerNormalization (com.microsoft) whose output only MatMulNBits siblings read joins
their fused node (ep/skip_norm_match.h): its normalized rows and its sum equal ORT's own kernel bit for
bit, and the projections of those rows equal the W4A8 contract; 2-D and 3-D inputs, skip broadcast as
ORT allows it, a bias, 1 to 37 rows, 1 and 2 threads. The forms the EP leaves to ORT still run; a skip
of a shape ORT refuses is an error naming the node."""

from __future__ import annotations

import ep_session as es
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_matmul_nbits import nbits_model
from test_matmul_nbits_contract import contract

H = 96
SIZES = (40, 24)


def norm_model(
    x_dims=("M", H),
    skip_dims=None,
    bias=False,
    epsilon=None,
    sum_out=True,
    read_mean=False,
    normed_out=False,
    other_reader=False,
    gamma_input=False,
    levels=(4, 4),
):
    """input + skip -> SkipSimplifiedLayerNormalization -> two MatMulNBits siblings (and the sum as an
    output); the flags make forms the EP declines."""
    skip_dims = x_dims if skip_dims is None else skip_dims
    rng = np.random.default_rng(11)
    gamma = rng.uniform(0.5, 2.0, H).astype(np.float32)
    inits, constants = [], []
    if not gamma_input:
        inits.append(numpy_helper.from_array(gamma, "gamma"))
    norm_inputs = ["input", "skip", "gamma"]
    if bias:
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, H).astype(np.float32), "bias"))
        norm_inputs.append("bias")
    outputs = ["normed", "mean" if read_mean else "", "", "sum" if sum_out else ""]
    while outputs[-1] == "":
        outputs.pop()
    attrs = {} if epsilon is None else {"epsilon": epsilon}
    nodes = [
        helper.make_node(
            "SkipSimplifiedLayerNormalization", norm_inputs, outputs, "norm", domain="com.microsoft", **attrs
        )
    ]
    lead = list(x_dims[:-1])
    graph_outputs = []
    for i, (N, level) in enumerate(zip(SIZES, levels)):
        model, b, scales = nbits_model(H, N, accuracy_level=level, seed=20 + i)
        a = {x.name: helper.get_attribute_value(x) for x in model.graph.node[0].attribute}
        nodes.append(
            helper.make_node(
                "MatMulNBits", ["normed", f"B{i}", f"s{i}"], [f"Y{i}"], f"proj{i}", domain="com.microsoft", **a
            )
        )
        inits += [numpy_helper.from_array(b, f"B{i}"), numpy_helper.from_array(scales, f"s{i}")]
        graph_outputs.append(helper.make_tensor_value_info(f"Y{i}", TensorProto.FLOAT, lead + [N]))
        constants.append((b, scales, N))
    if sum_out:
        graph_outputs.append(helper.make_tensor_value_info("sum", TensorProto.FLOAT, list(x_dims)))
    if read_mean:
        graph_outputs.append(helper.make_tensor_value_info("mean", TensorProto.FLOAT, None))
    if normed_out:
        graph_outputs.append(helper.make_tensor_value_info("normed", TensorProto.FLOAT, list(x_dims)))
    if other_reader:
        nodes.append(helper.make_node("Relu", ["normed"], ["relu"], "relu"))
        graph_outputs.append(helper.make_tensor_value_info("relu", TensorProto.FLOAT, list(x_dims)))
    inputs = [
        helper.make_tensor_value_info("input", TensorProto.FLOAT, list(x_dims)),
        helper.make_tensor_value_info("skip", TensorProto.FLOAT, list(skip_dims)),
    ]
    if gamma_input:
        inputs.append(helper.make_tensor_value_info("gamma", TensorProto.FLOAT, [H]))
    graph = helper.make_graph(nodes, "skip_norm", inputs, graph_outputs, inits)
    model = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    return model, constants, gamma


def ort_norm(model, feeds):
    """ORT's CPU kernel alone: the model's norm with its output and sum as graph outputs."""
    norm = next(n for n in model.graph.node if n.op_type == "SkipSimplifiedLayerNormalization")
    node = helper.make_node(norm.op_type, list(norm.input), ["normed", "", "", "sum"], "norm", domain="com.microsoft")
    node.attribute.extend(norm.attribute)
    inputs = [i for i in model.graph.input]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("normed", "sum")]
    inits = [i for i in model.graph.initializer if i.name in norm.input]
    alone = helper.make_model(
        helper.make_graph([node], "norm", inputs, outputs, inits),
        ir_version=10,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
    )
    return es.run_cpu(alone, feeds)


def feeds_for(x_dims, skip_dims, rows, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(rows) + (H,)
    if len(skip_dims) < len(x_dims):
        skip_shape = shape[1:]  # [S, H]
    elif skip_dims[0] == 1:
        skip_shape = (1,) + shape[1:]  # [1, S, H]
    else:
        skip_shape = shape
    return {
        "input": (rng.standard_normal(shape) * rng.uniform(0.1, 30)).astype(np.float32),
        "skip": (rng.standard_normal(skip_shape) * 3).astype(np.float32),
    }


CASES = [
    (("M", H), None, (1,)),
    (("M", H), None, (3,)),
    (("M", H), None, (37,)),
    ((2, "S", H), None, (2, 5)),
    (("B", "S", H), (1, "S", H), (3, 4)),
    (("B", "S", H), ("S", H), (2, 9)),
]


@pytest.mark.parametrize("x_dims,skip_dims,rows", CASES, ids=str)
@pytest.mark.parametrize("bias,epsilon", [(False, None), (True, 1e-5)], ids=["plain", "bias_eps"])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_norm_runs_in_its_projections_fused_node(ep_lib, x_dims, skip_dims, rows, bias, epsilon, threads):
    model, constants, _ = norm_model(x_dims, skip_dims, bias=bias, epsilon=epsilon)
    feeds = feeds_for(x_dims, skip_dims or x_dims, rows, seed=sum(rows))
    run = es.run_with_ep(model, feeds, threads=threads)
    assert sorted(op for _, op in run.ep_nodes()) == ["MatMulNBits", "MatMulNBits", "SkipSimplifiedLayerNormalization"]
    assert run.fused_nodes == 1 and run.group_runs == 2 and run.counters["norm_runs"] == 1
    y0, y1, total = run.outputs[0]
    normed, want_sum = ort_norm(model, feeds)
    assert np.array_equal(total.view(np.uint32), want_sum.view(np.uint32)), "the sum differs from ORT's"
    for i, y in enumerate((y0, y1)):
        b, scales, N = constants[i]
        want, _ = contract(normed.reshape(-1, H), b, scales, None, N, H, 4, 32)
        assert np.array_equal(y.reshape(-1, N).view(np.uint32), want.view(np.uint32)), f"projection {i}"


def test_the_sum_may_be_read_by_nothing(ep_lib):
    model, constants, _ = norm_model(sum_out=False)
    feeds = feeds_for(("M", H), ("M", H), (4,), seed=5)
    run = es.run_with_ep(model, feeds)
    assert run.counters["norm_runs"] == 1
    normed, _ = ort_norm(model, feeds)
    b, scales, N = constants[0]
    want, _ = contract(normed, b, scales, None, N, H, 4, 32)
    assert np.array_equal(run.outputs[0][0].view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize(
    "form",
    ["read_mean", "normed_out", "other_reader", "gamma_input", "one_projection_declined"],
)
def test_forms_left_to_ort_run_as_before(ep_lib, form):
    """The norm stays with ORT when its mean is read, its output is read by anything but the node's
    projections (a graph output, another operator, a projection the EP declines), or gamma is not a
    constant; the outputs are ORT's."""
    model, _, gamma = norm_model(
        read_mean=form == "read_mean",
        normed_out=form == "normed_out",
        other_reader=form == "other_reader",
        gamma_input=form == "gamma_input",
        levels=(4, 0) if form == "one_projection_declined" else (4, 4),
    )
    feeds = feeds_for(("M", H), ("M", H), (3,), seed=8)
    if form == "gamma_input":
        feeds["gamma"] = gamma
    run = es.run_with_ep(model, feeds)
    assert run.counters["norm_runs"] == 0
    assert "SkipSimplifiedLayerNormalization" not in {op for _, op in run.ep_nodes()}
    want = es.run_cpu(model, feeds)
    names = [o.name for o in model.graph.output]
    for name, got, expected in zip(names, run.outputs[0], want):
        if name.startswith("Y"):
            continue  # the EP's projections: the contract, tested above
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_a_skip_ort_refuses_is_an_error_naming_the_node(ep_lib):
    """skip [B, 1, H] against input [B, S, H]: ORT's kernel refuses it, and so does the EP's, by name."""
    model, _, _ = norm_model(x_dims=("B", "S", H), skip_dims=("B", "T", H))
    rng = np.random.default_rng(2)
    feeds = {
        "input": rng.standard_normal((2, 3, H)).astype(np.float32),
        "skip": rng.standard_normal((2, 1, H)).astype(np.float32),
    }
    with pytest.raises(Exception, match="last two dimensions of skip"):
        es.run_cpu(model, feeds)
    with pytest.raises(Exception, match=r"onebit: SkipSimplifiedLayerNormalization 'norm': skip \[2,1,96\]"):
        es.run_with_ep(model, feeds)


def test_a_skip_of_another_batch_repeats_as_orts(ep_lib):
    """skip [k, S, H] against input [B, S, H], k other than B and 1: ORT adds skip row r modulo k·S, and
    so does the EP."""
    model, constants, _ = norm_model(x_dims=("B", "S", H), skip_dims=("K", "S", H))
    rng = np.random.default_rng(4)
    for b, k in ((2, 4), (2, 3), (4, 2)):
        feeds = {
            "input": rng.standard_normal((b, 3, H)).astype(np.float32),
            "skip": rng.standard_normal((k, 3, H)).astype(np.float32),
        }
        run = es.run_with_ep(model, feeds)
        assert run.counters["norm_runs"] == 1
        normed, want_sum = ort_norm(model, feeds)
        assert np.array_equal(run.outputs[0][2].view(np.uint32), want_sum.view(np.uint32)), (b, k)
        b0, scales, N = constants[0]
        want, _ = contract(normed.reshape(-1, H), b0, scales, None, N, H, 4, 32)
        assert np.array_equal(run.outputs[0][0].reshape(-1, N).view(np.uint32), want.view(np.uint32)), (b, k)


@pytest.mark.parametrize("epsilon", [-1e-5, float("nan")])
def test_an_epsilon_ort_refuses_stays_with_ort_which_says_so(ep_lib, epsilon):
    model, _, _ = norm_model(epsilon=epsilon)
    feeds = feeds_for(("M", H), ("M", H), (2,), seed=1)
    with pytest.raises(Exception, match="epsilon"):
        es.run_cpu(model, feeds)
    with pytest.raises(Exception, match="epsilon"):
        es.run_with_ep(model, feeds)


def if_reading(value):
    """An If whose branches read `value` from the outer graph (an implicit input of the If node)."""
    out = helper.make_tensor_value_info("r", TensorProto.FLOAT, None)
    then = helper.make_graph([helper.make_node("Relu", [value], ["r"])], "then", [], [out])
    other = helper.make_graph([helper.make_node("Neg", [value], ["r"])], "else", [], [out])
    return helper.make_node("If", ["c"], ["branch"], "if", then_branch=then, else_branch=other)


@pytest.mark.parametrize("read", ["normed", "sum"])
def test_a_value_an_if_branch_reads_is_seen_as_read(ep_lib, read):
    """A subgraph reading the norm's output is a reader like any other: the norm stays with ORT. One
    reading the sum (written out anyway) changes nothing."""
    model, _, _ = norm_model()
    model.graph.node.append(if_reading(read))
    model.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    model.graph.output.append(helper.make_tensor_value_info("branch", TensorProto.FLOAT, None))
    feeds = feeds_for(("M", H), ("M", H), (3,), seed=6)
    feeds["c"] = np.array(True)
    run = es.run_with_ep(model, feeds)
    assert run.counters["norm_runs"] == (0 if read == "normed" else 1)
    want = es.run_cpu(model, feeds)
    np.testing.assert_array_equal(run.outputs[0][-1], want[-1])
    np.testing.assert_array_equal(run.outputs[0][2], want[2])
