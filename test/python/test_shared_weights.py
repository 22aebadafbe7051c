# SPDX-License-Identifier: Apache-2.0
"""Sessions of one model in one process share one packed copy of its weights (engine/shared_weights.h),
and with a device (device=emu) one opened device and one upload of each weight to it
(engine/shared_device.h, engine/shared_device_weights.h).

Each arm runs in a child process, so that its proportional set size (PSS, /proc/self/smaps_rollup)
is its own: it creates sessions one after the other, runs each once, and reports its PSS after
each creation. The bound on an extra session's growth, a quarter of the packed weights, holds
because such a session adds no copy of the weights at all: the packing is found in the registry,
and ORT's copy of every initializer a group consumed is dropped (drop_constant_initializers) and
paged out; what it adds is ORT's session state, a few MiB whatever the weights' size. The arm with
sharing off (ONEBIT_SHARE_WEIGHTS=0) grows by about the packed size per session, so the bound
would catch a second copy. On the emulated device a weight's upload is a buffer with a host and a
device copy (npu/emu/emu_device.cpp), so a session that does not share adds about three times the
packed size (host packing, the buffer's two copies), and one that does adds none of them.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import threading

import ep_session as es
import numpy as np
import onnx
import pytest
import qdq_models as qm
import reference
from conftest import HERE, REPO

DIMS = (2048, 6144)  # one int8 weight of 12 MiB, far above a session's own state
WEIGHT_BYTES = sum(k * n for k, n in zip(DIMS, DIMS[1:]))
ROWS = 5

ARM = textwrap.dedent("""
    import json, pathlib, sys
    import numpy as np
    sys.path.insert(0, sys.argv[2])
    import ep_session as es

    es.ensure_registered()
    x = np.load(sys.argv[4])
    options = json.loads(sys.argv[5])
    sessions, pss, outputs = [], [], []
    for path in sys.argv[6:] * int(sys.argv[3]):
        sessions.append(es.create_ep_session(pathlib.Path(path), options))
        outputs.append(sessions[-1].run(None, {"x_q": x})[0])
        pss.append(es.pss_bytes())
    np.save(sys.argv[4] + ".out.npy", np.stack(outputs))
    print(json.dumps(pss))
""")


def model(seed: int = 7) -> onnx.ModelProto:
    return qm.build_qdq_stack(dims=DIMS, seed=seed)


def activation() -> np.ndarray:
    return qm.random_activation(np.int8, (ROWS, DIMS[0]), seed=3)


def with_last_weight_byte_changed(m: onnx.ModelProto) -> onnx.ModelProto:
    """The same model but for the last byte of its weight (column N-1 at k = K-1)."""
    changed = onnx.ModelProto()
    changed.CopyFrom(m)
    w = next(t for t in changed.graph.initializer if t.name == "l0_w_q")
    values = onnx.numpy_helper.to_array(w).copy()
    values[-1, -1] = values[-1, -1] + 100 if values[-1, -1] < 0 else values[-1, -1] - 100
    w.CopyFrom(onnx.numpy_helper.from_array(values, w.name))
    return changed


def run_arm(ep_lib, directory: pathlib.Path, models: list[pathlib.Path], rounds: int, share: bool, options=None):
    """PSS after each session (`rounds` times through `models`, created with the EP `options`) and
    each session's output."""
    x_path = directory / "x.npy"
    np.save(x_path, activation())
    env = dict(os.environ, ONEBIT_SHARE_WEIGHTS="1" if share else "0")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            ARM,
            ep_lib,
            str(HERE),
            str(rounds),
            str(x_path),
            json.dumps(options or {}),
            *map(str, models),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), np.load(str(x_path) + ".out.npy")


@pytest.fixture
def model_dir():
    """A temporary folder under build/, on disk: /tmp may be tmpfs, whose pages only leave memory for swap."""
    (REPO / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=REPO / "build") as directory:
        yield pathlib.Path(directory)


@pytest.fixture
def emu(tmp_path, monkeypatch):
    """Options for sessions on the emulated device, every call on it, with their own design cache
    and lock file (children inherit the environment)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("ONEBIT_DEVICE", raising=False)
    return {"device": "emu", "min_device_rows": "1", "designs_dir": str(tmp_path / "designs")}


def saved(m: onnx.ModelProto, path: pathlib.Path) -> pathlib.Path:
    """With its weights in external data, as large models are: ORT maps that file (see the module doc)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(m)  # saving moves the weights out of the proto it is given
    onnx.save(copy, path, save_as_external_data=True, location=path.name + ".data", size_threshold=1024)
    return path


# Per session without sharing: the host packing, and on the device also its buffer's two copies.
COPIES_WITHOUT_SHARING = {"host": 0.75, "emu": 2.5}


@pytest.mark.memory
@pytest.mark.parametrize("where", ["host", "emu"])
def test_sessions_of_one_model_share_its_packed_weights(ep_lib, model_dir, request, where):
    """4 sessions of one model, on the host or the emulated device: with sharing each session after
    the first adds under a quarter of the weights' bytes, without it a copy or (device) three."""
    options = request.getfixturevalue("emu") if where == "emu" else None
    m = model()
    path = saved(m, model_dir / "stack.onnx")
    expected = reference.reference_run(m, {"x_q": activation()})[0]
    sessions = 4
    growth = {}
    for share in (True, False):
        pss, outputs = run_arm(ep_lib, model_dir, [path], sessions, share, options)
        for i, y in enumerate(outputs):
            np.testing.assert_array_equal(y, expected, err_msg=f"session {i} on {where}, share={share}")
        growth[share] = (pss[-1] - pss[0]) / (sessions - 1)
        es.record_measurement(
            f"shared weights on {where}: {WEIGHT_BYTES / 2**20:.0f} MiB of int8 weights, PSS "
            f"{pss[0] / 2**20:.1f} MiB with one session, +{growth[share] / 2**20:.1f} MiB per "
            f"extra session with sharing {'on' if share else 'off'}"
        )
    assert growth[True] < 0.25 * WEIGHT_BYTES, growth
    assert growth[False] > COPIES_WITHOUT_SHARING[where] * WEIGHT_BYTES, f"sharing off adds its copies: {growth}"


@pytest.mark.parametrize("share", [True, False])
def test_a_device_session_beside_another_uploads_nothing(ep_lib, emu, monkeypatch, share):
    """The second session of a model on the device finds every weight uploaded (device_weight_bytes
    0) and computes the same exact outputs; with ONEBIT_SHARE_WEIGHTS=0 it uploads its own."""
    monkeypatch.setenv("ONEBIT_SHARE_WEIGHTS", "1" if share else "0")
    m = qm.build_qdq_stack(dims=(256, 512, 256), seed=1)
    x = qm.random_activation(np.int8, (ROWS, 256), seed=4)
    expected = reference.reference_run(m, {"x_q": x})[0]
    alone = es.run_with_ep(m, {"x_q": x}, options=emu)
    held = es.create_ep_session(m, emu)
    np.testing.assert_array_equal(held.run(None, {"x_q": x})[0], expected)
    beside = es.run_with_ep(m, {"x_q": x}, options=emu)
    del held
    for run in (alone, beside):
        np.testing.assert_array_equal(run.outputs[0][0], expected)
        assert run.counters["device_calls"] == 2 and run.counters["device_fallbacks"] == 0, run.counters
    assert alone.counters["device_weight_bytes"] >= 2 * 256 * 512, alone.counters  # the two weights, padded
    uploaded = alone.counters["device_weight_bytes"] if not share else 0
    assert beside.counters["device_weight_bytes"] == uploaded, (share, beside.counters)


def test_models_one_byte_apart_do_not_share(ep_lib, model_dir):
    a = model()
    b = with_last_weight_byte_changed(a)
    paths = [saved(a, model_dir / "a.onnx"), saved(b, model_dir / "b.onnx")]
    x = activation()
    expected = [reference.reference_run(m, {"x_q": x})[0] for m in (a, b)]
    assert not np.array_equal(expected[0][:, -1], expected[1][:, -1])  # the byte shows in column N-1
    np.testing.assert_array_equal(expected[0][:, :-1], expected[1][:, :-1])
    _, outputs = run_arm(ep_lib, model_dir, paths, 2, share=True)  # a, b, a, b
    for i, y in enumerate(outputs):
        np.testing.assert_array_equal(y, expected[i % 2], err_msg=f"session {i}")


@pytest.mark.parametrize("device", ["none", "emu"])
def test_concurrent_creation_and_release(ep_lib, emu, device):
    """Threads creating, running and releasing sessions of two models at once, on the host or all
    on one emulated device: every output exact."""
    options = emu if device == "emu" else {"device": "none"}
    models = [qm.build_qdq_stack(dims=(256, 512, 256), seed=s) for s in (1, 2)]
    data = [m.SerializeToString() for m in models]
    x = qm.random_activation(np.int8, (ROWS, 256), seed=4)
    expected = [reference.reference_run(m, {"x_q": x})[0] for m in models]
    errors: list[str] = []

    def worker(t: int):
        try:
            for round_ in range(6):
                which = (t + round_) % 2
                sess = es.create_ep_session(data[which], options)
                y = sess.run(None, {"x_q": x})[0]
                if not np.array_equal(y, expected[which]):
                    errors.append(f"thread {t} round {round_}: output differs from the reference")
                del sess
        except Exception as e:  # noqa: BLE001 - reported below with the thread
            errors.append(f"thread {t}: {e!r}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
