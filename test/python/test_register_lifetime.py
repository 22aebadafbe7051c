# SPDX-License-Identifier: Apache-2.0
"""The wheel's register() / unregister() (python/onnxruntime_ep_onebit): ORT frees the EP devices
with the library, and a device used after that reads freed memory inside onnxruntime, so the
helpers hold the registration while a device register() returned is alive. Runs the package as
installed (its folder with the library beside __init__.py, and its dist-info) in a fresh process,
since this one has the library registered for the other tests."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import ep_session as es
import numpy as np
import onnx
import qdq_models as qm
import reference
from qdq_models import QdqSpec

REPO = pathlib.Path(__file__).resolve().parent.parent.parent

CHILD = textwrap.dedent("""
    import gc, json, sys
    import numpy as np, onnxruntime as ort
    import onnxruntime_ep_onebit as onebit

    def listed():
        return sum(d.ep_name == onebit.get_ep_name() for d in ort.get_ep_devices())

    def run(devices):
        so = ort.SessionOptions()
        so.add_provider_for_devices(devices, {"device": "none"})
        sess = ort.InferenceSession(sys.argv[1], sess_options=so, enable_fallback=0)
        return sess.run(None, dict(np.load(sys.argv[2])))[0]

    steps = []
    def attempt(what):
        try:
            onebit.unregister()
            steps.append([what, "unregistered", listed()])
        except RuntimeError as e:
            steps.append([what, "refused: " + str(e), listed()])

    attempt("before register")
    devices = onebit.register()
    first = run(devices)
    attempt("devices alive")
    kept = devices[0]
    del devices
    attempt("one device kept")
    del kept
    attempt("devices dropped")
    attempt("again")
    second = run(onebit.register())  # registers anew
    np.savez(sys.argv[3], first=first, second=second)
    print(json.dumps(steps))
""")


def installed_package(folder: pathlib.Path, ep_lib: str) -> pathlib.Path:
    """The package as a wheel installs it: its folder (with the library) and its dist-info."""
    package = folder / "onnxruntime_ep_onebit"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text((REPO / "python" / "onnxruntime_ep_onebit" / "__init__.py").read_text())
    (package / "libonebit_ep.so").symlink_to(ep_lib)
    info = folder / "onnxruntime_ep_onebit-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: onnxruntime-ep-onebit\nVersion: 0.1.0\n")
    return folder


def test_unregister_refuses_while_a_device_from_register_is_alive(ep_lib, tmp_path):
    spec = QdqSpec(bias="float", out_type=np.int8, K=32, N=16)
    model = qm.build_qdq_group(spec)
    feeds = {"x_q": qm.random_activation(spec, (5, 32), seed=9)}
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "f.npz", **feeds)
    site = installed_package(tmp_path / "site", ep_lib)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "m.onnx"), str(tmp_path / "f.npz"), str(tmp_path / "o.npz")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert child.returncode == 0, child.stderr
    alive = (
        "1 OnebitExecutionProvider device(s) returned by register() are still referenced: drop them (and "
        "release the sessions made with them) before unregister(); onnxruntime frees the devices with the library"
    )
    nothing = (
        "onnxruntime_ep_onebit.register() has not registered the EP library in this process: nothing to unregister"
    )
    assert json.loads(child.stdout.strip().splitlines()[-1]) == [
        ["before register", f"refused: {nothing}", 0],
        ["devices alive", f"refused: {alive}", 1],  # the registration is kept: the device still works
        ["one device kept", f"refused: {alive}", 1],
        ["devices dropped", "unregistered", 0],
        ["again", f"refused: {nothing}", 0],
    ]
    expected = reference.reference_run(es.level1_model(model), feeds)[0]
    outputs = np.load(tmp_path / "o.npz")
    es.assert_exact(outputs["first"], expected, "first registration")
    es.assert_exact(outputs["second"], expected, "registered again after unregister()")
