# SPDX-License-Identifier: Apache-2.0
"""ORT's CPU MatMulNBits per call (accuracy_level=4, 4-bit symmetric, block 32, one thread unless
--threads), weights cold, at the shapes and rows gemm_w4a8_bench times: the arm the W4A8 kernel is
measured against.

As in a model, one session holds many MatMulNBits nodes (distinct random weights, more than the L3
holds): a run's median time divided by the node count is the time per call, with the run's own cost
spread over the nodes. Each node reads an input of its own (`--fanout F`: each F nodes one input,
as q/k/v read one), all bound to one array through IO binding: the EP makes nodes that read one
value a single fused node, so a shared input would time one node of hundreds of groups. (Timing one session per weight instead
made ORT look several times slower at one row: each call then also met a cold session.)
`--arms ort,onebit` adds the onebit EP (ONEBIT_EP_LIB) on the same model layout, the arms alternated
run by run in each cell: both times, ORT's over ours, and our GB/s of packed weights (against
`--read-gbs`, the one-thread read bandwidth gemm_q8_bench prints, when given).
Both arms' sessions share the process, so by default their intra-op threads sleep between calls
(session.intra_op.allow_spinning 0): a pool spinning after its run would take the other arm's
cores. `--spinning` has them spin between calls, as by ORT's default, but for 1 ms at most
(spin_duration_us; by default a pool spun 30–40 ms after its run here), and rests 10 ms before
each run, so that only the timed session's pool is awake. (Resting 0.1 s instead, with ORT's
default spin, left both arms' caches colder and their times twice as spread.)
Run: .venv/bin/python bench/bench_nbits_ort.py [--repeat 7] [--arms ort,onebit] [--read-gbs 20] [--threads 1]
     [--shapes 576x576,576x1536] [--rows 1,4] [--fanout 1] [--spinning]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

SHAPES = [
    (576, 576),
    (576, 192),
    (576, 1536),
    (1536, 576),
    (576, 49152),
    (1024, 2048),
    (1024, 1024),
    (2048, 1024),
    (1024, 3072),
    (3072, 1024),
]
BITS, BLOCK = 4, 32


def onebit_session(model_bytes, so):
    """The same model on the onebit EP (registered once per process from ONEBIT_EP_LIB)."""
    if not any(d.ep_name == "OnebitExecutionProvider" for d in ort.get_ep_devices()):
        ort.register_execution_provider_library("onebit", os.environ["ONEBIT_EP_LIB"])
    so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == "OnebitExecutionProvider"], {})
    return ort.InferenceSession(model_bytes, so)


def nbits_nodes(K, N, rng, arm="ort", threads=1, fanout=1, spinning=False):
    """One session of as many K×N MatMulNBits nodes as make 96 MiB of weights (at least 2), each
    `fanout` of them reading one input."""
    k_blocks = -(-K // BLOCK)
    node_bytes = N * k_blocks * (BLOCK * BITS // 8 + 4)
    count = max(2, (96 << 20) // node_bytes)
    nodes, inits, outputs = [], [], []
    for i in range(count):
        b = rng.integers(0, 256, (N, k_blocks, BLOCK * BITS // 8), dtype=np.uint8)
        scales = rng.uniform(0.01, 0.02, N * k_blocks).astype(np.float32)
        inits += [numpy_helper.from_array(b, f"B{i}"), numpy_helper.from_array(scales, f"scales{i}")]
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [f"A{i // fanout}", f"B{i}", f"scales{i}"],
                [f"Y{i}"],
                domain="com.microsoft",
                K=K,
                N=N,
                bits=BITS,
                block_size=BLOCK,
                accuracy_level=4,
            )
        )
        outputs.append(helper.make_tensor_value_info(f"Y{i}", TensorProto.FLOAT, ["M", N]))
    inputs = [helper.make_tensor_value_info(f"A{j}", TensorProto.FLOAT, ["M", K]) for j in range(-(-count // fanout))]
    graph = helper.make_graph(nodes, "nbits", inputs, outputs, inits)
    model = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    # Both arms' sessions live in one process: a pool's threads spinning after its run took the
    # other session's second core (2 vCPUs), which made both arms slower at 4 rows, ours below ORT
    # (--spinning spins for 1 ms and rests before each run instead).
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    if spinning:
        so.add_session_config_entry("session.intra_op.spin_duration_us", "1000")
    if arm == "onebit":
        return onebit_session(model.SerializeToString(), so), count
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]), count


def bound_run(session, x):
    """An IO binding of x to every input of the session (outputs allocated by ORT)."""
    value = ort.OrtValue.ortvalue_from_numpy(x)
    binding = session.io_binding()
    for i in session.get_inputs():
        binding.bind_ortvalue_input(i.name, value)
    for o in session.get_outputs():
        binding.bind_output(o.name)
    return binding


def parse_shapes(text):
    """'576x576,576x1536' -> [(576, 576), (576, 1536)]"""
    return [tuple(int(d) for d in s.split("x")) for s in text.split(",")]


def packed_bytes(K, N):
    """What one call streams: 4-bit weights and a float scale per block."""
    return N * -(-K // BLOCK) * (BLOCK * BITS // 8 + 4)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--arms", default="ort", help="ort, onebit or both (ort,onebit)")
    parser.add_argument("--read-gbs", type=float, default=None, help="the machine's one-thread read GB/s")
    parser.add_argument("--threads", type=int, default=1, help="ORT intra-op threads for both arms")
    parser.add_argument("--shapes", type=parse_shapes, default=SHAPES, help="KxN,... (default: all ten)")
    parser.add_argument("--rows", default="1,4,32,128", help="M values, comma-separated")
    parser.add_argument("--fanout", type=int, default=1, help="nodes reading one input")
    parser.add_argument(
        "--spinning", action="store_true", help="intra-op threads spin between calls, 1 ms at most (see the docstring)"
    )
    args = parser.parse_args()
    arms = args.arms.split(",")
    if any(a not in ("ort", "onebit") for a in arms):
        parser.error(f"--arms {args.arms}: each arm is ort or onebit")
    print(
        f"ORT {ort.__version__} MatMulNBits ({', '.join(arms)}), accuracy_level=4, bits {BITS}, block {BLOCK}, "
        f"symmetric, {args.threads} thread(s), {args.repeat} runs per cell (median), arms alternated, weights cold, "
        f"{args.fanout} node(s) an input, threads {'spinning' if args.spinning else 'sleeping'} between calls"
    )
    header = f"{'KxN':<11} {'M':>5} {'nodes':>6}" + "".join(f" {a + ' ms/call':>16}" for a in arms)
    if "onebit" in arms:
        header += f" {'ort/onebit':>10} {'onebit GB/s':>11}" + (" of read" if args.read_gbs else "")
    print(header)
    for K, N in args.shapes:
        sessions = {}
        for arm in arms:
            sessions[arm], count = nbits_nodes(
                K, N, np.random.default_rng(1), arm, args.threads, args.fanout, args.spinning
            )
        for M in (int(m) for m in args.rows.split(",")):
            x = np.random.default_rng(M).standard_normal((M, K)).astype(np.float32)
            times = {arm: [] for arm in arms}
            bindings = {arm: bound_run(session, x) for arm, session in sessions.items()}
            for arm, session in sessions.items():
                session.run_with_iobinding(bindings[arm])
            for _ in range(args.repeat):
                for arm, session in sessions.items():
                    if args.spinning:
                        time.sleep(0.01)  # the other arm's pool stops spinning
                    t0 = time.perf_counter()
                    session.run_with_iobinding(bindings[arm])
                    times[arm].append((time.perf_counter() - t0) * 1e3 / count)
            ms = {arm: float(np.median(t)) for arm, t in times.items()}
            line = f"{K:>5}x{N:<5} {M:>5} {count:>6}" + "".join(f" {ms[a]:>16.4f}" for a in arms)
            if "onebit" in arms:
                gbs = packed_bytes(K, N) / ms["onebit"] / 1e6
                line += (f" {ms['ort'] / ms['onebit']:>10.2f}" if "ort" in arms else f" {'':>10}") + f" {gbs:>11.1f}"
                if args.read_gbs:
                    line += f" {100 * gbs / args.read_gbs:>6.0f} %"
            print(line)
        del sessions


if __name__ == "__main__":
    main()
