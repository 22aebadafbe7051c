# SPDX-License-Identifier: Apache-2.0
"""`calls`: per call, one quantize_dynamic MatMul (x[M,K] @ W[K,N] + bias, per-channel int8 weights): our EP
(one fused node: its DynamicQuantizeLinear, the MatMulInteger group) against ORT's CPU EP on the
same model (its fused DynamicQuantizeMatMul) and ORT on the fp32 model. The `dql` column is ORT's
DynamicQuantizeLinear alone on the same x (a whole session run): what a DQL costs ORT. The arms
are interleaved call by call (each round runs every arm once, the order rotated), medians of
--repeat rounds.

`encoder`: a quantize_dynamic transformer encoder (all-MiniLM-L6-v2's shape: 6 layers, hidden 384,
12 heads, FFN 1536; random weights), batch 1 and 8 of 128 tokens: EP vs ORT CPU on the same model vs
ORT fp32, and the cosine of each arm's embeddings to fp32's.

`attention`: attention's activation x activation MatMuls (QKᵀ: [B,H,S,D] x [B,H,D,S]; PV:
softmax([B,H,S,S]) x [B,H,S,D]) quantized the three ways ORT's quantizers do it (`dynamic`:
quantize_dynamic with MatMulConstBOnly off, MatMulInteger; `qlinear`: quantize_static QOperator,
QLinearMatMul; `qdq`: quantize_static QDQ), EP vs ORT CPU on the same model vs ORT fp32, each cell
timed in --rounds interleaved rounds (the median of the round medians, and their spread). The
models declare static shapes; `groups` is how many groups the EP claimed (0: its measured rule
declined the shape, both arms ran ORT). ONEBIT_ACTIVATION_MATMULS=all measures every shape on the
EP, whatever the rule says.

  python bench/bench_dynamic.py calls     [--shapes 384x384,384x1536,1536x384] [--rows 1,8,128]
  python bench/bench_dynamic.py encoder   [--batches 1,8] [--seq 128] [--layers 6]
  python bench/bench_dynamic.py attention [--attention 1x12x128x32,8x12x128x32,1x9x64x64]
         [--forms dynamic,qlinear,qdq] [--rounds 3]
         [--threads 1] [--repeat N] [--smoke]"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from bench_ort import REPO, ep_library, register_once, session, summary, time_interleaved, time_runs

sys.path.insert(0, str(REPO / "test" / "python"))
from dynamic_models import (  # noqa: E402
    activation_quantized,
    attention_matmul,
    dynamic_quantize_linear,
    dynamic_quantized,
    encoder,
    float_matmuls,
)


def quantized_twin(model: onnx.ModelProto, directory: pathlib.Path) -> bytes:
    return dynamic_quantized(model, directory).SerializeToString()


def bench_calls(args, threads: int) -> None:
    shapes = [(64, 48)] if args.smoke else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows = [1, 3] if args.smoke else [int(r) for r in args.rows.split(",")]
    repeat = 3 if args.smoke else (args.repeat or 200)
    print("K x N        M   onebit     ort  ort_fp32     dql  (ms/call, median)   ort/onebit  fp32/onebit  dql/onebit")
    rng = np.random.default_rng(1)
    dql = session(dynamic_quantize_linear().SerializeToString(), "ort", threads)
    with tempfile.TemporaryDirectory() as d:
        for K, N in shapes:
            fp32 = float_matmuls(["M", K], [(K, N)], bias=True)
            quantized = quantized_twin(fp32, pathlib.Path(d))
            arms = {
                "onebit": session(quantized, "onebit", threads),
                "ort": session(quantized, "ort", threads),
                "fp32": session(fp32.SerializeToString(), "ort", threads),
                "dql": dql,
            }
            for M in rows:
                feeds = {"x": rng.standard_normal((M, K)).astype(np.float32)}
                t = {arm: summary(ms)["median_ms"] for arm, ms in time_interleaved(arms, feeds, 5, repeat).items()}
                print(
                    f"{K:4d}x{N:<5d} {M:4d}  {t['onebit']:7.4f} {t['ort']:7.4f} {t['fp32']:9.4f} {t['dql']:7.4f}"
                    f"   {t['ort'] / t['onebit']:19.2f} {t['fp32'] / t['onebit']:12.2f} {t['dql'] / t['onebit']:11.2f}",
                    flush=True,
                )


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
    arms = {
        "onebit": session(quantized, "onebit", threads),
        "ort": session(quantized, "ort", threads),
        "fp32": session(fp32.SerializeToString(), "ort", threads),
    }
    print(f"encoder: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, {seq} tokens per sequence")
    print(
        "batch   onebit       ort      fp32  (ms/run, median)   ort/onebit  fp32/onebit   cos(onebit,fp32) "
        "cos(ort,fp32)  (min over the batch)"
    )
    rng = np.random.default_rng(2)
    for batch in batches:
        feeds = {"x": rng.standard_normal((batch, seq, hidden)).astype(np.float32)}
        t = {arm: summary(time_runs(s, feeds, 2, repeat))["median_ms"] for arm, s in arms.items()}
        y = {arm: s.run(None, feeds)[0] for arm, s in arms.items()}
        print(
            f"{batch:5d} {t['onebit']:8.2f} {t['ort']:9.2f} {t['fp32']:9.2f} {t['ort'] / t['onebit']:23.2f}"
            f" {t['fp32'] / t['onebit']:12.2f} {cosines(y['onebit'], y['fp32']).min():18.5f}"
            f" {cosines(y['ort'], y['fp32']).min():14.5f}",
            flush=True,
        )


def attention_feeds(B, H, S, D, which: str, rng) -> dict:
    """QKᵀ: q [B,H,S,D] and kᵀ [B,H,D,S] ~ N(0,1); PV: scores [B,H,S,S] (softmax in the model), v [B,H,S,D]."""
    if which == "qk":
        return {
            "a": rng.standard_normal((B, H, S, D)).astype(np.float32),
            "b": rng.standard_normal((B, H, D, S)).astype(np.float32),
        }
    return {
        "a": (rng.standard_normal((B, H, S, S)) * 3).astype(np.float32),
        "b": rng.standard_normal((B, H, S, D)).astype(np.float32),
    }


def claimed_groups(model: bytes, threads: int) -> int:
    """How many nodes ORT assigned to the EP (all the nodes of a claimed group)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    so.add_provider_for_devices(register_once(), {})
    sess = ort.InferenceSession(model, sess_options=so, enable_fallback=0)
    ops = {"MatMulInteger", "QLinearMatMul", "MatMul"}
    return sum(
        n.op_type in ops
        for sub in sess.get_provider_graph_assignment_info()
        if sub.ep_name != "CPUExecutionProvider"
        for n in sub.get_nodes()
    )


def bench_attention(args, threads: int) -> None:
    ort.set_default_logger_severity(3)  # not the warning about shape ops kept on the CPU EP, per session
    logging.getLogger().setLevel(logging.ERROR)  # nor the quantizers' advice to pre-process, per model
    cells = [(1, 2, 8, 16)] if args.smoke else [tuple(int(v) for v in c.split("x")) for c in args.attention.split(",")]
    forms = ["dynamic", "qlinear", "qdq"] if args.smoke else args.forms.split(",")
    repeat = 3 if args.smoke else (args.repeat or 50)
    rounds = 1 if args.smoke else args.rounds
    print(
        f"attention MatMuls, {rounds} rounds x {repeat} runs per arm and cell (ms/run: median of the round medians "
        "[min-max of the round medians])"
    )
    print(
        "B  H    S   D  matmul  K    N  form     groups  onebit                  ort                     fp32"
        "                    ort/onebit"
    )
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as d:
        for B, H, S, D in cells:
            for which in ("qk", "pv"):
                a_shape, b_shape = ((B, H, S, D), (B, H, D, S)) if which == "qk" else ((B, H, S, S), (B, H, S, D))
                K, N = b_shape[-2], b_shape[-1]
                # Static shapes, as a model exported with a fixed sequence length declares them: the
                # measured rule decides on the declared M and K (a symbolic one is declined).
                fp32 = attention_matmul(a_shape, b_shape, probabilities=which == "pv")
                calibration = [attention_feeds(B, H, S, D, which, rng) for _ in range(4)]
                feeds = attention_feeds(B, H, S, D, which, rng)
                for form in forms:
                    quantized = activation_quantized(fp32, pathlib.Path(d), form, calibration).SerializeToString()
                    arms = {
                        "onebit": session(quantized, "onebit", threads),
                        "ort": session(quantized, "ort", threads),
                        "fp32": session(fp32.SerializeToString(), "ort", threads),
                    }
                    per_round = {arm: [] for arm in arms}
                    for _ in range(rounds):
                        for arm, s in arms.items():
                            per_round[arm].append(summary(time_runs(s, feeds, 3, repeat))["median_ms"])
                    med = {arm: float(np.median(v)) for arm, v in per_round.items()}
                    cell = {arm: f"{med[arm]:7.3f} [{min(v):.3f}-{max(v):.3f}]" for arm, v in per_round.items()}
                    print(
                        f"{B:<2d} {H:<3d} {S:4d} {D:3d}  {which:6s} {K:4d} {N:4d}  {form:8s} "
                        f"{claimed_groups(quantized, threads):6d}  {cell['onebit']:23s} {cell['ort']:23s} "
                        f"{cell['fp32']:23s} {med['ort'] / med['onebit']:6.2f}",
                        flush=True,
                    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=["calls", "encoder", "attention"], default="calls")
    parser.add_argument("--shapes", default="384x384,384x1536,1536x384,768x768,768x3072,3072x768")
    parser.add_argument("--rows", default="1,8,128")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument(
        "--attention",
        default="1x12x128x32,8x12x128x32,1x9x32x64,1x9x64x64,1x9x128x64",
        help="BxHxSxD cells: MiniLM (H=12, D=32) and SmolLM2 prefill (H=9, D=64)",
    )
    parser.add_argument("--forms", default="dynamic,qlinear,qdq")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, both benchmarks: the harness runs")
    args = parser.parse_args()
    print(f"onnxruntime {ort.__version__}, EP {ep_library()}, {os.cpu_count()} cpus, {args.threads} thread(s)")
    if args.smoke or args.what == "calls":
        bench_calls(args, args.threads)
    if args.smoke or args.what == "encoder":
        bench_encoder(args, args.threads)
    if args.smoke or args.what == "attention":
        bench_attention(args, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
