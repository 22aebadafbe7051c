# SPDX-License-Identifier: Apache-2.0
"""Peak memory of creating a session: ORT maps a model's external-data initializers from their
file; once the EP has packed a weight it pages ORT's copy out, so the peak holds about one copy
of the int8 weights, not two (ORT frees its copies only after every group is compiled)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import onnx

from conftest import HERE, REPO

sys.path.insert(0, str(REPO / "examples"))
from python_demo import PROJECTIONS, projection_stack  # noqa: E402

LAYERS = 6  # 42 groups, 94 MB of int8 weights: enough that the weights dominate the session's own memory

ARM = textwrap.dedent("""
    import json, pathlib, sys
    import numpy as np
    sys.path.insert(0, sys.argv[2])
    import ep_session as es

    def peak_bytes():
        for line in pathlib.Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    es.ensure_registered()
    before = peak_bytes()
    sess = es.create_ep_session(pathlib.Path(sys.argv[1]))
    sess.run(None, {"x_q": np.zeros((1, 1024), np.int8)})
    print(json.dumps({"before": before, "after": peak_bytes()}))
""")


def test_session_peak_holds_about_one_copy_of_the_weights(ep_lib):
    # Under build/, on disk: /tmp may be tmpfs, whose pages only leave memory for swap.
    (REPO / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=REPO / "build") as directory:
        path = pathlib.Path(directory) / "stack.onnx"
        onnx.save(projection_stack(LAYERS), path, save_as_external_data=True, location="stack.onnx.data")
        with open(path.with_suffix(".onnx.data"), "rb+") as data:
            os.fsync(data.fileno())  # clean file pages, like any model file written before the run
        out = subprocess.run([sys.executable, "-c", ARM, str(path), str(HERE)], capture_output=True, text=True,
                             check=True, timeout=300)
    weight_bytes = sum(K * N for _, K, N in PROJECTIONS) * LAYERS
    peak = json.loads(out.stdout.strip().splitlines()[-1])
    growth = peak["after"] - peak["before"]
    print(f"session peak growth {growth / 2**20:.0f} MiB for {weight_bytes / 2**20:.0f} MiB of int8 weights")
    assert growth < 1.5 * weight_bytes, (
        f"creating the session raised the peak by {growth / 2**20:.0f} MiB, "
        f"{growth / weight_bytes:.2f}x the {weight_bytes / 2**20:.0f} MiB of int8 weights")
