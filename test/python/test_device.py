# SPDX-License-Identifier: Apache-2.0
"""The device path through the EP, on the emulated array (device=emu): outputs equal the host
route's bit for bit, every routing decision has its counter, syncs move exactly the bytes they
should, failures end on the host with the right counter, and the trace file holds every call.

Switches the npu runtime reads once per process (ONEBIT_NPU_FAIL) are tested in child processes."""

from __future__ import annotations

import gc
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import ep_session as es
import numpy as np
import onnx
import pytest
import qdq_models as qm
import reference

STACK_DIMS = (64, 128, 64, 32)  # three groups: 64x128, 128x64, 64x32
SHAPES = list(zip(STACK_DIMS[:-1], STACK_DIMS[1:]))
GROUPS = len(SHAPES)


@pytest.fixture()
def stack():
    return qm.build_qdq_stack(dims=STACK_DIMS, float_output=False)


@pytest.fixture()
def isolated(tmp_path, monkeypatch):
    """Own design cache and lock file for each test."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("ONEBIT_DEVICE", raising=False)
    monkeypatch.delenv("ONEBIT_NPU_NO_C_NARROW", raising=False)
    monkeypatch.delenv("ONEBIT_NPU_DBG", raising=False)
    return {"designs_dir": str(tmp_path / "designs")}


def design_dir(isolated) -> pathlib.Path:
    """Where the cache keeps this generator version's designs (npu/emu/design_builder.h)."""
    return pathlib.Path(isolated["designs_dir"]) / "builder-1"


def feeds_for(rows_list, seed=5):
    return [{"x_q": qm.random_activation(np.int8, (rows, STACK_DIMS[0]), seed=seed + rows)} for rows in rows_list]


def host_outputs(model, feeds):
    return es.run_with_ep(model, feeds, options={"device": "none"}).outputs


def assert_same_outputs(actual, expected):
    for a_run, e_run in zip(actual, expected, strict=True):
        for a, e in zip(a_run, e_run, strict=True):
            es.assert_exact(a, e)


def test_emu_equals_host_and_counts_every_byte(ep_lib, stack, isolated):
    rows_list = [1, 4, 7, 33, 36, 100]
    feeds = feeds_for(rows_list)
    run = es.run_with_ep(stack, feeds, options={"device": "emu", "min_device_rows": 1, **isolated})
    assert_same_outputs(run.outputs, host_outputs(stack, feeds))
    for f, outs in zip(feeds, run.outputs):
        es.assert_exact(outs[0], reference.reference_run(es.level1_model(stack), f)[0])
    c = run.counters
    calls = GROUPS * len(rows_list)
    assert c["group_runs"] == calls and c["device_calls"] == calls, c
    assert c["host_rows_policy"] == 0 and c["device_fallbacks"] == 0 and c["device_busy"] == 0, c
    assert c["a_bytes_synced"] == sum(rows * K for rows in rows_list for K, _ in SHAPES), c
    assert c["c_bytes_synced"] == sum(rows * N * 4 for rows in rows_list for _, N in SHAPES), c
    assert c["c_syncs_narrowed"] == calls and c["c_syncs_whole"] == 0, c
    # Blocks of 32 and 4 rows: at least one launch a call, 36 rows = 32 + 4.
    assert c["device_launches"] >= calls, c
    assert c["designs_built"] == 2 * GROUPS and c["designs_loaded"] == 2 * GROUPS, c
    assert c["designs_failed"] == 0 and c["device_ns"] > 0, c
    # A second session finds the designs in the cache.
    again = es.run_with_ep(stack, feeds[:1], options={"device": "emu", "min_device_rows": 1, **isolated})
    assert again.counters["designs_built"] == 0 and again.counters["designs_loaded"] == 2 * GROUPS, again.counters


def test_min_device_rows_boundary(ep_lib, stack, isolated):
    feeds = feeds_for([7, 8])
    run = es.run_with_ep(stack, feeds, options={"device": "emu", "min_device_rows": 8, **isolated})
    assert run.counters["host_rows_policy"] == GROUPS, run.counters  # the 7-row run
    assert run.counters["device_calls"] == GROUPS, run.counters  # the 8-row run
    assert_same_outputs(run.outputs, host_outputs(stack, feeds))


def test_whole_c_syncs_give_identical_outputs(ep_lib, stack, isolated, monkeypatch):
    feeds = feeds_for([5, 36])
    monkeypatch.setenv("ONEBIT_NPU_NO_C_NARROW", "1")
    run = es.run_with_ep(stack, feeds, options={"device": "emu", "min_device_rows": 1, **isolated})
    assert run.counters["c_syncs_whole"] == 2 * GROUPS and run.counters["c_syncs_narrowed"] == 0, run.counters
    narrowed_bytes = sum(rows * N * 4 for rows in (5, 36) for _, N in SHAPES)
    assert run.counters["c_bytes_synced"] > narrowed_bytes, run.counters
    assert_same_outputs(run.outputs, host_outputs(stack, feeds))


def test_routes_file_keeps_listed_rows_on_the_host(ep_lib, stack, isolated, tmp_path):
    routes = tmp_path / "routes.txt"
    routes.write_text("# onebit routes v1\n64 128 1 host\n64 128 32 device\n128 64 1 device\n")
    feeds = feeds_for([4, 40])
    run = es.run_with_ep(
        stack, feeds, options={"device": "emu", "min_device_rows": 1, "routes": str(routes), **isolated}
    )
    # 64x128: host at 4 rows (routes), device at 40; 128x64: device at both; 64x32 unlisted: device.
    assert run.counters["host_routes"] == 1 and run.counters["device_calls"] == 2 * GROUPS - 1, run.counters
    assert_same_outputs(run.outputs, host_outputs(stack, feeds))


def test_malformed_routes_file_fails_session_creation(ep_lib, stack, isolated, tmp_path):
    routes = tmp_path / "routes.txt"
    routes.write_text("64 128 1 host\n64 128 banana\n")
    with pytest.raises(Exception) as info:
        es.create_ep_session(stack, {"device": "emu", "routes": str(routes), **isolated})
    assert str(routes) in str(info.value) and "line 2" in str(info.value), str(info.value)


def test_a_malformed_line_of_any_bytes_is_quoted_readably(ep_lib, stack, isolated, tmp_path):
    """The error quotes the line as valid UTF-8 (a 0xff byte in it made Python's binding raise
    UnicodeDecodeError instead of showing the EP's message)."""
    routes = tmp_path / "routes.txt"
    routes.write_bytes(b"64 128 1 host\n64 128 \xff banana\n")
    with pytest.raises(Exception) as info:
        es.create_ep_session(stack, {"device": "emu", "routes": str(routes), **isolated})
    assert not isinstance(info.value, UnicodeDecodeError), repr(info.value)
    assert str(routes) in str(info.value) and "line 2" in str(info.value) and "\ufffd" in str(info.value), str(
        info.value
    )


def test_trace_file_holds_every_call(ep_lib, stack, isolated, tmp_path):
    trace = tmp_path / "trace.json"
    feeds = feeds_for([2, 36])
    run = es.run_with_ep(stack, feeds, options={"device": "emu", "min_device_rows": 8, "trace": str(trace), **isolated})
    data = json.loads(trace.read_text())
    events = data["traceEvents"]
    assert len(events) == run.counters["group_runs"] == 2 * GROUPS
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["name"] == f"gemm_q8 {e['args']['K']}x{e['args']['N']}"
        assert (e["args"]["K"], e["args"]["N"]) in SHAPES
    small = [e for e in events if e["args"]["rows"] == 2]
    large = [e for e in events if e["args"]["rows"] == 36]
    assert all(e["cat"] == "host" and e["args"]["reason"] == "rows<min_device_rows" for e in small)
    assert all(e["cat"] == "device" and e["args"]["launches"] == 2 for e in large)  # 32 + 4
    assert all(e["args"]["c_bytes"] == 36 * e["args"]["N"] * 4 for e in large)
    assert data["otherData"]["onebit"]["device_calls"] == GROUPS
    assert data["otherData"]["onebit"]["host_rows_policy"] == GROUPS
    # One thread runs the groups one after another: its events follow one another, none overlaps.
    by_thread = sorted(events, key=lambda e: (e["tid"], e["ts"]))
    for a, b in zip(by_thread, by_thread[1:]):
        assert a["tid"] != b["tid"] or a["ts"] + a["dur"] <= b["ts"], f"{a} overlaps {b}"


def test_corrupt_design_is_rejected_once_and_calls_run_on_the_host(ep_lib, stack, isolated):
    designs = design_dir(isolated)
    designs.mkdir(parents=True)
    (designs / "emu_64x128_m32.elf").write_bytes(b"\x7fELF" + b"\x00" * 60)  # truncated, wrong
    feeds = feeds_for([9, 9, 9])
    run = es.run_with_ep(stack, feeds, options={"device": "emu", "min_device_rows": 1, **isolated})
    assert run.counters["designs_failed"] == 1, run.counters  # once per session, not per call
    assert run.counters["device_fallbacks"] == 3, run.counters  # that group's three calls
    assert run.counters["device_calls"] == 3 * (GROUPS - 1), run.counters
    assert "emu_64x128_m32.elf" in run.stderr or run.counters["designs_failed"] == 1
    assert_same_outputs(run.outputs, host_outputs(stack, feeds))


def test_unusable_designs_dir_warns_once_per_session(ep_lib, stack, isolated, tmp_path):
    """A designs_dir that is a file fails every group's designs alike: each group is counted, the
    session warns once (it warned once per group)."""
    not_a_dir = tmp_path / "designs-file"
    not_a_dir.write_text("not a folder")
    feeds = feeds_for([9])
    options = {**isolated, "device": "emu", "min_device_rows": 1, "designs_dir": str(not_a_dir)}
    run = es.run_with_ep(stack, feeds, options=options)
    assert run.counters["designs_failed"] == GROUPS and run.counters["device_calls"] == 0, run.counters
    assert run.stderr.count("no device designs, its calls run on the host") == 1, run.stderr
    assert "other groups of this session without designs: verbose log, counter designs_failed" in run.stderr
    assert_same_outputs(run.outputs, host_outputs(stack, feeds))


def test_device_busy_when_another_process_holds_the_array(ep_lib, stack, isolated, tmp_path):
    lock = tmp_path / "onebit-npu.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import fcntl, sys, time
            f = open({str(lock)!r}, "a")
            fcntl.flock(f, fcntl.LOCK_EX)
            print("held", flush=True)
            time.sleep(60)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        feeds = feeds_for([12, 40])
        run = es.run_with_ep(stack, feeds, options={"device": "emu", "min_device_rows": 1, **isolated})
        assert run.counters["device_busy"] == 2 * GROUPS and run.counters["device_calls"] == 0, run.counters
        assert_same_outputs(run.outputs, host_outputs(stack, feeds))
    finally:
        holder.kill()
        holder.wait()
    # Released with its holder: the device takes calls again.
    run = es.run_with_ep(stack, feeds_for([12]), options={"device": "emu", "min_device_rows": 1, **isolated})
    assert run.counters["device_calls"] == GROUPS and run.counters["device_busy"] == 0, run.counters


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np, onnx
    sys.path.insert(0, {here!r})
    import ep_session as es
    model = onnx.load({model!r})
    feeds = [dict(np.load({feeds!r}))]
    run = es.run_with_ep(model, feeds, options={options!r})
    np.savez({out!r}, *run.outputs[0])
    print(json.dumps(run.counters))
""")


@pytest.mark.parametrize("failure", ["design", "launch", "timeout"])
def test_injected_device_failures_end_on_the_host(ep_lib, stack, isolated, tmp_path, failure):
    model_path, feeds_path, out_path = tmp_path / "m.onnx", tmp_path / "f.npz", tmp_path / "o.npz"
    onnx.save(stack, model_path)
    feeds = feeds_for([20])[0]
    np.savez(feeds_path, **feeds)
    options = {"device": "emu", "min_device_rows": "1", "device_timeout_ms": "200", "trace": "1", **isolated}
    code = CHILD.format(
        here=str(pathlib.Path(__file__).parent),
        model=str(model_path),
        feeds=str(feeds_path),
        options=options,
        out=str(out_path),
    )
    env = {**os.environ, "ONEBIT_NPU_FAIL": failure}
    start = time.monotonic()
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert child.returncode == 0, child.stderr
    counters = json.loads(child.stdout.strip().splitlines()[-1])
    assert counters["device_fallbacks"] == GROUPS and counters["device_calls"] == 0, counters
    if failure == "design":
        assert counters["designs_failed"] == GROUPS, counters
    assert time.monotonic() - start < 60  # a stalled device costs one timeout per call, never a hang
    outputs = np.load(out_path)
    es.assert_exact(outputs["arr_0"], host_outputs(stack, [feeds])[0][0])


def test_projection_stack_on_emu_equals_host(ep_lib, isolated):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    from python_demo import PROJECTIONS, projection_stack

    model = projection_stack(1)
    feeds = [{"x_q": np.random.default_rng(r).integers(-128, 128, (r, 1024), dtype=np.int8)} for r in (1, 36)]
    run = es.run_with_ep(model, feeds, options={"device": "emu", "min_device_rows": 8, **isolated})
    groups = len(PROJECTIONS)
    assert run.counters["groups"] == groups and run.counters["group_runs"] == groups * len(feeds), run.counters
    assert run.counters["host_rows_policy"] == groups and run.counters["device_calls"] == groups, run.counters
    assert_same_outputs(run.outputs, host_outputs(model, feeds))


def test_bad_device_value_lists_the_choices(ep_lib, stack):
    with pytest.raises(Exception) as info:
        es.create_ep_session(stack, {"device": "npu"})
    assert "auto, emu or none" in str(info.value), str(info.value)


CREATE_CHILD = textwrap.dedent("""
    import sys
    import onnx
    sys.path.insert(0, {here!r})
    import ep_session as es
    es.ensure_registered()
    try:
        es.create_ep_session(onnx.load({model!r}), {options!r})
    except Exception as e:
        print(e)
        sys.exit(3)
""")


def create_session_in_child(model, options, tmp_path) -> subprocess.CompletedProcess:
    """Session creation in a child process with a time limit, so that a regression that blocks
    fails the test (subprocess.TimeoutExpired) instead of hanging the suite."""
    model_path = tmp_path / "child_model.onnx"
    onnx.save(model, model_path)
    code = CREATE_CHILD.format(here=str(pathlib.Path(__file__).parent), model=str(model_path), options=options)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def _fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_routes_that_is_not_a_regular_file_fails_session_creation(ep_lib, stack, isolated, tmp_path, kind):
    path = {
        "fifo": lambda: _fifo(tmp_path),
        "dev_zero": lambda: pathlib.Path("/dev/zero"),
        "directory": lambda: tmp_path,
    }[kind]()
    child = create_session_in_child(stack, {"routes": str(path), **isolated}, tmp_path)
    assert child.returncode == 3, child.stdout + child.stderr
    what = {"fifo": "a FIFO", "dev_zero": "a character device", "directory": "a directory"}[kind]
    assert f"cannot read routes file: {path}: {what}, expected a regular file" in child.stdout, child.stdout


def test_design_that_is_a_fifo_is_rejected_without_blocking(ep_lib, stack, isolated, tmp_path):
    designs = design_dir(isolated)
    designs.mkdir(parents=True)
    for name in ("emu_64x128_m32.elf", "emu_64x128_m4.elf"):
        os.mkfifo(designs / name)
    code = CHILD.format(
        here=str(pathlib.Path(__file__).parent),
        model=str(tmp_path / "m.onnx"),
        feeds=str(tmp_path / "f.npz"),
        options={"device": "emu", "min_device_rows": "1", **isolated},
        out=str(tmp_path / "o.npz"),
    )
    onnx.save(stack, tmp_path / "m.onnx")
    np.savez(tmp_path / "f.npz", **feeds_for([20])[0])
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    counters = json.loads(child.stdout.strip().splitlines()[-1])
    # The 64x128 group's designs fail, the two others run on the device.
    assert counters["designs_failed"] == 1 and counters["device_calls"] == GROUPS - 1, counters


def test_missing_trace_directory_fails_session_creation_with_errno(ep_lib, stack, isolated, tmp_path):
    trace = tmp_path / "no-such-dir" / "trace.json"
    with pytest.raises(Exception) as info:
        es.create_ep_session(stack, {"trace": str(trace), **isolated})
    assert f"cannot create trace file: {trace}: cannot open: No such file or directory (errno 2)" in str(info.value)


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_trace_path_that_is_a_link_leaves_the_file_it_names_alone(ep_lib, stack, isolated, tmp_path, link):
    """The trace path is claimed at session creation without emptying what is there (a link's
    target was truncated to 0 bytes); at release the trace replaces the name whole."""
    target, trace = tmp_path / "precious.txt", tmp_path / "trace.json"
    target.write_text("user data\n" * 100)
    (trace.symlink_to if link == "symlink" else trace.hardlink_to)(target)
    session = es.create_ep_session(stack, {"trace": str(trace), **isolated})
    assert target.read_text() == "user data\n" * 100
    del session
    gc.collect()
    assert target.read_text() == "user data\n" * 100
    assert not trace.is_symlink() and "traceEvents" in json.loads(trace.read_text())


def test_a_refused_trace_path_stays_refused(ep_lib, stack, isolated, tmp_path):
    """A directory where the trace file should go fails every session that names it, through the
    option and ONEBIT_EP_TRACE alike; no session writes a numbered file beside it (the refused
    attempt used to take the number, so the next session wrote trace.2.json)."""
    trace = tmp_path / "trace.json"
    trace.mkdir()
    for route in ("option", "option", "environment"):
        options = {"trace": str(trace), **isolated} if route == "option" else isolated
        env = {"ONEBIT_EP_TRACE": str(trace)} if route == "environment" else {}
        with pytest.MonkeyPatch.context() as mp:
            for key, value in env.items():
                mp.setenv(key, value)
            with pytest.raises(Exception) as info:
                es.create_ep_session(stack, options)
        assert f"cannot create trace file: {trace}" in str(info.value), route
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]
    trace.rmdir()
    del_sessions = [es.create_ep_session(stack, {"trace": str(trace), **isolated}) for _ in range(2)]
    del del_sessions
    import gc

    gc.collect()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.2.json", "trace.json"]
    for name in ("trace.json", "trace.2.json"):
        json.loads((tmp_path / name).read_text())


def test_one_trace_file_spelt_four_ways_is_numbered_as_one(ep_lib, stack, isolated, tmp_path, monkeypatch):
    """ "t.json", "./t.json", "d/../t.json" and the same name through a linked folder are one file:
    live sessions given them write t.json, t.2.json, t.3.json, t.4.json, each one whole trace of its
    own calls. The numbering was keyed on the spelling, so all four wrote t.json over each other."""
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    spellings = ["t.json", "./t.json", os.path.join("d", "..", "t.json"), str(tmp_path / "link" / "t.json")]
    sessions = [es.create_ep_session(stack, {"trace": name, "device": "none", **isolated}) for name in spellings]
    for calls, sess in enumerate(sessions, start=1):
        for _ in range(calls):
            sess.run(None, feeds_for([20])[0])
    del sess
    del sessions
    import gc

    gc.collect()
    names = ["t.json", "t.2.json", "t.3.json", "t.4.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["d", "link", *names])
    for calls, name in enumerate(names, start=1):
        assert len(json.loads((tmp_path / name).read_text())["traceEvents"]) == calls * GROUPS, name


def test_a_session_naming_a_numbered_trace_does_not_take_it_from_another(ep_lib, stack, isolated, tmp_path):
    """Sessions A and B given t.json write t.json and t.2.json; a session C given t.2.json while B
    lives writes t.2.2.json, and a session D given t.json after it t.3.json: each file one whole
    trace of its own session's calls. C used to write t.2.json over B's trace."""
    trace, taken = tmp_path / "t.json", tmp_path / "t.2.json"
    sessions = [
        es.create_ep_session(stack, {"trace": str(name), "device": "none", **isolated})
        for name in (trace, trace, taken, trace)
    ]
    for calls, sess in enumerate(sessions, start=1):
        for _ in range(calls):
            sess.run(None, feeds_for([3])[0])
    del sess
    del sessions
    gc.collect()
    names = ["t.json", "t.2.json", "t.2.2.json", "t.3.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    for calls, name in enumerate(names, start=1):
        assert len(json.loads((tmp_path / name).read_text())["traceEvents"]) == calls * GROUPS, name


def test_relative_trace_path_resolves_at_session_creation(ep_lib, stack, isolated, tmp_path, monkeypatch):
    (tmp_path / "created").mkdir()
    (tmp_path / "released").mkdir()
    monkeypatch.chdir(tmp_path / "created")
    sess = es.create_ep_session(stack, {"trace": "rel.json", **isolated})
    monkeypatch.chdir(tmp_path / "released")
    del sess
    import gc

    gc.collect()
    data = json.loads((tmp_path / "created" / "rel.json").read_text())
    assert data["traceEvents"] == [] and not (tmp_path / "released" / "rel.json").exists()


@pytest.mark.parametrize("route", ["option", "environment"])
def test_explicitly_relative_trace_paths_are_paths(ep_lib, stack, isolated, tmp_path, monkeypatch, route):
    """./ and ../ name a trace file (the Node package always took them; the EP used to refuse them);
    a bare word is still refused as a likely typo of 0/1."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    for value, written in (("./here.trace", tmp_path / "cwd" / "here.trace"), ("../up.trace", tmp_path / "up.trace")):
        if route == "environment":
            monkeypatch.setenv("ONEBIT_EP_TRACE", value)
            sess = es.create_ep_session(stack, isolated)
        else:
            sess = es.create_ep_session(stack, {"trace": value, **isolated})
        del sess
        import gc

        gc.collect()
        assert json.loads(written.read_text())["traceEvents"] == [], value
    if route == "environment":
        monkeypatch.setenv("ONEBIT_EP_TRACE", "here")
    with pytest.raises(Exception) as info:
        es.create_ep_session(stack, isolated if route == "environment" else {"trace": "here", **isolated})
    name = "ONEBIT_EP_TRACE" if route == "environment" else "trace"
    assert (
        f"{name}='here' is invalid; expected 0, 1, or a trace file path (absolute, starting with ./ or ../, or ending in .json)"
        in str(info.value)
    )


@pytest.mark.parametrize("value, ok", [("86400000", True), ("86400001", False), ("9300000000000", False)])
def test_device_timeout_is_bounded(ep_lib, stack, isolated, value, ok):
    options = {"device": "emu", "min_device_rows": "1", "device_timeout_ms": value, **isolated}
    if ok:
        run = es.run_with_ep(stack, feeds_for([20]), options=options)
        assert run.counters["device_calls"] == GROUPS and run.counters["device_fallbacks"] == 0, run.counters
    else:
        with pytest.raises(Exception) as info:
            es.create_ep_session(stack, options)
        assert f"device_timeout_ms='{value}' is invalid; expected an integer from 1 to 86400000" in str(info.value)


def test_missing_lock_directory_warns_once(ep_lib, stack, tmp_path, monkeypatch):
    """Every call runs on the host and is counted, but the same failure is logged once per session.
    The first 3 device failures open the session's circuit breaker: later calls skip the device."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "no-such-dir"))
    monkeypatch.delenv("ONEBIT_DEVICE", raising=False)
    options = {"device": "emu", "min_device_rows": 1, "designs_dir": str(tmp_path / "designs")}
    run = es.run_with_ep(stack, feeds_for([12, 12, 12]), options=options)
    c = run.counters
    assert c["device_fallbacks"] == 3 and c["device_breaker_skips"] == 3 * GROUPS - 3, c
    assert c["device_calls"] == 0, c
    lock = tmp_path / "no-such-dir" / "onebit-npu.lock"
    assert run.stderr.count(f"cannot open device lock: {lock}: cannot open: No such file or directory") == 1, run.stderr
