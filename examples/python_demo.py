# SPDX-License-Identifier: Apache-2.0
"""Registers libonebit_ep.so in Python onnxruntime, runs an A8W8 QDQ projection stack with the EP
and with ORT's CPU EP, and prints speed, agreement and the EP's counters.

usage: python examples/python_demo.py [--layers 2] [--rows 1,32] [--repeat 5]
The model is generated in memory (Qwen3-0.6B-shaped projections, deterministic): no download."""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 1024
# (name, K, N) per layer: q, k, v, o, gate, up, down.
PROJECTIONS = [
    ("q", 1024, 2048),
    ("k", 1024, 1024),
    ("v", 1024, 1024),
    ("o", 2048, 1024),
    ("gate", 1024, 3072),
    ("up", 1024, 3072),
    ("down", 3072, 1024),
]


def projection_stack(layers: int, seed: int = 0) -> onnx.ModelProto:
    """Each projection is DQ(x_q) · DQ(W_q int8, per-channel) → QuantizeLinear. q, k, v, gate and up
    read the layer input; o reads q's output, down reads up's; down's output feeds the next layer."""
    rng = np.random.default_rng(seed)
    nodes, inits, outputs = [], [], []
    inits += [
        numpy_helper.from_array(np.array(0.05, np.float32), "s_act"),
        numpy_helper.from_array(np.array(0, np.int8), "z_act"),
    ]
    x = "x_q"
    for layer in range(layers):
        reads = {"o": f"l{layer}_q_q", "down": f"l{layer}_up_q"}
        for name, K, N in PROJECTIONS:
            p = f"l{layer}_{name}"
            scales = (rng.uniform(0.5, 1.5, N) / (8 * np.sqrt(K))).astype(np.float32)
            inits += [
                numpy_helper.from_array(rng.integers(-127, 128, (K, N), dtype=np.int8), f"{p}_w"),
                numpy_helper.from_array(scales, f"{p}_ws"),
            ]
            nodes += [
                helper.make_node("DequantizeLinear", [reads.get(name, x), "s_act", "z_act"], [f"{p}_xf"]),
                helper.make_node("DequantizeLinear", [f"{p}_w", f"{p}_ws"], [f"{p}_wf"], axis=1),
                helper.make_node("MatMul", [f"{p}_xf", f"{p}_wf"], [f"{p}_y"], name=p),
                helper.make_node("QuantizeLinear", [f"{p}_y", "s_act", "z_act"], [f"{p}_q"]),
            ]
        outputs += [f"l{layer}_{n}_q" for n in ("k", "v", "o", "gate")]
        x = f"l{layer}_down_q"
    graph = helper.make_graph(
        nodes,
        "projection_stack",
        [helper.make_tensor_value_info("x_q", TensorProto.INT8, ["rows", HIDDEN])],
        [helper.make_tensor_value_info(n, TensorProto.INT8, None) for n in outputs + [x]],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def timed_runs(session, feeds, repeat):
    session.run(None, feeds)  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        outputs = session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return outputs, times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--rows", default="1,32")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--lib",
        default=os.environ.get(
            "ONEBIT_EP_LIB", str(pathlib.Path(__file__).resolve().parent.parent / "build/native/libonebit_ep.so")
        ),
    )
    args = parser.parse_args()
    if not os.path.isfile(args.lib):
        print(f"error: EP library not found: {args.lib} (run scripts/setup.sh, or pass --lib)", file=sys.stderr)
        return 1

    model = projection_stack(args.layers).SerializeToString()
    groups = args.layers * len(PROJECTIONS)
    ort.register_execution_provider_library("onebit", os.path.abspath(args.lib))
    devices = [d for d in ort.get_ep_devices() if d.ep_name == "OnebitExecutionProvider"]
    ep_options = ort.SessionOptions()
    ep_options.intra_op_num_threads = 1
    ep_options.add_provider_for_devices(devices, {"trace": "1"})
    cpu_options = ort.SessionOptions()
    cpu_options.intra_op_num_threads = 1
    ep_session = ort.InferenceSession(model, sess_options=ep_options, enable_fallback=0)
    cpu_session = ort.InferenceSession(model, sess_options=cpu_options, providers=["CPUExecutionProvider"])

    print(f"model: {groups} A8W8 QDQ groups ({args.layers} layers), 1 thread, {args.repeat} timed runs each")
    rng = np.random.default_rng(1)
    for rows in [int(r) for r in args.rows.split(",")]:
        feeds = {"x_q": rng.integers(-128, 128, (rows, HIDDEN), dtype=np.int8)}
        ours, ours_ms = timed_runs(ep_session, feeds, args.repeat)
        theirs, theirs_ms = timed_runs(cpu_session, feeds, args.repeat)
        diff = np.concatenate([np.abs(a.astype(np.int32) - b.astype(np.int32)).ravel() for a, b in zip(ours, theirs)])
        print(
            f"rows={rows:4d}  onebit {statistics.median(ours_ms):8.2f} ms (min {min(ours_ms):.2f} max {max(ours_ms):.2f})"
            f"  ORT CPU {statistics.median(theirs_ms):8.2f} ms (min {min(theirs_ms):.2f} max {max(theirs_ms):.2f})"
            f"  outputs differing {100 * np.mean(diff > 0):.2f}%, max {diff.max()} LSB"
        )
    sys.stdout.flush()
    del ep_session  # prints the EP's counter line: group_runs = groups x runs
    return 0


if __name__ == "__main__":
    sys.exit(main())
