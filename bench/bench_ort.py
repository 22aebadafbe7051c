# SPDX-License-Identifier: Apache-2.0
"""Benchmarks, all arms in the same process and the same ORT (PyPI onnxruntime, pinned in
test/python/requirements.txt): our EP against ORT's CPU EP on the identical A8W8 QDQ model, and
against ORT on the fp32 model. Release builds only; see BENCHMARKS.md for method and results.

  python bench/bench_ort.py calls   [--shapes 1024x2048,...] [--rows 1,4,32,36,128] [--repeat 30]
  python bench/bench_ort.py model   [--layers 28] [--rows 1,32] [--threads 1,2] [--repeat 10]
  python bench/bench_ort.py --smoke    (tiny sizes: checks the harness runs; numbers mean nothing)

`model` runs every arm in its own subprocess so each arm's peak RSS is its own."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))
sys.path.insert(0, str(REPO / "test" / "python"))
from ep_session import EP_NAME, REGISTRATION_NAME  # noqa: E402
from python_demo import PROJECTIONS, projection_stack  # noqa: E402


def ep_library() -> str:
    return os.environ.get("ONEBIT_EP_LIB", str(REPO / "build/native/libonebit_ep.so"))


def register_once() -> list:
    if not any(d.ep_name == EP_NAME for d in ort.get_ep_devices()):
        ort.register_execution_provider_library(REGISTRATION_NAME, ep_library())
    return [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]


def session(model, arm: str, threads: int):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if arm == "onebit":
        so.add_provider_for_devices(register_once(), {})
        return ort.InferenceSession(model, sess_options=so, enable_fallback=0)
    return ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])


def time_runs(sess, feeds, warmup: int, repeat: int) -> list[float]:
    for _ in range(warmup):
        sess.run(None, feeds)
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def time_interleaved(arms: dict, feeds, warmup: int, repeat: int) -> dict[str, list[float]]:
    """Each arm's times over `repeat` rounds that run every arm once, in an order rotated each
    round: the arms see the same moments of a noisy machine (two-thread calls of a few µs swing
    by 2x with whether the pool's other thread is awake), and none always follows the same one."""
    names = list(arms)
    for _ in range(warmup):
        for name in names:
            arms[name].run(None, feeds)
    ms = {name: [] for name in names}
    for r in range(repeat):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            arms[name].run(None, feeds)
            ms[name].append((time.perf_counter() - t0) * 1e3)
    return ms


def summary(ms: list[float]) -> dict:
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms)}


# ---------------------------------------------------------------------------------------------
# Per call: one group
# ---------------------------------------------------------------------------------------------


def single_group(K: int, N: int, form: str, seed: int = 0) -> bytes:
    """form: 's8' = DQ(x int8) · DQ(W int8, per channel) → Q int8 (what ORT leaves unfused on x86);
    'u8' = the same with uint8 activations, which ORT fuses to an MLAS QLinearMatMul;
    'fp32' = x float · W float (the dequantized weights)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (K, N), dtype=np.int8)
    ws = (rng.uniform(0.5, 1.5, N) / (8 * np.sqrt(K))).astype(np.float32)
    if form == "fp32":
        wf = (w.astype(np.float32) * ws).astype(np.float32)
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
        graph = helper.make_graph(
            nodes,
            "fp32",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", K])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", N])],
            [numpy_helper.from_array(wf, "w")],
        )
    else:
        qtype, np_type, zp = (TensorProto.INT8, np.int8, 0) if form == "s8" else (TensorProto.UINT8, np.uint8, 128)
        inits = [
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(ws, "ws"),
            numpy_helper.from_array(np.array(0.05, np.float32), "s"),
            numpy_helper.from_array(np.array(zp, np_type), "z"),
        ]
        nodes = [
            helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
            helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"], axis=1),
            helper.make_node("MatMul", ["xf", "wf"], ["yf"]),
            helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["y"]),
        ]
        graph = helper.make_graph(
            nodes,
            form,
            [helper.make_tensor_value_info("x", qtype, ["M", K])],
            [helper.make_tensor_value_info("y", qtype, ["M", N])],
            inits,
        )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model.SerializeToString()


def feed_for(form: str, M: int, K: int, rng) -> dict:
    if form == "fp32":
        return {"x": rng.standard_normal((M, K)).astype(np.float32)}
    dtype = np.int8 if form == "s8" else np.uint8
    info = np.iinfo(dtype)
    return {"x": rng.integers(info.min, info.max + 1, (M, K), dtype=dtype)}


def bench_calls(shapes, rows, repeat, threads=1) -> list[dict]:
    arms = [("onebit", "s8"), ("onebit", "u8"), ("ort", "s8"), ("ort", "u8"), ("ort", "fp32")]
    rng = np.random.default_rng(7)
    results = []
    for K, N in shapes:
        models = {form: single_group(K, N, form) for form in ("s8", "u8", "fp32")}
        sessions = {(arm, form): session(models[form], arm, threads) for arm, form in arms}
        for M in rows:
            row = {"K": K, "N": N, "M": M}
            for arm, form in arms:
                feeds = feed_for(form, M, K, rng)
                row[f"{arm}_{form}"] = summary(time_runs(sessions[(arm, form)], feeds, 3, repeat))
            results.append(row)
            print_call_row(row)
    return results


def print_call_row(row: dict) -> None:
    def med(key):
        return row[key]["median_ms"]

    cells = " ".join(f"{med(k):8.3f}" for k in ("onebit_s8", "onebit_u8", "ort_s8", "ort_u8", "ort_fp32"))
    ratios = (
        f"{med('ort_s8') / med('onebit_s8'):6.1f}x {med('ort_u8') / med('onebit_u8'):6.2f}x "
        f"{med('ort_fp32') / med('onebit_s8'):6.2f}x"
    )
    print(f"{row['K']:5d}x{row['N']:<5d} M={row['M']:<4d} {cells}   {ratios}", flush=True)


# ---------------------------------------------------------------------------------------------
# Model level: the projection stack
# ---------------------------------------------------------------------------------------------


def float_name(quantized: str) -> str:
    """'x_q' -> 'x'; '<projection>_q' -> '<projection>_f'."""
    return "x" if quantized == "x_q" else quantized[: -len("_q")] + "_f"


def float_twin(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same stack in fp32: every DQ(W)·MatMul·Q group becomes a float MatMul on W·scale."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    nodes, new_inits = [], []
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        p = node.name
        w = (inits[f"{p}_w"].astype(np.float32) * inits[f"{p}_ws"]).astype(np.float32)
        new_inits.append(numpy_helper.from_array(w, f"{p}_w"))
        src = next(n.input[0] for n in model.graph.node if n.output[0] == node.input[0])
        nodes.append(helper.make_node("MatMul", [float_name(src), f"{p}_w"], [f"{p}_f"], name=p))
    outputs = [float_name(o.name) for o in model.graph.output]
    graph = helper.make_graph(
        nodes,
        "projection_stack_fp32",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", 1024])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        new_inits,
    )
    twin = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    twin.ir_version = 10
    return twin


def model_files(layers: int, directory: pathlib.Path) -> dict[str, pathlib.Path]:
    """Writes the QDQ stack and its fp32 twin once (external data: the fp32 twin exceeds 2 GB)."""
    paths = {"qdq": directory / f"stack{layers}_qdq.onnx", "fp32": directory / f"stack{layers}_fp32.onnx"}
    if not all(p.exists() for p in paths.values()):
        qdq = projection_stack(layers)
        onnx.save(float_twin(qdq), paths["fp32"], save_as_external_data=True, location=paths["fp32"].name + ".data")
        onnx.save(qdq, paths["qdq"], save_as_external_data=True, location=paths["qdq"].name + ".data")
    return paths


def status_mib(field: str) -> float:
    """A memory field of /proc/self/status in MiB: VmHWM = peak RSS (unlike ru_maxrss, not
    inherited from the parent process), VmRSS = RSS now."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def run_model_arm(path: str, arm: str, rows: int, threads: int, warmup: int, repeat: int) -> dict:
    """One arm in this process: session, timed runs, peak RSS (and the RSS before the session: the
    interpreter with numpy, onnx and onnxruntime loaded, the same for every arm)."""
    base_mib = status_mib("VmHWM")
    t0 = time.perf_counter()
    sess = session(path, arm, threads)
    create_s = time.perf_counter() - t0
    name = sess.get_inputs()[0].name
    rng = np.random.default_rng(3)
    if name == "x":
        feeds = {"x": rng.standard_normal((rows, 1024)).astype(np.float32)}
    else:
        feeds = {name: rng.integers(-128, 128, (rows, 1024), dtype=np.int8)}
    ms = time_runs(sess, feeds, warmup, repeat)
    return {
        **summary(ms),
        "peak_rss_mib": status_mib("VmHWM"),
        "rss_after_runs_mib": status_mib("VmRSS"),
        "rss_before_session_mib": base_mib,
        "session_create_s": create_s,
    }


def bench_model(layers, rows_list, threads_list, warmup, repeat) -> list[dict]:
    directory = pathlib.Path(os.environ.get("ONEBIT_BENCH_DIR", tempfile.gettempdir())) / "onebit-bench"
    directory.mkdir(parents=True, exist_ok=True)
    paths = model_files(layers, directory)
    weight_bytes = sum(K * N for _, K, N in PROJECTIONS) * layers
    macs_per_row = weight_bytes
    arms = [("onebit", "qdq"), ("ort", "qdq"), ("ort", "fp32")]
    results = []
    for threads in threads_list:
        for rows in rows_list:
            row = {"layers": layers, "groups": layers * len(PROJECTIONS), "rows": rows, "threads": threads}
            for arm, model in arms:
                cmd = [
                    sys.executable,
                    __file__,
                    "_arm",
                    str(paths[model]),
                    arm,
                    str(rows),
                    str(threads),
                    str(warmup),
                    str(repeat),
                ]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True)
                row[f"{arm}_{model}"] = json.loads(out.stdout.strip().splitlines()[-1])
            ours = row["onebit_qdq"]["median_ms"]
            row["onebit_gbs"] = weight_bytes / ours / 1e6
            row["onebit_gmacs"] = macs_per_row * rows / ours / 1e6
            results.append(row)
            print(
                f"threads={threads} rows={rows:3d}  "
                + "  ".join(
                    f"{k}: {row[k]['median_ms']:8.1f} ms ({row[k]['min_ms']:.1f}-{row[k]['max_ms']:.1f}) "
                    f"rss peak {row[k]['peak_rss_mib']:.0f} now {row[k]['rss_after_runs_mib']:.0f} MiB"
                    for k in ("onebit_qdq", "ort_qdq", "ort_fp32")
                )
                + f"  | x{row['ort_qdq']['median_ms'] / ours:.1f} vs ORT QDQ, x{row['ort_fp32']['median_ms'] / ours:.2f}"
                f" vs fp32; {row['onebit_gbs']:.1f} GB/s, {row['onebit_gmacs']:.1f} GMAC/s",
                flush=True,
            )
    return results


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_arm":
        path, arm, rows, threads, warmup, repeat = sys.argv[2:8]
        print(json.dumps(run_model_arm(path, arm, int(rows), int(threads), int(warmup), int(repeat))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=["calls", "model"], default="calls")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--shapes", default="1024x2048,1024x1024,1024x3072,2048x1024,3072x1024")
    parser.add_argument("--rows", default=None)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--layers", type=int, default=28)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    print(f"onnxruntime {ort.__version__}, EP {ep_library()}, {os.cpu_count()} cpus", flush=True)
    if args.smoke:
        calls = bench_calls([(64, 48)], [1, 7], repeat=3)
        model = bench_model(1, [1, 3], [1], warmup=1, repeat=2)
        results = {"calls": calls, "model": model}
    elif args.what == "calls":
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
        rows = [int(r) for r in (args.rows or "1,4,32,36,128").split(",")]
        print(
            "K x N       M     onebit_s8 onebit_u8   ort_s8   ort_u8  ort_fp32 (ms/call, median)   "
            "ORT s8/ours  ORT u8(QLinearMatMul)/ours  fp32/ours",
            flush=True,
        )
        results = bench_calls(shapes, rows, args.repeat or 30)
    else:
        rows = [int(r) for r in (args.rows or "1,32").split(",")]
        results = bench_model(args.layers, rows, [int(t) for t in args.threads.split(",")], 2, args.repeat or 10)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
