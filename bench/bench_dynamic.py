# SPDX-License-Identifier: Apache-2.0
"""`calls`: per call, one quantize_dynamic MatMul (x[M,K] @ W[K,N] + bias, per-channel int8 weights): our EP
(one fused node: its DynamicQuantizeLinear, the MatMulInteger group) against ORT's CPU EP on the
same model (its fused DynamicQuantizeMatMul) and ORT on the fp32 model. The `dql` column is ORT's
DynamicQuantizeLinear alone on the same x (a whole session run): what a DQL costs ORT.

`encoder`: a quantize_dynamic transformer encoder (all-MiniLM-L6-v2's shape: 6 layers, hidden 384,
12 heads, FFN 1536; random weights), batch 1 and 8 of 128 tokens: EP vs ORT CPU on the same model vs
ORT fp32, and the cosine of each arm's embeddings to fp32's.

  python bench/bench_dynamic.py calls   [--shapes 384x384,384x1536,1536x384] [--rows 1,8,128]
  python bench/bench_dynamic.py encoder [--batches 1,8] [--seq 128] [--layers 6]
         [--threads 1] [--repeat N] [--smoke]"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from bench_ort import REPO, ep_library, session, summary, time_runs

sys.path.insert(0, str(REPO / "test" / "python"))
from dynamic_models import dynamic_quantized, encoder, float_matmuls  # noqa: E402


def dql_only() -> bytes:
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"])
    graph = helper.make_graph([node], "dql", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info(n, t, None) for n, t in
                               (("q", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def quantized_twin(model: onnx.ModelProto, directory: pathlib.Path) -> bytes:
    return dynamic_quantized(model, directory).SerializeToString()


def bench_calls(args, threads: int) -> None:
    shapes = [(64, 48)] if args.smoke else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows = [1, 3] if args.smoke else [int(r) for r in args.rows.split(",")]
    repeat = 3 if args.smoke else (args.repeat or 200)
    print("K x N        M   onebit     ort  ort_fp32     dql  (ms/call, median)   ort/onebit  fp32/onebit  dql/onebit")
    rng = np.random.default_rng(1)
    dql = session(dql_only(), "ort", threads)
    with tempfile.TemporaryDirectory() as d:
        for K, N in shapes:
            fp32 = float_matmuls(["M", K], [(K, N)], bias=True)
            quantized = quantized_twin(fp32, pathlib.Path(d))
            arms = {"onebit": session(quantized, "onebit", threads), "ort": session(quantized, "ort", threads),
                    "fp32": session(fp32.SerializeToString(), "ort", threads)}
            for M in rows:
                feeds = {"x": rng.standard_normal((M, K)).astype(np.float32)}
                t = {arm: summary(time_runs(s, feeds, 5, repeat))["median_ms"] for arm, s in arms.items()}
                t["dql"] = summary(time_runs(dql, feeds, 5, repeat))["median_ms"]
                print(f"{K:4d}x{N:<5d} {M:4d}  {t['onebit']:7.4f} {t['ort']:7.4f} {t['fp32']:9.4f} {t['dql']:7.4f}"
                      f"   {t['ort'] / t['onebit']:19.2f} {t['fp32'] / t['onebit']:12.2f} {t['dql'] / t['onebit']:11.2f}",
                      flush=True)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def bench_encoder(args, threads: int) -> None:
    layers, seq = (1, 8) if args.smoke else (args.layers, args.seq)
    hidden, heads, ffn = (64, 4, 256) if args.smoke else (384, 12, 1536)
    batches = [1, 2] if args.smoke else [int(b) for b in args.batches.split(",")]
    repeat = 2 if args.smoke else (args.repeat or 20)
    fp32 = encoder(layers, hidden, heads, ffn)
    with tempfile.TemporaryDirectory() as d:
        quantized = quantized_twin(fp32, pathlib.Path(d))
    arms = {"onebit": session(quantized, "onebit", threads), "ort": session(quantized, "ort", threads),
            "fp32": session(fp32.SerializeToString(), "ort", threads)}
    print(f"encoder: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, {seq} tokens per sequence")
    print("batch   onebit       ort      fp32  (ms/run, median)   ort/onebit  fp32/onebit   cos(onebit,fp32) "
          "cos(ort,fp32)  (min over the batch)")
    rng = np.random.default_rng(2)
    for batch in batches:
        feeds = {"x": rng.standard_normal((batch, seq, hidden)).astype(np.float32)}
        t = {arm: summary(time_runs(s, feeds, 2, repeat))["median_ms"] for arm, s in arms.items()}
        y = {arm: s.run(None, feeds)[0] for arm, s in arms.items()}
        print(f"{batch:5d} {t['onebit']:8.2f} {t['ort']:9.2f} {t['fp32']:9.2f} {t['ort'] / t['onebit']:23.2f}"
              f" {t['fp32'] / t['onebit']:12.2f} {cosines(y['onebit'], y['fp32']).min():18.5f}"
              f" {cosines(y['ort'], y['fp32']).min():14.5f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=["calls", "encoder"], default="calls")
    parser.add_argument("--shapes", default="384x384,384x1536,1536x384,768x768,768x3072,3072x768")
    parser.add_argument("--rows", default="1,8,128")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, both benchmarks: the harness runs")
    args = parser.parse_args()
    print(f"onnxruntime {ort.__version__}, EP {ep_library()}, {os.cpu_count()} cpus, {args.threads} thread(s)")
    if args.smoke or args.what == "calls":
        bench_calls(args, args.threads)
    if args.smoke or args.what == "encoder":
        bench_encoder(args, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
