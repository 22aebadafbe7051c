# SPDX-License-Identifier: Apache-2.0
"""The check the tests use to choose their bound against ORT's CPU EP (ort_int8.py) says what ORT
computes on this CPU: where it reports saturation, ORT's uint8 x int8 MatMulInteger on random
full-range operands is wrong against exact int64 arithmetic; where it reports none, it is exact."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from ort_int8 import ort_u8s8_saturates, ort_u8s8_wrong_outputs


def test_the_check_matches_ort_on_full_range_operands():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (4, 256)).astype(np.uint8)
    b = rng.integers(-127, 128, (256, 256)).astype(np.int8)
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [4, 256])],
                              [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    (y,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"a": a})
    wrong = int((y != a.astype(np.int64) @ b.astype(np.int64)).sum())
    print(f"ORT u8·s8 MatMulInteger 4x256x256, full range: {wrong} of {y.size} outputs wrong; "
          f"the check: {ort_u8s8_wrong_outputs()} of 16")
    # Measured: 0 on AVX-512 VNNI; about 1000 of 1024 on AVX2 without VNNI (real and emulated).
    assert (wrong > 100) if ort_u8s8_saturates() else (wrong == 0)
