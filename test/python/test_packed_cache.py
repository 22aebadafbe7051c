# SPDX-License-Identifier: Apache-2.0
"""Processes share packed weights through a packed-weights cache folder (engine/packed_cache.h).

Each process here is a real child process: the first packs the model's weights and writes them
to the folder, later ones map them (counter packed_cache_hits) instead of packing, and every
output is bit-identical to a process's without the cache, also after an entry was corrupted
(detected, warned, repacked and rewritten) and when two processes race to write the same entries.
(Outputs against the exact reference: test_shared_weights.py and test_qdq_models.py.)
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap

import ep_session as es
import numpy as np
import onnx
import pytest
import qdq_models as qm
from conftest import HERE, REPO

ROWS = 5

# argv: test dir, model, x.npy, output .npy, options JSON. Prints the counters, the warnings and
# (with a barrier folder in the options' "barrier", a count in "processes") the PSS growth the
# session brought while every process holds its own.
CHILD = textwrap.dedent("""
    import json, os, pathlib, sys, time
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import ep_session as es

    def wait_for(barrier, phase, processes):
        (barrier / f"{phase}.{os.getpid()}").touch()
        deadline = time.monotonic() + 300
        while len(list(barrier.glob(phase + ".*"))) < processes:
            assert time.monotonic() < deadline, f"barrier {phase}: the other processes did not arrive"
            time.sleep(0.02)

    options = json.loads(sys.argv[5])
    barrier = options.pop("barrier", None)
    processes = int(options.pop("processes", 1))
    es.ensure_registered()
    x = np.load(sys.argv[3])
    before = es.pss_bytes()
    with es.captured_stderr() as err:
        sess = es.create_ep_session(pathlib.Path(sys.argv[2]), {**options, "trace": "1"})
        y = sess.run(None, {"x_q": x})[0]
        growth = None
        if barrier:
            barrier = pathlib.Path(barrier)
            wait_for(barrier, "ready", processes)  # all hold their session: shared pages are divided
            growth = es.pss_bytes() - before
            wait_for(barrier, "measured", processes)
        del sess
    np.save(sys.argv[4], y)
    lines = es.parse_trace(err["text"])
    warnings = [line for line in err["text"].splitlines() if "packed-weights cache" in line]
    print(json.dumps({"counters": lines[0], "warnings": warnings, "growth": growth}))
""")


@pytest.fixture
def work_dir():
    """A temporary folder under build/, on disk (/tmp may be tmpfs), holding the model and the cache."""
    (REPO / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=REPO / "build") as directory:
        path = pathlib.Path(directory)
        (path / "cache").mkdir()
        yield path


def prepared(work: pathlib.Path, dims=(512, 1024, 384)) -> tuple[pathlib.Path, np.ndarray]:
    """The model (external data, as large models are) and its output in a process without the cache."""
    m = qm.build_qdq_stack(dims=dims, seed=17)
    x = qm.random_activation(np.int8, (ROWS, dims[0]), seed=5)
    np.save(work / "x.npy", x)
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    onnx.save(copy, work / "stack.onnx", save_as_external_data=True, location="stack.onnx.data", size_threshold=1024)
    plain, y = run(work, work / "stack.onnx", "plain", {})
    assert (plain["counters"]["packed_cache_hits"], plain["counters"]["packed_cache_writes"]) == (0, 0), plain
    return work / "stack.onnx", y


def start(work: pathlib.Path, model: pathlib.Path, name: str, options: dict, env=None) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(HERE),
            str(model),
            str(work / "x.npy"),
            str(work / f"{name}.npy"),
            json.dumps(options),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, **(env or {})),
    )


def finish(work: pathlib.Path, name: str, child: subprocess.Popen) -> tuple[dict, np.ndarray]:
    out, err = child.communicate(timeout=600)
    assert child.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), np.load(work / f"{name}.npy")


def run(work, model, name, options, env=None):
    return finish(work, name, start(work, model, name, options, env))


def entries(work: pathlib.Path) -> list[pathlib.Path]:
    return sorted((work / "cache").glob("*.onebit-pack"))


def test_second_process_maps_what_the_first_packed(ep_lib, work_dir):
    model, expected = prepared(work_dir)
    cache = {"packed_cache_dir": str(work_dir / "cache")}
    first, y_first = run(work_dir, model, "first", cache)
    second, y_second = run(work_dir, model, "second", {}, env={"ONEBIT_PACKED_CACHE_DIR": cache["packed_cache_dir"]})
    assert (first["counters"]["packed_cache_hits"], first["counters"]["packed_cache_writes"]) == (0, 2), first
    assert (second["counters"]["packed_cache_hits"], second["counters"]["packed_cache_writes"]) == (2, 0), second
    assert first["warnings"] == second["warnings"] == []
    assert len(entries(work_dir)) == 2
    for y in (y_first, y_second):
        np.testing.assert_array_equal(y, expected)


def test_a_corrupt_entry_is_detected_repacked_and_rewritten(ep_lib, work_dir):
    model, expected = prepared(work_dir)
    cache = {"packed_cache_dir": str(work_dir / "cache")}
    run(work_dir, model, "first", cache)
    for entry in entries(work_dir):
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 0x40  # inside the packed blocks
        entry.write_bytes(bytes(data))
    repacked, y_repacked = run(work_dir, model, "repacked", cache)
    assert repacked["counters"]["packed_cache_hits"] == 0, repacked
    assert repacked["counters"]["packed_cache_writes"] == 2, repacked
    assert len(repacked["warnings"]) == 2, repacked["warnings"]
    for entry in entries(work_dir):  # each warning names its file and the check that failed
        assert any(f"{entry}: payload checksum mismatch" in w for w in repacked["warnings"]), repacked["warnings"]
    after, y_after = run(work_dir, model, "after", cache)
    assert after["counters"]["packed_cache_hits"] == 2, after
    np.testing.assert_array_equal(y_repacked, expected)
    np.testing.assert_array_equal(y_after, expected)


def test_two_processes_racing_to_write_the_same_entries(ep_lib, work_dir):
    model, expected = prepared(work_dir)
    cache = {"packed_cache_dir": str(work_dir / "cache")}
    children = [start(work_dir, model, f"racer{i}", cache) for i in range(2)]
    results = [finish(work_dir, f"racer{i}", child) for i, child in enumerate(children)]
    for result, y in results:
        assert result["warnings"] == [], result
        np.testing.assert_array_equal(y, expected)
    assert len(list((work_dir / "cache").iterdir())) == 2  # two entries, no temporary file left
    after, y_after = run(work_dir, model, "after", cache)
    assert after["counters"]["packed_cache_hits"] == 2, after
    np.testing.assert_array_equal(y_after, expected)


def test_a_folder_that_cannot_be_used_fails_session_creation(ep_lib, work_dir):
    model, _ = prepared(work_dir, dims=(64, 32))
    (work_dir / "file").write_text("not a folder")
    for value, why in [(work_dir / "missing", "No such file"), (work_dir / "file", "not a directory")]:
        with pytest.raises(Exception, match=re.escape(f"packed_cache_dir='{value}' is invalid") + f".*{why}"):
            es.create_ep_session(model, {"packed_cache_dir": str(value)})


@pytest.mark.memory
def test_processes_with_the_cache_share_one_copy_of_the_weights(ep_lib, work_dir):
    """4 processes, each holding a session of a model with 32 MiB of int8 weights: together they
    grow by at most 1.5 times what one process alone grows (without sharing it would be 4 times)."""
    model, expected = prepared(work_dir, dims=(4096, 8192, 64))
    cache = {"packed_cache_dir": str(work_dir / "cache")}
    (work_dir / "barrier1").mkdir()
    one, _ = run(work_dir, model, "one", {**cache, "barrier": str(work_dir / "barrier1"), "processes": 1})
    (work_dir / "barrier4").mkdir()
    four_options = {**cache, "barrier": str(work_dir / "barrier4"), "processes": 4}
    children = [start(work_dir, model, f"p{i}", four_options) for i in range(4)]
    results = [finish(work_dir, f"p{i}", child) for i, child in enumerate(children)]
    for result, y in results:
        assert result["counters"]["packed_cache_hits"] == 2, result
        np.testing.assert_array_equal(y, expected)
    together = sum(result["growth"] for result, _ in results)
    es.record_measurement(
        f"packed-weights cache: one process grows by {one['growth'] / 2**20:.1f} MiB with its session, "
        f"4 processes together by {together / 2**20:.1f} MiB"
    )
    assert together <= 1.5 * one["growth"], (together, one["growth"])
