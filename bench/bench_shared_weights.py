# SPDX-License-Identifier: Apache-2.0
"""Memory of N sessions of one model in one process: the process's PSS (/proc/self/smaps_rollup)
after each session is created and has run one decode step, for the onebit EP with its packed
weights shared (the default) and not (ONEBIT_SHARE_WEIGHTS=0), and for ORT's CPU EP. Each arm is a
fresh child process. Memory only: timings on a shared machine would mean nothing.

With --processes P, also the packed-weights cache folder (option packed_cache_dir) across
processes: the PSS of one process alone with one session (the cache empty: it packs and writes),
then the total PSS of P processes holding one session each at once (the cache warm: they map
it), and of P processes without the cache; and the session creation time of a first process
(empty cache) against a second one (warm cache), the median of --rounds rounds, each with a fresh
cache folder: the one timing here, whose ratio matters more than its value on a shared machine.
--host c runs those processes as session_memory_host (bench/, C API, the same ORT) instead of
Python: a process's own state is then ORT's and the EP's, not also Python's and numpy's.

    .venv/bin/python bench/bench_shared_weights.py MODEL.onnx [--sessions 4] [--processes 4] [--rounds 3]
        [--lib build/native/libonebit_ep.so] [--device emu] [--host python|c]

--device emu runs the onebit arms on the emulated device, every call on it (min_device_rows 1):
its sessions then also share the opened device and each weight's upload, or (not shared) each
upload their own; the ORT CPU EP arm is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test" / "python"))
from ep_session import EP_NAME  # noqa: E402

CHILD = """
import json, pathlib, sys
import numpy as np
import onnxruntime as ort

def pss_mib():
    for line in pathlib.Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024

def feeds(session):
    # One decode step with no past: every symbolic dim 1, past lengths 0.
    out = {}
    for i in session.get_inputs():
        dims = [d if isinstance(d, int) else (0 if d == "past" else 1) for d in i.shape]
        dtype = np.int64 if "int64" in i.type else np.float32
        out[i.name] = np.ones(dims, dtype) if i.name != "input_ids" else np.full(dims, 42, dtype)
    return out

model, sessions, lib, ep_name, options = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
so = ort.SessionOptions()
if lib:
    ort.register_execution_provider_library("onebit", lib)
    so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == ep_name], options)
held, pss, first = [], [pss_mib()], None
for _ in range(sessions):
    s = ort.InferenceSession(model, sess_options=so, providers=None if lib else ["CPUExecutionProvider"])
    y = s.run(None, feeds(s))[0]
    first = y if first is None else first
    assert np.array_equal(y, first), "a session's output differs from the first's"
    held.append(s)
    pss.append(pss_mib())
print(json.dumps(pss))
"""


# One process, one session with the cache folder argv[4] ("": none): its creation time, and its PSS once the
# `processes` processes that share the barrier folder argv[5] all hold theirs.
PROCESS = """
import json, os, pathlib, sys, time
import numpy as np
import onnxruntime as ort

def pss_mib():
    for line in pathlib.Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024

def wait_for(barrier, phase, processes):
    (barrier / f"{phase}.{os.getpid()}").touch()
    while len(list(barrier.glob(phase + ".*"))) < processes:
        time.sleep(0.02)

model, lib, ep_name, cache, barrier, processes = sys.argv[1:7]
ort.register_execution_provider_library("onebit", lib)
so = ort.SessionOptions()
options = {"packed_cache_dir": cache} if cache else {}
so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == ep_name], options)
start = time.perf_counter()
s = ort.InferenceSession(model, sess_options=so)
created = time.perf_counter() - start
out = {}
for i in s.get_inputs():
    dims = [d if isinstance(d, int) else (0 if d == "past" else 1) for d in i.shape]
    dtype = np.int64 if "int64" in i.type else np.float32
    out[i.name] = np.ones(dims, dtype) if i.name != "input_ids" else np.full(dims, 42, dtype)
s.run(None, out)
wait_for(pathlib.Path(barrier), "ready", int(processes))
pss = pss_mib()
wait_for(pathlib.Path(barrier), "measured", int(processes))
print(json.dumps({"created_s": created, "pss_mib": pss}))
"""


def process_command(host: str, model: str, lib: str, cache: str, barrier: str, processes: int) -> list[str]:
    """One process of the cache arms: the Python child above, or (host "c") the lean C-API one."""
    if host == "python":
        return [sys.executable, "-c", PROCESS, model, lib, EP_NAME, cache, barrier, str(processes)]
    import onnxruntime  # the same ORT the Python child runs, loaded by path

    ort_lib = min(pathlib.Path(onnxruntime.__file__).parent.glob("capi/libonnxruntime.so*"))
    c_host = pathlib.Path(lib).parent / "session_memory_host"
    return [str(c_host), str(ort_lib), lib, model, cache, barrier, str(processes)]


def processes_arm(host: str, model: str, lib: str, cache: str, processes: int) -> list[dict]:
    """`processes` processes at once, one session each with the cache folder `cache` ("": none)."""
    with tempfile.TemporaryDirectory() as barrier:
        children = [
            subprocess.Popen(
                process_command(host, model, lib, cache, barrier, processes),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(processes)
        ]
        results = []
        for child in children:
            out, err = child.communicate(timeout=1800)
            if child.returncode != 0:
                raise SystemExit(err[-3000:])
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results


def cache_across_processes(host: str, model: str, lib: str, processes: int, rounds: int) -> None:
    # The cache folder beside the model: on disk, as /tmp may be tmpfs.
    parent = pathlib.Path(model).resolve().parent
    first, second = [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(dir=parent, prefix="packed-cache-") as cache:
            one = processes_arm(host, model, lib, cache, 1)[0]
            first.append(one["created_s"])
            second.append(processes_arm(host, model, lib, cache, 1)[0]["created_s"])
    with tempfile.TemporaryDirectory(dir=parent, prefix="packed-cache-") as cache:
        alone = processes_arm(host, model, lib, cache, 1)[0]["pss_mib"]
        together = processes_arm(host, model, lib, cache, processes)
    total = sum(r["pss_mib"] for r in together)
    without = sum(r["pss_mib"] for r in processes_arm(host, model, lib, "", processes))
    print(f"  without the cache folder, {processes} processes at once: {without:.1f} MiB")
    print(
        f"  packed_cache_dir, processes: PSS of one process {alone:.1f} MiB; {processes} at once "
        + " + ".join(f"{r['pss_mib']:.1f}" for r in together)
        + f" = {total:.1f} MiB ({total / alone:.2f}x one)"
    )
    print(
        f"  session creation, median of {rounds}: first process (packs, writes) {statistics.median(first):.3f} s, "
        f"second (maps) {statistics.median(second):.3f} s ({statistics.median(second) / statistics.median(first):.2f}x)"
        f"; rounds {[round(t, 3) for t in first]} / {[round(t, 3) for t in second]}"
    )


def arm(model: str, sessions: int, lib: str, share: str, options: dict) -> list[float]:
    env = dict(os.environ, ONEBIT_SHARE_WEIGHTS=share)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, model, str(sessions), lib, EP_NAME, json.dumps(options)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--sessions", type=int, default=4, help="0: only the --processes arm")
    parser.add_argument("--processes", type=int, default=0, help="also the cache folder across this many processes")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the first/second process creation time")
    parser.add_argument("--lib", default=str(REPO / "build" / "native" / "libonebit_ep.so"))
    parser.add_argument("--device", choices=["none", "emu"], default="none")
    parser.add_argument(
        "--host",
        choices=["python", "c"],
        default="python",
        help="the --processes arms' processes: Python, or session_memory_host (C API, built beside --lib)",
    )
    args = parser.parse_args()
    options = {"device": "emu", "min_device_rows": "1"} if args.device == "emu" else {}
    arms = {
        "onebit, shared": (args.lib, "1"),
        "onebit, ONEBIT_SHARE_WEIGHTS=0": (args.lib, "0"),
    }
    if args.device == "none":
        arms["ORT CPU EP"] = ("", "1")
    if args.sessions > 0:
        print(
            f"{args.model} (device {args.device}): PSS MiB before any session, then after each of "
            f"{args.sessions} sessions"
        )
        for name, (lib, share) in arms.items():
            pss = arm(args.model, args.sessions, lib, share, options)
            one = pss[1] - pss[0]
            ratios = " ".join(f"{(p - pss[0]) / one:.2f}x" for p in pss[1:])
            print(f"  {name:32s} " + " ".join(f"{p:7.1f}" for p in pss) + f"   sessions' share vs one: {ratios}")
    if args.processes:
        cache_across_processes(args.host, args.model, args.lib, args.processes, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
