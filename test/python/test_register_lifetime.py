# SPDX-License-Identifier: Apache-2.0
"""The wheel's register() / unregister() (python/onnxruntime_ep_onebit): ORT frees the EP devices
with the library, and a device used after that reads freed memory inside onnxruntime, so the
helpers hold the registration while a device register() returned is alive. Runs the package as
installed (its folder with the library beside __init__.py, and its dist-info) in a fresh process,
since this one has the library registered for the other tests. Also: sessions that outlive ORT's
own unregister of the library run and are released without a crash."""

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


# ORT's own unregister does not refuse while a session holds an EP of the library: ORT frees the
# factory then, and released each session through it later (a segfault at exit). The factory now
# lives until its last EP is released, and the library stays mapped.
UNREGISTER_LIVE_CHILD = textwrap.dedent("""
    import gc, sys, threading
    import numpy as np, onnxruntime as ort

    ort.register_execution_provider_library("onebit", sys.argv[1])
    devices = [d for d in ort.get_ep_devices() if d.ep_name == "OnebitExecutionProvider"]
    so = ort.SessionOptions()
    so.add_provider_for_devices(devices, {})
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sessions = [ort.InferenceSession(sys.argv[2], sess_options=so) for _ in range(3)]
    del devices, so
    feeds = dict(np.load(sys.argv[3]))
    before = sessions[0].run(None, feeds)[0]
    ort.unregister_execution_provider_library("onebit")
    after = [s.run(None, feeds)[0] for s in sessions]
    del sessions[0]  # released on this thread, the other two on two threads at once
    releasers = [threading.Thread(target=sessions.pop) for _ in range(2)]
    [t.start() for t in releasers]
    [t.join() for t in releasers]
    gc.collect()
    np.savez(sys.argv[4], before=before, **{f"after{i}": a for i, a in enumerate(after)})
""")


def run_group_child(child_code, ep_lib, tmp_path):
    """Runs child_code in a fresh interpreter on one QDQ group (argv: library, model, feeds, the
    outputs file tmp_path/o.npz); asserts it exited 0 and returns the model and its feeds."""
    spec = QdqSpec(bias="float", out_type=np.int8, K=32, N=16)
    model = qm.build_qdq_group(spec)
    feeds = {"x_q": qm.random_activation(spec, (5, 32), seed=9)}
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "f.npz", **feeds)
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            child_code,
            ep_lib,
            str(tmp_path / "m.onnx"),
            str(tmp_path / "f.npz"),
            str(tmp_path / "o.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, f"exit code {child.returncode}: {child.stderr}"
    return model, feeds


def test_sessions_outlive_ort_unregistering_the_library(ep_lib, tmp_path):
    model, feeds = run_group_child(UNREGISTER_LIVE_CHILD, ep_lib, tmp_path)
    expected = reference.reference_run(es.level1_model(model), feeds)[0]
    outputs = np.load(tmp_path / "o.npz")
    es.assert_exact(outputs["before"], expected, "before unregistering")
    for i in range(3):
        es.assert_exact(outputs[f"after{i}"], expected, f"session {i} after unregistering")


# The same library under two names: one factory, so a session may take the EP's devices of both
# names (as genai's append by EP name does) and each name's unregister leaves the other working.
TWO_NAMES_CHILD = textwrap.dedent("""
    import sys
    import numpy as np, onnxruntime as ort

    def session(devices):
        so = ort.SessionOptions()
        so.add_provider_for_devices(devices, {})
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return ort.InferenceSession(sys.argv[2], sess_options=so)

    def devices():
        return [d for d in ort.get_ep_devices() if d.ep_name == "OnebitExecutionProvider"]

    feeds = dict(np.load(sys.argv[3]))
    ort.register_execution_provider_library("onebit", sys.argv[1])
    ort.register_execution_provider_library("onebit_again", sys.argv[1])
    listed = len(devices())
    both = session(devices()).run(None, feeds)[0]
    ort.unregister_execution_provider_library("onebit")
    second = session(devices()).run(None, feeds)[0]
    ort.unregister_execution_provider_library("onebit_again")
    np.savez(sys.argv[4], listed=listed, both=both, second=second)
""")


def test_one_library_under_two_names_is_one_ep(ep_lib, tmp_path):
    model, feeds = run_group_child(TWO_NAMES_CHILD, ep_lib, tmp_path)
    outputs = np.load(tmp_path / "o.npz")
    assert outputs["listed"] == 2  # one device per name
    expected = reference.reference_run(es.level1_model(model), feeds)[0]
    es.assert_exact(outputs["both"], expected, "a session over both names' devices")
    es.assert_exact(outputs["second"], expected, "the second name after the first is unregistered")
