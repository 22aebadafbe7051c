# SPDX-License-Identifier: Apache-2.0
"""Per call, one quantize_dynamic MatMul (x[M,K] @ W[K,N] + bias, per-channel int8 weights): our EP
(ORT runs the DynamicQuantizeLinear, the EP the MatMulInteger group) against ORT's CPU EP on the
same model (its fused DynamicQuantizeMatMul) and ORT on the fp32 model. The `dql` column is ORT's
DynamicQuantizeLinear alone on the same x: what fusing the DQL into the EP's call could save at most.

  python bench/bench_dynamic.py [--shapes 384x384,384x1536,1536x384] [--rows 1,8,128]
                                [--threads 1] [--repeat 200] [--smoke]"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

from bench_ort import ep_library, session, summary, time_runs


def float_matmul(K: int, N: int, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array((rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(N).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])]
    graph = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def dql_only() -> bytes:
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"])
    graph = helper.make_graph([node], "dql", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info(n, t, None) for n, t in
                               (("q", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def dynamic_twin(model: onnx.ModelProto, directory: pathlib.Path) -> bytes:
    onnx.save(model, directory / "f.onnx")
    quantize_dynamic(directory / "f.onnx", directory / "q.onnx", per_channel=True, weight_type=QuantType.QInt8)
    return (directory / "q.onnx").read_bytes()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="384x384,384x1536,1536x384,768x768,768x3072,3072x768")
    parser.add_argument("--rows", default="1,8,128")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    shapes = [(64, 48)] if args.smoke else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows = [1, 3] if args.smoke else [int(r) for r in args.rows.split(",")]
    repeat = 3 if args.smoke else args.repeat
    print(f"onnxruntime {ort.__version__}, EP {ep_library()}, {os.cpu_count()} cpus, {args.threads} thread(s)")
    print("K x N        M   onebit     ort  ort_fp32     dql  (ms/call, median)   ort/onebit  fp32/onebit  dql/onebit")
    rng = np.random.default_rng(1)
    dql = session(dql_only(), "ort", args.threads)
    with tempfile.TemporaryDirectory() as d:
        for K, N in shapes:
            fp32 = float_matmul(K, N)
            quantized = dynamic_twin(fp32, pathlib.Path(d))
            arms = {"onebit": session(quantized, "onebit", args.threads), "ort": session(quantized, "ort", args.threads),
                    "fp32": session(fp32.SerializeToString(), "ort", args.threads)}
            for M in rows:
                feeds = {"x": rng.standard_normal((M, K)).astype(np.float32)}
                t = {arm: summary(time_runs(s, feeds, 5, repeat))["median_ms"] for arm, s in arms.items()}
                t["dql"] = summary(time_runs(dql, feeds, 5, repeat))["median_ms"]
                print(f"{K:4d}x{N:<5d} {M:4d}  {t['onebit']:7.4f} {t['ort']:7.4f} {t['fp32']:9.4f} {t['dql']:7.4f}"
                      f"   {t['ort'] / t['onebit']:19.2f} {t['fp32'] / t['onebit']:12.2f} {t['dql'] / t['onebit']:11.2f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
