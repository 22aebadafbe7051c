# SPDX-License-Identifier: Apache-2.0
"""An onnxruntime-genai model folder for one of the built models: genai_config.json, the tokenizer
files genai reads (tokenizer.json and tokenizer_config.json) and the model with its data file.

genai reads the decoder's input and output names from genai_config.json, so the same graph serves
both runners: no second export. The model, its data and tokenizer.json are relative symbolic links
to the model folder's files: no copy of the weights, and the folder moves as a whole. Not hard
links: onnx.load (1.23) refuses an external-data file with more than one link, which would have
broken loading the folder's own models; and genai refuses a config path with "..". The
KV cache is genai's past/present shared buffer: [1, kv_heads, max_length, head_dim] a cache input,
appended in place by GroupQueryAttention, the valid length read from attention_mask (as
llama_onnx.py's graph does for our own runner)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import llama_onnx
from gguf_llama import LlamaConfig

# Tokens a generator may hold (prompt + reply) unless the application sets search.max_length: genai
# allocates the whole KV cache for it up front (30 layers: 12 MB per 256 tokens).
MAX_LENGTH = 2048


def genai_config(config: LlamaConfig, chat: dict, model_file: str) -> dict:
    """genai_config.json: a llama decoder with this project's input and output names."""
    pattern = lambda kind, kv: llama_onnx.cache_name(kind, kv, "%d")  # noqa: E731
    return {
        "model": {
            "type": "llama",
            "bos_token_id": chat["bos_token_id"],
            "eos_token_id": [chat["eos_token_id"]],
            "pad_token_id": chat["eos_token_id"],
            "context_length": config.context,
            "vocab_size": config.vocab,
            "decoder": {
                "filename": model_file,
                # Empty: ORT's CPU EP unless the application appends a provider.
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "head_size": config.head_dim,
                "hidden_size": config.hidden,
                "num_attention_heads": config.heads,
                "num_hidden_layers": config.layers,
                "num_key_value_heads": config.kv_heads,
                "inputs": {
                    "input_ids": "input_ids",
                    "attention_mask": "attention_mask",
                    "past_key_names": pattern("past", "key"),
                    "past_value_names": pattern("past", "value"),
                },
                "outputs": {
                    "logits": "logits",
                    "present_key_names": pattern("present", "key"),
                    "present_value_names": pattern("present", "value"),
                },
            },
        },
        # Greedy unless the application asks for sampling; one sequence.
        "search": {
            "max_length": min(MAX_LENGTH, config.context),
            "past_present_share_buffer": True,
            "do_sample": False,
            "num_beams": 1,
            "num_return_sequences": 1,
            "top_k": 1,
            "top_p": 1.0,
            "temperature": 1.0,
            "repetition_penalty": 1.0,
            "min_length": 0,
        },
    }


def tokenizer_config(config: LlamaConfig, chat: dict, bos: str, eos: str) -> dict:
    """tokenizer_config.json: genai's tokenizer picks its byte-level BPE by tokenizer_class and reads
    the vocabulary, merges, pre-tokenizer and special tokens from tokenizer.json."""
    return {
        "tokenizer_class": "GPT2Tokenizer",
        "bos_token": bos,
        "eos_token": eos,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": config.context,
        "chat_template": chat["template"],
    }


def write(model_dir: str, name: str, model_file: str, config: LlamaConfig, chat: dict, tokenizer) -> None:
    """Writes <model_dir>/<name>/ for model_file (in model_dir) in a temporary folder beside it,
    renamed when complete: the folder exists only whole."""
    partial = tempfile.mkdtemp(prefix=f".{name}.partial-", dir=model_dir)
    try:
        for file in (model_file, f"{model_file}.data", "tokenizer.json"):
            os.symlink(os.path.join(os.pardir, file), os.path.join(partial, file))
        bos, eos = (tokenizer.id_to_token(chat[f"{t}_token_id"]) for t in ("bos", "eos"))
        files = {
            "genai_config.json": genai_config(config, chat, model_file),
            "tokenizer_config.json": tokenizer_config(config, chat, bos, eos),
        }
        for file, content in files.items():
            with open(os.path.join(partial, file), "w") as f:
                json.dump(content, f, indent=1)
        os.chmod(partial, 0o755)  # mkdtemp made it private
        final = os.path.join(model_dir, name)
        if os.path.exists(final):
            shutil.rmtree(final)
        os.rename(partial, final)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
