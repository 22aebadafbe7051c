# SPDX-License-Identifier: Apache-2.0
"""A plain C-API application (test/host/onebit_c_host) registers the EP in ORT 1.30 — the
runtime onnxruntime-node ships — and runs QDQ models; its output must equal exact arithmetic."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
import qdq_models as qm
import reference


def host_paths():
    paths = [os.environ.get(k) for k in ("ONEBIT_C_HOST", "ONEBIT_ORT_LIB", "ONEBIT_EP_LIB")]
    missing = [
        k for k, p in zip(("ONEBIT_C_HOST", "ONEBIT_ORT_LIB", "ONEBIT_EP_LIB"), paths) if not p or not os.path.isfile(p)
    ]
    if missing:
        pytest.fail(f"set {', '.join(missing)} to existing files (scripts/test.sh does)")
    return paths


def deterministic_input(M, K, dtype):
    """The input onebit_c_host feeds: element i is (i*37 + 11) mod 256, read as int8 or uint8."""
    raw = ((np.arange(M * K, dtype=np.int64) * 37 + 11) % 256).astype(np.uint8)
    return raw.view(dtype).reshape(M, K)


@pytest.mark.parametrize("x_type,out_type", [(np.int8, np.int8), (np.uint8, np.uint8), (np.int8, None)])
def test_c_host_runs_qdq_group_exactly(tmp_path, x_type, out_type):
    host, ort_lib, ep_lib = host_paths()
    spec = qm.QdqSpec(K=48, N=20, x_type=x_type, out_type=out_type, bias="float", w_per_channel=True, name="c_host")
    model = qm.build_qdq_group(spec)
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    M = 5
    result = subprocess.run(
        [host, ort_lib, ep_lib, str(path), str(M), str(spec.K)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "second registration: library is already registered under onebit", lines[0]
    assert lines[1] == "devices: 1"
    printed = lines[2].split()[1:]
    assert "onebit: group_runs=1 groups=1" in result.stderr, result.stderr

    x = deterministic_input(M, spec.K, x_type)
    expected = reference.reference_run(model, {model.graph.input[0].name: x})[0].reshape(-1)
    if out_type is None:
        actual = np.array([np.float32(v) for v in printed], dtype=np.float32)
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_array_equal(np.array(printed, dtype=np.int64), expected.astype(np.int64))
