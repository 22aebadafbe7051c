# SPDX-License-Identifier: Apache-2.0
"""How much could another activation quantization gain on the int4 SmolLM2? The W4A8 contract
quantizes activations as ORT does (per row and 32-k block, symmetric, max|x|/127). This rewrites every
MatMulNBits of the cached int4 model as a float graph of the same int4 weights, its activations
fake-quantized per block in one of three ways, and runs onebit-run's --quality on each (ORT's CPU EP
runs the float graph; the onebit EP claims nothing in it):

  float  no activation quantization: what the int4 weights alone cost (the KL any scheme nears)
  sym    ORT's: round(x · 127/amax) · amax/127 (the contract, but float sums in ORT's order)
  asym   uint8 with a zero point over [min(x, 0), max(x, 0)]: the full 256 levels for skewed blocks

usage: python bench/activation_quant_study.py [--variants float,sym,asym]
Prints one line per variant: pooled KL(fp32 || variant) and top-1 against fp32 over the 4 built-in
passages. Needs npm run build:ts and the int4 model (onebit-run --weights int4 builds it).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "models"))
import build_smollm2  # noqa: E402


def dequantized_weight(node: onnx.NodeProto, initializers: dict) -> np.ndarray:
    """[K, N] float32 of a 4-bit MatMulNBits without zero points (the model builder's CPU int4)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    K, N, block = attrs["K"], attrs["N"], attrs["block_size"]
    if attrs["bits"] != 4 or len([i for i in node.input if i]) != 3 or K % block:
        raise SystemExit(f"activation_quant_study: {node.name} is not 4-bit, symmetric, whole blocks")
    blob = numpy_helper.to_array(initializers[node.input[1]])  # [N, k_blocks, block/2]
    scales = numpy_helper.to_array(initializers[node.input[2]]).reshape(N, -1, 1)
    nibbles = np.stack([blob & 15, blob >> 4], axis=-1).reshape(N, K // block, block)
    return ((nibbles.astype(np.float32) - 8) * scales).reshape(N, K).T.copy()


def fake_quantized_input(graph: onnx.GraphProto, x: str, K: int, block: int, variant: str, prefix: str) -> str:
    """Nodes appended to graph that give x ([.., K]) fake-quantized per block; returns their output."""

    # Names are the node's prefix + their own; "#name" in inputs is such a name, others are graph values.
    def const(name: str, value) -> None:
        graph.initializer.append(numpy_helper.from_array(np.asarray(value), prefix + name))

    def op(kind: str, inputs: list[str], out: str, **attrs) -> str:
        names = [prefix + i[1:] if i.startswith("#") else i for i in inputs]
        graph.node.append(helper.make_node(kind, names, [prefix + out], **attrs))
        return prefix + out

    if variant == "float":
        return x
    const("blocks", np.array([0, 0, K // block, block], np.int64))
    const("rows", np.array([0, 0, K], np.int64))
    const("levels", np.float32(127 if variant == "sym" else 255))
    const("zero", np.float32(0))
    const("tiny", np.float32(1e-30))  # an all-zero block: scale 1e-30, every value 0
    xb = op("Reshape", [x, "#blocks"], "xb")
    if variant == "sym":
        amax = op("ReduceMax", [op("Abs", [xb], "abs")], "amax0", axes=[-1], keepdims=1)
        amax = op("Max", [amax, "#tiny"], "amax")
        q = op("Round", [op("Mul", [xb, op("Div", ["#levels", amax], "factor")], "scaled")], "q")
        deq = op("Mul", [q, op("Div", [amax, "#levels"], "scale")], "deq")
    else:
        hi = op("Max", [op("ReduceMax", [xb], "max0", axes=[-1], keepdims=1), "#zero"], "max")
        lo = op("Min", [op("ReduceMin", [xb], "min0", axes=[-1], keepdims=1), "#zero"], "min")
        scale = op("Max", [op("Div", [op("Sub", [hi, lo], "range"), "#levels"], "scale0"), "#tiny"], "scale")
        zp = op("Round", [op("Div", [op("Neg", [lo], "neglo"), scale], "zp0")], "zp")
        q = op(
            "Clip", [op("Add", [op("Round", [op("Div", [xb, scale], "xs")], "r"), zp], "qz"), "#zero", "#levels"], "q"
        )
        deq = op("Mul", [op("Sub", [q, zp], "centred"), scale], "deq")
    return op("Reshape", [deq, "#rows"], "x")


VARIANTS = ("float", "sym", "asym")


def write_variant(int4_model: pathlib.Path, out: pathlib.Path, variant: str) -> None:
    model = onnx.load(str(int4_model))
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    nodes, dropped = list(graph.node), set()
    del graph.node[:]
    for node in nodes:
        if node.op_type != "MatMulNBits":
            graph.node.append(node)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        prefix = f"{node.name}/{variant}/"
        graph.initializer.append(numpy_helper.from_array(dequantized_weight(node, initializers), prefix + "W"))
        x = fake_quantized_input(graph, node.input[0], attrs["K"], attrs["block_size"], variant, prefix)
        graph.node.append(helper.make_node("MatMul", [x, prefix + "W"], list(node.output), name=prefix + "MatMul"))
        dropped.update(node.input[1:3])
    if not dropped:
        raise SystemExit(f"activation_quant_study: {int4_model} has no MatMulNBits in its main graph")
    kept = [i for i in graph.initializer if i.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    onnx.save(model, str(out), save_as_external_data=True, location=out.name + ".data")


def quality(cache_dir: str) -> dict:
    command = ["node", str(ROOT / "dist/apps/cli/onebit_run.js"), "--weights", "int4", "--quality"]
    command += ["--max-tokens", "1", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "ONEBIT_CACHE_DIR": cache_dir})
    if done.returncode != 0:
        raise SystemExit(f"activation_quant_study: onebit-run failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)["quality"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="float,sym,asym")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variants {unknown}: choose from {', '.join(VARIANTS)}")
    folder = pathlib.Path(build_smollm2.build_cached(build_smollm2.default_cache_dir(), weights="int4"))
    manifest = json.loads((folder / build_smollm2.MANIFEST).read_text())
    for variant in variants:
        with tempfile.TemporaryDirectory() as cache:
            # The same folder, its int4 model replaced: onebit-run finds it through ONEBIT_CACHE_DIR.
            copy = pathlib.Path(cache) / folder.name
            copy.mkdir()
            for entry in folder.iterdir():
                if not entry.name.startswith(manifest["int4_model"]):
                    (copy / entry.name).symlink_to(entry)
            write_variant(folder / manifest["int4_model"], copy / manifest["int4_model"], variant)
            report = quality(cache)
        ours = report["comparisons"][1]  # ORT's CPU EP on the variant, against fp32
        print(
            f"{variant:6s} KL(fp32 || variant) {ours['meanKl']:.4f}  top-1 "
            f"{round(ours['top1'] * ours['positions'])} of {ours['positions']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
