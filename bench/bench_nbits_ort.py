# SPDX-License-Identifier: Apache-2.0
"""ORT's CPU MatMulNBits per call (accuracy_level=4, 4-bit symmetric, block 32, one thread), weights
cold, at the shapes and rows gemm_w4a8_bench times: the arm the W4A8 kernel is measured against.

session.run's own cost is timed on an Identity model of the same input and output sizes and
printed beside each cell (`run overhead`); `ORT kernel` is the median minus it.
Run: .venv/bin/python bench/bench_nbits_ort.py [--repeat 50]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

SHAPES = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152),
          (1024, 2048), (1024, 1024), (2048, 1024), (1024, 3072), (3072, 1024)]
BITS, BLOCK = 4, 32


def session(graph):
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21),
                                                                   helper.make_opsetid("com.microsoft", 1)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def nbits(K, N, rng):
    k_blocks = -(-K // BLOCK)
    b = rng.integers(0, 256, (N, k_blocks, BLOCK * BITS // 8), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.02, N * k_blocks).astype(np.float32)
    node = helper.make_node("MatMulNBits", ["A", "B", "scales"], ["Y"], domain="com.microsoft", K=K, N=N, bits=BITS,
                            block_size=BLOCK, accuracy_level=4)
    return session(helper.make_graph(
        [node], "nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", K])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", N])],
        [numpy_helper.from_array(b, "B"), numpy_helper.from_array(scales, "scales")])), b.nbytes + scales.nbytes


def identity(K, N):
    """A model with MatMulNBits' input and output sizes and next to no work: session.run's cost."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, N])
    slice_node = helper.make_node("Slice", ["A", "starts", "ends", "axes"], ["S"])
    pad = helper.make_node("Pad", ["S", "pads"], ["P"])
    reshape = helper.make_node("Reshape", ["P", "shape"], ["Y"])
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)  # noqa: E731
    inits = [shape, ints("starts", [0]), ints("ends", [min(K, N)]), ints("axes", [1]), ints("pads", [0, 0, 0, N - min(K, N)])]
    return session(helper.make_graph(
        [slice_node, pad, reshape], "overhead", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", K])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", N])], inits))


def median_ms(sessions, x, repeat):
    sessions[0].run(None, {"A": x})
    times = []
    for i in range(repeat):
        s = sessions[i % len(sessions)]
        t0 = time.perf_counter()
        s.run(None, {"A": x})
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print(f"ORT {ort.__version__} CPU EP MatMulNBits, accuracy_level=4, bits {BITS}, block {BLOCK}, symmetric, "
          f"1 thread, {args.repeat} calls per cell (median), weights cold")
    print(f"{'KxN':<11} {'M':>5} {'ORT run ms':>11} {'run overhead':>13} {'ORT kernel ms':>14}")
    for K, N in SHAPES:
        first, nbytes = nbits(K, N, rng)
        copies = max(2, (96 << 20) // nbytes)  # more weights than the L3 holds, as in a model
        sessions = [first] + [nbits(K, N, rng)[0] for _ in range(copies - 1)]
        overhead = [identity(K, N)]
        for M in (1, 4, 32, 128):
            x = rng.standard_normal((M, K)).astype(np.float32)
            total = median_ms(sessions, x, args.repeat)
            base = median_ms(overhead, x, args.repeat)
            print(f"{K:>5}x{N:<5} {M:>5} {total:>11.3f} {base:>13.3f} {total - base:>14.3f}")
        del sessions


if __name__ == "__main__":
    main()
