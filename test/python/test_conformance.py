# SPDX-License-Identifier: Apache-2.0
"""ONNX backend node tests (shared copy) run with the onebit EP registered.

* QLinearMatMul / MatMulInteger cases are turned into "constant weight" variants (every input
  except the activation becomes an initializer with the test-data value): the EP must claim the
  node (trace: groups == 1, group_runs == 1) and reproduce output_0.pb exactly.
* The same cases with B left a graph input ("non-constant B" variants: scales and zero points
  initializers, except MatMulInteger's zero points, which the EP reads per call) are activation x
  activation groups: with ONEBIT_ACTIVATION_MATMULS=all the EP claims them and reproduces
  output_0.pb exactly.
* Every case, unmodified (all operands are graph inputs), must still match the ONNX expected
  outputs with the EP registered; the EP must decline all of them (nothing there has a constant
  quantized weight, and the measured rule declines activation x activation groups). Cases ORT's
  own CPU EP cannot run are skipped with ORT's message.
"""

from __future__ import annotations

import pathlib

import ep_session as es
import onnx
import pytest
import reference
from conftest import node_tests_dir

ROOT = node_tests_dir()
CLAIMED_OPS = ("QLinearMatMul", "MatMulInteger")


def _cases():
    if not ROOT.is_dir():
        return []
    return sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / "model.onnx").is_file())


CASES = _cases()
CLAIMABLE = [c for c in CASES if c.startswith(("test_qlinearmatmul", "test_matmulinteger"))]


def test_node_tests_present():
    assert ROOT.is_dir(), f"ONNX node tests not found at {ROOT} (set ONNX_NODE_TESTS)"
    assert len(CLAIMABLE) == 6, f"expected 5 QLinearMatMul + 1 MatMulInteger cases, found {CLAIMABLE}"
    families = {onnx.load(str(ROOT / c / "model.onnx")).graph.node[-1].op_type for c in CASES}
    assert {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "MatMul",
        "Gemm",
        "QLinearMatMul",
        "MatMulInteger",
    } <= families, families


def _numbered(folder: pathlib.Path, prefix: str):
    files = sorted(folder.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
    return [onnx.load_tensor(str(f)) for f in files]


def load_case(name):
    d = ROOT / name
    model = onnx.load(str(d / "model.onnx"))
    inputs = _numbered(d / "test_data_set_0", "input")
    outputs = _numbered(d / "test_data_set_0", "output")
    assert len(inputs) == len(model.graph.input) and len(outputs) == len(model.graph.output)
    return model, inputs, outputs


def constant_weight_variant(model: onnx.ModelProto, inputs, keep=("a", "A")) -> tuple[onnx.ModelProto, dict]:
    """Every graph input not named in `keep` (by default the activation a / A) becomes an initializer."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    kept = [vi for vi in m.graph.input if vi.name in keep]
    for vi, t in zip(list(m.graph.input), inputs):
        if vi.name in keep:
            continue
        init = onnx.TensorProto()
        init.CopyFrom(t)
        init.name = vi.name
        m.graph.initializer.append(init)
    del m.graph.input[:]
    m.graph.input.extend(kept)
    onnx.checker.check_model(m)
    assert m.ir_version == model.ir_version and list(m.opset_import) == list(model.opset_import)
    feeds = {vi.name: es.tensor_feed(t) for vi, t in zip(model.graph.input, inputs) if vi.name in keep}
    return m, feeds


def cpu_or_skip(model, feeds, expected, name):
    """Run on ORT's CPU EP alone first; skip (with ORT's message) what it cannot run."""
    try:
        got = es.run_cpu(model, feeds)
    except Exception as e:  # noqa: BLE001 - ORT's Fail/NotImplemented types
        pytest.skip(f"ORT CPU EP cannot run {name}: {e}")
    for g, e in zip(got, expected):
        es.assert_matches_expected(g, e, f"{name} on ORT CPU EP")


@pytest.mark.parametrize("name", CLAIMABLE)
def test_reference_matches_onnx_expected(name):
    """The exact reference used elsewhere reproduces ONNX's expected output (no EP involved)."""
    model, inputs, outputs = load_case(name)
    feeds = {vi.name: onnx.numpy_helper.to_array(t) for vi, t in zip(model.graph.input, inputs)}
    got = reference.reference_run(model, feeds)
    es.assert_exact(got[0], onnx.numpy_helper.to_array(outputs[0]), name)


@pytest.mark.parametrize("name", CLAIMABLE)
def test_constant_weight_variant_claimed_and_exact(name, ep_lib):
    model, inputs, outputs = load_case(name)
    variant, feeds = constant_weight_variant(model, inputs)
    op = model.graph.node[0].op_type
    assert op in CLAIMED_OPS
    run = es.run_with_ep(variant, feeds)
    expected = onnx.numpy_helper.to_array(outputs[0])
    es.assert_exact(run.outputs[0][0], expected, f"{name} (constant weights) with the EP")
    assert run.counters["groups"] == 1 and run.counters["group_runs"] == 1, (
        f"{name}: the EP did not claim/run the {op} node: {run.counters}"
    )
    cpu_ops = [op_type for _, op_type in run.ep_nodes("CPUExecutionProvider")]
    assert op not in cpu_ops, f"{name}: {op} was assigned to the CPU EP: {run.assignment}"


# Left graph inputs in the non-constant B variants.
NON_CONSTANT_B = ("a", "b", "A", "B", "a_zero_point", "b_zero_point")


@pytest.mark.parametrize("name", CLAIMABLE)
def test_non_constant_b_variant_claimed_and_exact(name, ep_lib, monkeypatch):
    monkeypatch.setenv("ONEBIT_ACTIVATION_MATMULS", "all")
    model, inputs, outputs = load_case(name)
    op = model.graph.node[0].op_type
    keep = NON_CONSTANT_B if op == "MatMulInteger" else NON_CONSTANT_B[:2]
    variant, feeds = constant_weight_variant(model, inputs, keep)
    assert len(feeds) == (4 if op == "MatMulInteger" else 2)
    run = es.run_with_ep(variant, feeds)
    es.assert_exact(run.outputs[0][0], onnx.numpy_helper.to_array(outputs[0]), f"{name} (non-constant B) with the EP")
    assert run.counters["groups"] == 1 and run.counters["group_runs"] == 1, (
        f"{name}: the EP did not claim/run the {op} node: {run.counters}\n{run.stderr}"
    )


@pytest.mark.parametrize("name", CASES)
def test_unmodified_case_with_ep_registered(name, ep_lib, monkeypatch):
    monkeypatch.delenv("ONEBIT_ACTIVATION_MATMULS", raising=False)  # the measured rule
    model, inputs, outputs = load_case(name)
    feeds = {vi.name: es.tensor_feed(t) for vi, t in zip(model.graph.input, inputs)}
    expected = [es.expected_value(t) for t in outputs]
    cpu_or_skip(model, feeds, expected, name)
    run = es.run_with_ep(model, feeds)
    for i, (g, e) in enumerate(zip(run.outputs[0], expected)):
        es.assert_matches_expected(g, e, f"{name} output {i} with the EP registered")
    # Nothing in these graphs has a constant quantized weight: the EP must decline every node.
    assert run.counters["groups"] == 0 and run.counters["group_runs"] == 0, (
        f"{name}: the EP claimed a node it must decline: {run.counters}"
    )
    assert not run.ep_nodes(), f"{name}: nodes assigned to the EP: {run.ep_nodes()}"
