# SPDX-License-Identifier: Apache-2.0
"""ORT's CPU MatMulNBits per call (accuracy_level=4, 4-bit symmetric, block 32, one thread), weights
cold, at the shapes and rows gemm_w4a8_bench times: the arm the W4A8 kernel is measured against.

As in a model, one session holds many MatMulNBits nodes (distinct random weights, more than the L3
holds, all reading the same input): a run's median time divided by the node count is the time per
call, with session.run's own cost spread over the nodes. (Timing one session per weight instead
made ORT look several times slower at one row: each call then also met a cold session.)
Run: .venv/bin/python bench/bench_nbits_ort.py [--repeat 7]
"""

from __future__ import annotations

import argparse
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


def nbits_nodes(K, N, rng):
    """One session of as many K×N MatMulNBits nodes as make 96 MiB of weights (at least 2)."""
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
                ["A", f"B{i}", f"scales{i}"],
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
    graph = helper.make_graph(
        nodes, "nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", K])], outputs, inits
    )
    model = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]), count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print(
        f"ORT {ort.__version__} CPU EP MatMulNBits, accuracy_level=4, bits {BITS}, block {BLOCK}, symmetric, "
        f"1 thread, {args.repeat} runs per cell (median), weights cold"
    )
    print(f"{'KxN':<11} {'M':>5} {'nodes':>6} {'ms per call':>12}")
    for K, N in SHAPES:
        session, count = nbits_nodes(K, N, rng)
        for M in (1, 4, 32, 128):
            x = rng.standard_normal((M, K)).astype(np.float32)
            session.run(None, {"A": x})
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                session.run(None, {"A": x})
                times.append((time.perf_counter() - t0) * 1e3)
            print(f"{K:>5}x{N:<5} {M:>5} {count:>6} {float(np.median(times)) / count:>12.4f}")
        del session


if __name__ == "__main__":
    main()
