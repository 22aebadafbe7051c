# SPDX-License-Identifier: Apache-2.0
"""tokenizer.json (the Hugging Face `tokenizers` format) from a GGUF file's tokenizer metadata.

The packaged model has a GPT-2-style byte-level BPE ('gpt2' in GGUF terms) with the 'smollm'
pre-tokenizer: every digit is its own piece, then GPT-2's split into words, numbers, punctuation
and spaces. Control tokens (<|im_start|>, <|im_end|>, ...) are special tokens matched whole.
Built with the `tokenizers` library, so the file is what that library (and tokenizers.js) reads.
"""

from __future__ import annotations

import json
import re

from gguf_llama import GgufError
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

CONTROL = 3  # GGUF token type of control (special) tokens
# Pre-tokenizers this writer knows, by GGUF's tokenizer.ggml.pre name.
PRE_TOKENIZERS = {
    "smollm": lambda: pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    ),
    "gpt2": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
}


def _field(reader, path: str, key: str):
    f = reader.fields.get(key)
    if f is None:
        raise GgufError(f"{path}: tokenizer metadata '{key}' is missing")
    return f.contents()


def build_tokenizer(reader, path: str) -> Tokenizer:
    kind = _field(reader, path, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise GgufError(f"{path}: tokenizer model '{kind}' is not supported (only 'gpt2', a byte-level BPE)")
    pre = _field(reader, path, "tokenizer.ggml.pre")
    if pre not in PRE_TOKENIZERS:
        raise GgufError(f"{path}: pre-tokenizer '{pre}' is not supported (known: {', '.join(PRE_TOKENIZERS)})")
    tokens = _field(reader, path, "tokenizer.ggml.tokens")
    types = _field(reader, path, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ")) for m in _field(reader, path, "tokenizer.ggml.merges")]
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    tokenizer.pre_tokenizer = PRE_TOKENIZERS[pre]()
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t, kind in zip(tokens, types) if kind == CONTROL]
    )
    return tokenizer


def chat_format(reader, path: str) -> dict:
    """The ChatML pieces of the GGUF chat template: {system, turn_start, turn_end, default_system}.
    The runner formats prompts with these (no template engine), so a template that is not ChatML
    is refused here rather than rendered wrongly later."""
    template = _field(reader, path, "tokenizer.chat_template")
    if "<|im_start|>" not in template or "<|im_end|>" not in template:
        raise GgufError(f"{path}: the chat template is not ChatML (<|im_start|> ... <|im_end|>)")
    default = re.search(r"<\|im_start\|>system\n(.*?)<\|im_end\|>", template, re.S)
    return {
        "template": template,
        "turn_start": "<|im_start|>",
        "turn_end": "<|im_end|>",
        "default_system": default.group(1) if default else None,
        "bos_token_id": int(_field(reader, path, "tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(_field(reader, path, "tokenizer.ggml.eos_token_id")),
    }


def chat_prompt(chat: dict, user: str) -> str:
    """A single user turn in ChatML, with the template's default system turn, ready for the reply."""
    s, e = chat["turn_start"], chat["turn_end"]
    system = f"{s}system\n{chat['default_system']}{e}\n" if chat["default_system"] else ""
    return f"{system}{s}user\n{user}{e}\n{s}assistant\n"


def write(reader, path: str, out_dir: str) -> tuple[Tokenizer, dict]:
    """Writes tokenizer.json and chat.json into out_dir."""
    tokenizer = build_tokenizer(reader, path)
    chat = chat_format(reader, path)
    tokenizer.save(f"{out_dir}/tokenizer.json")
    with open(f"{out_dir}/chat.json", "w") as f:
        json.dump(chat, f, indent=1)
    return tokenizer, chat
