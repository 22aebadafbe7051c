# SPDX-License-Identifier: Apache-2.0
"""The check the tests use to choose their bound against ORT's CPU EP (ort_int8.py) says what ORT
computes on this CPU: where it reports saturation, ORT's uint8 x int8 MatMulInteger on random
full-range operands is wrong against exact int64 arithmetic; where it reports none, it is exact."""

from __future__ import annotations

import json
import os

import ep_session as es
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from ort_int8 import K, ort_u8s8_saturates, ort_u8s8_wrong_outputs, saturating_matmul_integer


def test_the_check_matches_ort_on_full_range_operands():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (4, 256)).astype(np.uint8)
    b = rng.integers(-127, 128, (256, 256)).astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
        "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 256])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [4, 256])],
        [numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    (y,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"a": a})
    wrong = int((y != a.astype(np.int64) @ b.astype(np.int64)).sum())
    print(
        f"ORT u8·s8 MatMulInteger 4x256x256, full range: {wrong} of {y.size} outputs wrong; "
        f"the check: {ort_u8s8_wrong_outputs()} of 16"
    )
    # Measured: 0 on AVX-512 VNNI; about 1000 of 1024 on AVX2 without VNNI (real and emulated).
    assert (wrong > 100) if ort_u8s8_saturates() else (wrong == 0)


@pytest.mark.skipif(
    os.environ.get("ONEBIT_EMULATED_CPU") != "avx2", reason="the emulated AVX2 leg only (scripts/test_avx2_emulated.sh)"
)
def test_the_emulated_cpu_is_an_avx2_one(ep_lib, tmp_path):
    """Under qemu-x86_64 -cpu Haswell both ORT and the EP must see an AVX2 CPU without VNNI, or the
    leg checks nothing of what it is for: ORT saturates, the EP runs its avx2 kernel, exactly."""
    assert ort_u8s8_saturates(), f"ORT's kernel is exact here: {ort_u8s8_wrong_outputs()} of 16 wrong"
    trace = tmp_path / "trace.json"
    model = onnx.load_from_string(saturating_matmul_integer())
    run = es.run_with_ep(model, {"a": np.full((1, K), 255, np.uint8)}, options={"trace": str(trace)})
    assert run.groups == 1, run.counters
    assert (run.outputs[0][0] == 255 * 127 * K).all()
    assert json.loads(trace.read_text())["otherData"]["host_kernel"] == "avx2"
