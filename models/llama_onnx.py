# SPDX-License-Identifier: Apache-2.0
"""The llama decoder as one ONNX graph (opset 17 + ORT's com.microsoft operators) for prefill and
decode, with a KV cache.

inputs   input_ids [1, seq] int64; attention_mask [1, total] int64, all ones, total = past + seq
         (the tokens in the cache after this call); past_key.<i>, past_value.<i>
         [1, kv_heads, past, head_dim] (past = 0 for the first call). Positions are past .. total - 1.
outputs  logits [1, seq, vocab]; present_key.<i>, present_value.<i> [1, kv_heads, total, head_dim]

The KV cache may also live in one pre-allocated buffer per input, [1, kv_heads, capacity, head_dim],
passed as past_* and bound as the matching present_* output (the same memory): GroupQueryAttention
then writes this call's keys and values at rows past .. total - 1 in place instead of copying the
whole cache into a new tensor, and present has the buffer's shape. The valid length then comes from
attention_mask, which is why the graph reads it from there and not from past_key's shape.

The projections (7 a layer) and the tied output projection are MatMuls with constant [in, out]
weights named `<node>.weight`: the nodes the quantizer turns into A8W8 QDQ groups
(`projection_nodes`). The rest is what ORT's own LLM exports use, fused: one GroupQueryAttention a
layer (rotary embedding, KV-cache append, causal grouped-query attention, float), RMSNorm as
SimplifiedLayerNormalization and, with the residual add, SkipSimplifiedLayerNormalization. Written
out op by op (Mul, ReduceMean, Slice, Concat, MatMul, Softmax ...) the same network was ~1,800 small
nodes that took ORT ~5.6 ms of a 12.8 ms decode step; fused, 399 nodes in the fp32 graph and ~2.3 ms (ORT profiler).
"""

from __future__ import annotations

import numpy as np
import onnx
from gguf_llama import PROJECTIONS, LlamaConfig, LlamaWeights
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MICROSOFT = "com.microsoft"  # ORT's contrib operators: the fused attention and norms


def projection_nodes(config: LlamaConfig) -> list[str]:
    """Names of the MatMul nodes with constant weights, in graph order (7 per layer, then lm_head)."""
    return [f"layers.{i}.{p}" for i in range(config.layers) for p in PROJECTIONS.values()] + ["lm_head"]


def cache_name(kind: str, kv: str, layer) -> str:
    """past_key.<layer> and the like (kind 'past' or 'present', kv 'key' or 'value'); layer "%d"
    gives the pattern genai_config.json takes."""
    return f"{kind}_{kv}.{layer}"


def cache_names(config: LlamaConfig, kind: str) -> list[str]:
    """past_key.0, past_value.0, past_key.1, ... (kind 'past' or 'present')."""
    return [cache_name(kind, kv, i) for i in range(config.layers) for kv in ("key", "value")]


def decoder_feeds(
    config: LlamaConfig, ids: list[int], past: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """One call's inputs: the tokens ids after the cache `past` (past_* arrays as the previous call's
    present_* returned them; None: an empty cache)."""
    if past is None:
        empty = np.zeros((1, config.kv_heads, 0, config.head_dim), np.float32)
        past = {name: empty for name in cache_names(config, "past")}
    total = next(iter(past.values())).shape[2] + len(ids)
    return {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, total), np.int64), **past}


def rotary_tables(config: LlamaConfig) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of every position's angles, [context, head_dim / 2]: GroupQueryAttention's
    caches for the rotate-half form (dim i pairs with dim i + head_dim / 2)."""
    half = config.head_dim // 2
    freq = config.rope_theta ** (-np.arange(half, dtype=np.float64) / half)
    angle = np.arange(config.context, dtype=np.float64)[:, None] * freq[None, :]
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

    def linear(self, x: str, weight: np.ndarray, name: str) -> str:
        return self.op("MatMul", [x, self.const(f"{name}.weight", weight.astype(np.float32))], name)

    def residual_norm(self, x: str, residual: str, weight: np.ndarray, eps: float, name: str) -> tuple[str, str]:
        """(rms_norm(x + residual) * weight, x + residual) in one SkipSimplifiedLayerNormalization."""
        outputs = [name, "", "", f"{name}.sum"]
        self.op(
            "SkipSimplifiedLayerNormalization",
            [x, residual, self.const(f"{name}.weight", weight)],
            name,
            outputs=outputs,
            domain=MICROSOFT,
            epsilon=eps,
        )
        return name, outputs[3]


def build_decoder(weights: LlamaWeights) -> onnx.ModelProto:
    c = weights.config
    g = _Graph()
    cos_table, sin_table = rotary_tables(c)
    g.const("rotary.cos_cache", cos_table)
    g.const("rotary.sin_cache", sin_table)

    # GroupQueryAttention reads the positions from the lengths: this call's tokens are
    # past .. total - 1, so the last one's index (seqlens_k) is total - 1.
    mask_length = g.op(
        "ReduceSum", ["attention_mask", g.const("const.axis1", np.array([1], np.int64))], "mask_length", keepdims=0
    )
    total = g.op("Cast", [mask_length], "total_len_int32", to=TensorProto.INT32)
    last = g.op("Sub", [total, g.const("const.one", np.array([1], np.int32))], "seqlens_k")
    total_scalar = g.op(
        "Squeeze",
        [
            g.op(
                "Cast",
                [g.op("Shape", ["attention_mask"], "mask_shape", start=1, end=2)],
                "mask_shape_int32",
                to=TensorProto.INT32,
            ),
            g.const("const.zero", np.array([0], np.int64)),
        ],
        "total_sequence_length",
    )

    x = g.op("Gather", [g.const("embed_tokens.weight", weights.embedding), "input_ids"], "embed_tokens")
    h = g.op(
        "SimplifiedLayerNormalization",
        [x, g.const("layers.0.input_norm.weight", weights.layers[0]["input_norm"])],
        "layers.0.input_norm",
        axis=-1,
        epsilon=c.rms_eps,
    )
    for i, layer in enumerate(weights.layers):
        p = f"layers.{i}"
        q, k, v = (g.linear(h, layer[proj], f"{p}.{proj}") for proj in ("q_proj", "k_proj", "v_proj"))
        # Rotary embedding, the KV cache append, grouped-query attention with the causal mask, in one node.
        attention = g.op(
            "GroupQueryAttention",
            [q, k, v, f"past_key.{i}", f"past_value.{i}", last, total_scalar, "rotary.cos_cache", "rotary.sin_cache"],
            f"{p}.attention",
            outputs=[f"{p}.attention", f"present_key.{i}", f"present_value.{i}"],
            domain=MICROSOFT,
            num_heads=c.heads,
            kv_num_heads=c.kv_heads,
            do_rotary=1,
            rotary_interleaved=0,
        )
        h, x = g.residual_norm(
            g.linear(attention, layer["o_proj"], f"{p}.o_proj"),
            x,
            layer["post_attention_norm"],
            c.rms_eps,
            f"{p}.post_attention_norm",
        )
        gate = g.linear(h, layer["gate_proj"], f"{p}.gate_proj")
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], f"{p}.gate_sigmoid")], f"{p}.gate_silu")
        product = g.op("Mul", [silu, g.linear(h, layer["up_proj"], f"{p}.up_proj")], f"{p}.gated")
        next_norm = (
            (f"layers.{i + 1}.input_norm", weights.layers[i + 1]["input_norm"])
            if i + 1 < c.layers
            else ("final_norm", weights.final_norm)
        )
        h, x = g.residual_norm(
            g.linear(product, layer["down_proj"], f"{p}.down_proj"), x, next_norm[1], c.rms_eps, next_norm[0]
        )

    # The output projection is the embedding, transposed: tied in the source, a separate
    # initializer here so the quantizer treats it as one more constant-weight MatMul.
    g.op(
        "MatMul",
        [h, g.const("lm_head.weight", np.ascontiguousarray(weights.embedding.T))],
        "lm_head",
        outputs=["logits"],
    )

    cache = lambda name, length: helper.make_tensor_value_info(
        name, TensorProto.FLOAT, [1, c.kv_heads, length, c.head_dim]
    )  # noqa: E731
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, "total"]),
    ]
    inputs += [cache(n, "past") for n in cache_names(c, "past")]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", c.vocab])]
    outputs += [cache(n, "total") for n in cache_names(c, "present")]
    # ONNX's shape inference does not know ORT's fused operators: their float outputs are declared,
    # so the quantizer can type the projections' inputs.
    graph_outputs = {o.name for o in outputs}
    declared = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
        for n in g.nodes
        if not onnx.defs.has(n.op_type, n.domain)
        for name in n.output
        if name and name not in graph_outputs
    ]
    graph = helper.make_graph(g.nodes, "llama_decoder", inputs, outputs, g.initializers, value_info=declared)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MICROSOFT, 1)], ir_version=8
    )
    model.producer_name = "onebit-ep-models"
    model.doc_string = f"{c.name}: llama decoder, {c.layers} layers, weights dequantized from GGUF"
    return model
