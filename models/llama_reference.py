# SPDX-License-Identifier: Apache-2.0
"""The llama decoder in plain numpy (float64), written independently of the ONNX graph: the
reference the exported fp32 model is checked against. Whole sequence at once, no cache."""

from __future__ import annotations

import numpy as np
from gguf_llama import LlamaWeights


def _rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _rotate(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """Rotary embedding, rotate-half form: dims i and i + d/2 form one rotating pair."""
    half = x.shape[-1] // 2
    freq = theta ** (-np.arange(half, dtype=np.float64) / half)
    angle = positions[:, None] * freq[None, :]  # [seq, half]
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def logits(weights: LlamaWeights, token_ids, observe=None) -> np.ndarray:
    """[seq, vocab] float64 logits of a token sequence starting at position 0.
    observe(layer, name, x), if given, sees the input of each layer's projections:
    'attention_input' (q, k, v), 'mlp_input' (gate, up) and 'down_input' (down)."""
    observe = observe or (lambda layer, name, x: None)
    c = weights.config
    ids = np.asarray(token_ids, dtype=np.int64)
    seq = len(ids)
    positions = np.arange(seq, dtype=np.float64)
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    group = c.heads // c.kv_heads
    x = weights.embedding[ids].astype(np.float64)
    for i, layer in enumerate(weights.layers):
        h = _rms_norm(x, layer["input_norm"], c.rms_eps)
        observe(i, "attention_input", h)
        q = (h @ layer["q_proj"]).reshape(seq, c.heads, c.head_dim)
        k = (h @ layer["k_proj"]).reshape(seq, c.kv_heads, c.head_dim)
        v = (h @ layer["v_proj"]).reshape(seq, c.kv_heads, c.head_dim)
        attended = np.empty((seq, c.heads, c.head_dim))
        for head in range(c.heads):
            kv = head // group  # query heads share key/value heads in consecutive groups
            qh = _rotate(q[:, head], positions, c.rope_theta)
            kh = _rotate(k[:, kv], positions, c.rope_theta)
            scores = np.where(causal, qh @ kh.T / np.sqrt(c.head_dim), -np.inf)
            p = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attended[:, head] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, kv]
        x = x + attended.reshape(seq, c.hidden) @ layer["o_proj"]
        h = _rms_norm(x, layer["post_attention_norm"], c.rms_eps)
        observe(i, "mlp_input", h)
        gate = h @ layer["gate_proj"]
        gated = gate / (1 + np.exp(-gate)) * (h @ layer["up_proj"])
        observe(i, "down_input", gated)
        x = x + gated @ layer["down_proj"]
    return _rms_norm(x, weights.final_norm, c.rms_eps) @ weights.embedding.T
