# SPDX-License-Identifier: Apache-2.0
"""Memory of N sessions of one model in one process: the process's PSS (/proc/self/smaps_rollup)
after each session is created and has run one decode step, for the onebit EP with its packed
weights shared (the default) and not (ONEBIT_SHARE_WEIGHTS=0), and for ORT's CPU EP. Each arm is a
fresh child process. Memory only: timings on a shared machine would mean nothing.

    .venv/bin/python bench/bench_shared_weights.py MODEL.onnx [--sessions 4] [--lib build/native/libonebit_ep.so]
        [--device emu]

--device emu runs the onebit arms on the emulated device, every call on it (min_device_rows 1):
its sessions then also share the opened device and each weight's upload, or (not shared) each
upload their own; the ORT CPU EP arm is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

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
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--lib", default=str(REPO / "build" / "native" / "libonebit_ep.so"))
    parser.add_argument("--device", choices=["none", "emu"], default="none")
    args = parser.parse_args()
    options = {"device": "emu", "min_device_rows": "1"} if args.device == "emu" else {}
    arms = {
        "onebit, shared": (args.lib, "1"),
        "onebit, ONEBIT_SHARE_WEIGHTS=0": (args.lib, "0"),
    }
    if args.device == "none":
        arms["ORT CPU EP"] = ("", "1")
    print(
        f"{args.model} (device {args.device}): PSS MiB before any session, then after each of {args.sessions} sessions"
    )
    for name, (lib, share) in arms.items():
        pss = arm(args.model, args.sessions, lib, share, options)
        one = pss[1] - pss[0]
        ratios = " ".join(f"{(p - pss[0]) / one:.2f}x" for p in pss[1:])
        print(f"  {name:32s} " + " ".join(f"{p:7.1f}" for p in pss) + f"   sessions' share vs one: {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
