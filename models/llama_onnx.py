# SPDX-License-Identifier: Apache-2.0
"""The llama decoder as one ONNX graph (opset 17) for prefill and decode, with a KV cache.

inputs   input_ids [1, seq] int64; past_key.<i>, past_value.<i> [1, kv_heads, past, head_dim]
         (past = 0 for the first call). Positions are past .. past + seq - 1.
outputs  logits [1, seq, vocab]; present_key.<i>, present_value.<i> [1, kv_heads, past + seq, head_dim]

The projections (7 a layer) and the tied output projection are MatMuls with constant [in, out]
weights named `<node>.weight`: the nodes the quantizer turns into A8W8 QDQ groups
(`projection_nodes`). Attention's two activation x activation MatMuls stay float.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from gguf_llama import PROJECTIONS, LlamaConfig, LlamaWeights

OPSET = 17


def projection_nodes(config: LlamaConfig) -> list[str]:
    """Names of the MatMul nodes with constant weights, in graph order (7 per layer, then lm_head)."""
    return [f"layers.{i}.{p}" for i in range(config.layers) for p in PROJECTIONS.values()] + ["lm_head"]


def cache_names(config: LlamaConfig, kind: str) -> list[str]:
    """past_key.0, past_value.0, past_key.1, ... (kind 'past' or 'present')."""
    return [f"{kind}_{kv}.{i}" for i in range(config.layers) for kv in ("key", "value")]


def rotary_tables(config: LlamaConfig) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of every position's angles, [context, head_dim], each half repeated
    (the rotate-half form pairs dim i with dim i + head_dim/2)."""
    half = config.head_dim // 2
    freq = config.rope_theta ** (-np.arange(half, dtype=np.float64) / half)
    angle = np.arange(config.context, dtype=np.float64)[:, None] * freq[None, :]
    angle = np.concatenate([angle, angle], axis=1)
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


class _Graph:
    """Collects nodes and initializers; every node's output is named after the node."""

    def __init__(self):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, value) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, outputs: list[str] | None = None, **attrs) -> str:
        outputs = outputs or [name]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs[0]

    def rms_norm(self, x: str, weight: np.ndarray, eps: float, name: str) -> str:
        square = self.op("Mul", [x, x], f"{name}.square")
        mean = self.op("ReduceMean", [square], f"{name}.mean", axes=[-1], keepdims=1)
        var = self.op("Add", [mean, self.const(f"{name}.eps", np.float32(eps))], f"{name}.var")
        inv = self.op("Reciprocal", [self.op("Sqrt", [var], f"{name}.rms")], f"{name}.inv_rms")
        return self.op("Mul", [self.op("Mul", [x, inv], f"{name}.normed"), self.const(f"{name}.weight", weight)], name)

    def linear(self, x: str, weight: np.ndarray, name: str) -> str:
        return self.op("MatMul", [x, self.const(f"{name}.weight", weight.astype(np.float32))], name)

    def rotate(self, x: str, cos: str, sin: str, half: int, name: str) -> str:
        """x * cos + rotate_half(x) * sin, with rotate_half(x) = [-x2, x1] on the last axis."""
        first = self.op("Slice", [x, "const.zero", f"const.{half}", "const.minus_one"], f"{name}.first")
        second = self.op("Slice", [x, f"const.{half}", "const.int_max", "const.minus_one"], f"{name}.second")
        rotated = self.op("Concat", [self.op("Neg", [second], f"{name}.neg"), first], f"{name}.rotated", axis=-1)
        return self.op("Add", [self.op("Mul", [x, cos], f"{name}.cos"), self.op("Mul", [rotated, sin], f"{name}.sin")], name)


def build_decoder(weights: LlamaWeights) -> onnx.ModelProto:
    c = weights.config
    g = _Graph()
    half = c.head_dim // 2
    group = c.heads // c.kv_heads
    for name, value in {"zero": [0], "one": [1], "minus_one": [-1], str(half): [half],
                        "int_max": [np.iinfo(np.int64).max]}.items():
        g.const(f"const.{name}", np.array(value, np.int64))
    g.const("const.step", np.array(1, np.int64))
    g.const("const.origin", np.array(0, np.int64))
    cos_table, sin_table = rotary_tables(c)

    # Positions past .. past + seq - 1, their rotary factors, and the causal mask over past + seq keys.
    seq = g.op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    past = g.op("Shape", ["past_key.0"], "past_len", start=2, end=3)
    start = g.op("Squeeze", [past, "const.zero"], "start")
    end = g.op("Squeeze", [g.op("Add", [past, seq], "total_len"), "const.zero"], "end")
    positions = g.op("Range", [start, end, "const.step"], "positions")
    cos = g.op("Gather", [g.const("rotary.cos_table", cos_table), positions], "rotary.cos")
    sin = g.op("Gather", [g.const("rotary.sin_table", sin_table), positions], "rotary.sin")
    keys = g.op("Range", ["const.origin", end, "const.step"], "key_positions")
    visible = g.op("LessOrEqual", [g.op("Unsqueeze", [keys, "const.zero"], "key_row"),
                                   g.op("Unsqueeze", [positions, "const.one"], "query_column")], "visible")
    mask = g.op("Where", [visible, g.const("mask.open", np.float32(0)), g.const("mask.closed", np.float32(-np.inf))], "mask")

    shapes = {
        "heads": [0, 0, c.heads, c.head_dim],          # [1, seq, hidden] -> [1, seq, heads, d]
        "kv_heads": [0, 0, c.kv_heads, c.head_dim],
        "grouped": [1, c.kv_heads, group, -1, c.head_dim],  # query heads grouped by their KV head
        "ungrouped": [1, c.heads, -1, c.head_dim],
        "hidden": [0, 0, c.hidden],
    }
    for key, value in shapes.items():
        g.const(f"shape.{key}", np.array(value, np.int64))
    g.const("attention.scale", np.float32(1.0 / np.sqrt(c.head_dim)))

    x = g.op("Gather", [g.const("embed_tokens.weight", weights.embedding), "input_ids"], "embed_tokens")
    for i, layer in enumerate(weights.layers):
        p = f"layers.{i}"
        h = g.rms_norm(x, layer["input_norm"], c.rms_eps, f"{p}.input_norm")

        def heads(proj: str, shape: str) -> str:
            split = g.op("Reshape", [g.linear(h, layer[proj], f"{p}.{proj}"), f"shape.{shape}"], f"{p}.{proj}.split")
            return g.op("Transpose", [split], f"{p}.{proj}.heads", perm=[0, 2, 1, 3])

        q = g.rotate(heads("q_proj", "heads"), cos, sin, half, f"{p}.q_rotary")
        k = g.rotate(heads("k_proj", "kv_heads"), cos, sin, half, f"{p}.k_rotary")
        present_k = g.op("Concat", [f"past_key.{i}", k], f"{p}.present_key", outputs=[f"present_key.{i}"], axis=2)
        present_v = g.op("Concat", [f"past_value.{i}", heads("v_proj", "kv_heads")], f"{p}.present_value",
                         outputs=[f"present_value.{i}"], axis=2)

        # Grouped-query attention by broadcasting: q [1, kv, group, seq, d] x k [1, kv, 1, d, total].
        q_grouped = g.op("Reshape", [q, "shape.grouped"], f"{p}.q_grouped")
        group_axis = g.const(f"{p}.group_axis", np.array([2], np.int64))
        k_grouped = g.op("Unsqueeze", [present_k, group_axis], f"{p}.k_grouped")  # [1, kv, 1, total, d]
        k_t = g.op("Transpose", [k_grouped], f"{p}.k_t", perm=[0, 1, 2, 4, 3])
        v = g.op("Unsqueeze", [present_v, group_axis], f"{p}.v_grouped")
        scores = g.op("MatMul", [q_grouped, k_t], f"{p}.attention.scores")
        scaled = g.op("Add", [g.op("Mul", [scores, "attention.scale"], f"{p}.attention.scaled"), mask], f"{p}.attention.masked")
        probs = g.op("Softmax", [scaled], f"{p}.attention.probs", axis=-1)
        context = g.op("MatMul", [probs, v], f"{p}.attention.context")
        merged = g.op("Reshape", [g.op("Transpose", [g.op("Reshape", [context, "shape.ungrouped"], f"{p}.context_heads")],
                                         f"{p}.context_t", perm=[0, 2, 1, 3]), "shape.hidden"], f"{p}.context_merged")
        x = g.op("Add", [x, g.linear(merged, layer["o_proj"], f"{p}.o_proj")], f"{p}.attention_residual")

        h = g.rms_norm(x, layer["post_attention_norm"], c.rms_eps, f"{p}.post_attention_norm")
        gate = g.linear(h, layer["gate_proj"], f"{p}.gate_proj")
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], f"{p}.gate_sigmoid")], f"{p}.gate_silu")
        product = g.op("Mul", [silu, g.linear(h, layer["up_proj"], f"{p}.up_proj")], f"{p}.gated")
        x = g.op("Add", [x, g.linear(product, layer["down_proj"], f"{p}.down_proj")], f"{p}.mlp_residual")

    h = g.rms_norm(x, weights.final_norm, c.rms_eps, "final_norm")
    # The output projection is the embedding, transposed: tied in the source, a separate
    # initializer here so the quantizer treats it as one more constant-weight MatMul.
    g.op("MatMul", [h, g.const("lm_head.weight", np.ascontiguousarray(weights.embedding.T))], "lm_head", outputs=["logits"])

    cache = lambda name, length: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, c.kv_heads, length, c.head_dim])  # noqa: E731
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"])]
    inputs += [cache(n, "past") for n in cache_names(c, "past")]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", c.vocab])]
    outputs += [cache(n, "total") for n in cache_names(c, "present")]
    graph = helper.make_graph(g.nodes, "llama_decoder", inputs, outputs, g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)
    model.producer_name = "onebit-ep-models"
    model.doc_string = f"{c.name}: llama decoder, {c.layers} layers, weights dequantized from GGUF"
    return model
