# SPDX-License-Identifier: Apache-2.0
"""Moves activation outliers into the weights before quantization (SmoothQuant's idea), without
changing what the fp32 network computes.

This model has a few input channels far larger than the rest; one per-tensor uint8 scale per
activation (what the EP claims) then spends its range on them. For an input channel j scaled by
1/s[j] and the matching weight row by s[j], x @ W is unchanged. The 1/s goes where it costs
nothing: into the RMSNorm weight before q/k/v and before gate/up, and into up's output columns
before down (silu(gate) * up is linear in up). s[j] = max|x_j|^alpha / max|W_j|^(1 - alpha),
from the calibration prompts run through the numpy reference.
"""

from __future__ import annotations

import llama_reference
import numpy as np
from gguf_llama import LlamaWeights

ALPHA = 0.5
# Which projections read each observed input, and where its 1/s is folded in.
GROUPS = {
    "attention_input": (("q_proj", "k_proj", "v_proj"), "input_norm"),
    "mlp_input": (("gate_proj", "up_proj"), "post_attention_norm"),
    "down_input": (("down_proj",), "up_proj"),
}


def input_maxima(weights: LlamaWeights, prompts_ids: list[list[int]]) -> dict[tuple[int, str], np.ndarray]:
    """Per layer and input kind, the largest |value| of each channel over the prompts."""
    maxima: dict[tuple[int, str], np.ndarray] = {}

    def observe(layer, name, x):
        m = np.abs(x).max(axis=0)
        key = (layer, name)
        maxima[key] = m if key not in maxima else np.maximum(maxima[key], m)

    for ids in prompts_ids:
        llama_reference.logits(weights, ids, observe)
    return maxima


def smooth(weights: LlamaWeights, prompts_ids: list[list[int]], alpha: float = ALPHA) -> None:
    """Rescales weights in place; the network's function is unchanged."""
    maxima = input_maxima(weights, prompts_ids)
    for i, layer in enumerate(weights.layers):
        for name, (readers, fold_into) in GROUPS.items():
            w_max = np.max([np.abs(layer[r]).max(axis=1) for r in readers], axis=0)  # per input row
            s = maxima[(i, name)] ** alpha / np.maximum(w_max, 1e-8) ** (1 - alpha)
            s = np.where(s > 0, s, 1.0)
            for r in readers:
                layer[r] = (layer[r] * s[:, None]).astype(np.float32)
            if fold_into == "up_proj":
                layer["up_proj"] = (layer["up_proj"] / s[None, :]).astype(np.float32)  # its output columns
            else:
                layer[fold_into] = (layer[fold_into] / s).astype(np.float32)
