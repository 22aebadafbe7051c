# SPDX-License-Identifier: Apache-2.0
"""Chats with an LLM through onnxruntime-genai on the onebit EP: genai's own generation loop, KV
cache and tokenizer, the EP running the quantized projections. Streams the reply, then prints
decode tokens/s (after the first token) and the EP's counter line (`onebit: group_runs=... groups=...`, on stderr at release).

usage: python genai_demo.py MODEL_DIR [--prompt TEXT] [--max-new-tokens 64] [--cpu] [--lib PATH]

MODEL_DIR is a genai model folder (genai_config.json beside the model), e.g. the one the project's
SmolLM2 builder writes: `python models/build_smollm2.py` prints the model folder; its
`genai-a8w8/` (or, built with `--weights int4`, `genai-int4/`) is MODEL_DIR.
Needs: pip install onnxruntime-ep-onebit onnxruntime-genai  (genai 0.10 or newer loads plugin EPs;
tested with 0.17.1 on onnxruntime 1.30).
`--cpu` runs ORT's CPU EP instead, for comparison."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import NoReturn

EP_NAME = "OnebitExecutionProvider"


def import_genai():
    """onnxruntime_genai, or SystemExit with what to install."""
    try:
        import onnxruntime_genai as og
    except ImportError as e:
        raise SystemExit(f"error: onnxruntime-genai is not installed ({e}): pip install onnxruntime-genai") from None
    if not hasattr(og, "register_execution_provider_library"):  # genai 0.10 added it
        raise SystemExit(
            f"error: onnxruntime-genai {og.__version__} cannot load plugin EPs; "
            f"this demo needs 0.10 or newer: pip install -U onnxruntime-genai"
        )
    return og


def fail(message: str) -> NoReturn:
    """Bad input: one line naming what is wrong, exit code 2 (argparse's code for a usage error)."""
    print(f"genai_demo.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def library_path(given: str | None) -> str:
    """--lib, else $ONEBIT_EP_LIB, else the installed wheel's library."""
    path = given or os.environ.get("ONEBIT_EP_LIB")
    if not path:
        try:
            import onnxruntime_ep_onebit
        except ImportError:
            fail("pass --lib PATH/libonebit_ep.so, or pip install onnxruntime-ep-onebit")
        path = onnxruntime_ep_onebit.get_library_path()
    if not os.path.isfile(path):
        fail(f"EP library not found: {path}")
    return os.path.abspath(path)


def check_model_dir(model_dir: str) -> None:
    """A folder with genai_config.json whose symbolic links all resolve: genai names neither."""
    if not os.path.isdir(model_dir):
        fail(f"MODEL_DIR {model_dir!r} is not a folder")
    if not os.path.isfile(os.path.join(model_dir, "genai_config.json")):
        fail(f"MODEL_DIR {model_dir!r} has no genai_config.json: pass a genai model folder (e.g. genai-a8w8/)")
    for entry in sorted(os.scandir(model_dir), key=lambda e: e.name):
        if entry.is_symlink() and not os.path.exists(entry.path):
            # The builder's folders link to the model folder's files (../model-a8w8.onnx ...).
            fail(
                f"{entry.path} is a symbolic link to {os.readlink(entry.path)}, which does not exist here: "
                f"copy the genai folder with `cp -rL`, or copy the whole model folder"
            )


def check_prompt(prompt: str) -> None:
    """Python decodes a non-UTF-8 argument to lone surrogates, which genai's tokenizer refuses."""
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as e:
        fail(f"--prompt is not valid UTF-8 (character {e.start}): pass UTF-8 text")


def decode_rate(tokens: int, first: float, done: float) -> str:
    """tokens/s of the model calls after the first token: genai's first generate_next_token only
    picks a token from the prompt's logits, so n tokens take n - 1 calls."""
    if tokens < 2:
        return "n/a (one token)"
    return f"{(tokens - 1) / (done - first):.1f} tokens/s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir")
    parser.add_argument("--prompt", default="Write a haiku about the sea.")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--cpu", action="store_true", help="ORT's CPU EP instead of the onebit EP")
    parser.add_argument("--lib", default=None, help="libonebit_ep.so (default: $ONEBIT_EP_LIB, else the wheel's)")
    args = parser.parse_args()
    if args.max_new_tokens < 1:
        fail(f"--max-new-tokens must be 1 or more, got {args.max_new_tokens}")
    check_prompt(args.prompt)
    check_model_dir(args.model_dir)
    og = import_genai()

    config = og.Config(args.model_dir)
    config.clear_providers()  # ORT's CPU EP, unless the EP is appended
    if not args.cpu:
        # genai's own call: it registers the library in genai's ORT environment (onnxruntime's
        # Python register_execution_provider_library registers in another one, unseen by genai).
        og.register_execution_provider_library("onebit", library_path(args.lib))
        config.append_provider(EP_NAME)
        config.set_provider_option(EP_NAME, "trace", "1")  # the counter line at session release
    model = og.Model(config)
    tokenizer = og.Tokenizer(model)
    prompt = tokenizer.apply_chat_template(
        json.dumps([{"role": "user", "content": args.prompt}]), add_generation_prompt=True
    )
    ids = tokenizer.encode(prompt)

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + args.max_new_tokens)  # greedy: genai_config.json's search
    generator = og.Generator(model, params)
    stream = tokenizer.create_stream()
    started = time.perf_counter()
    generator.append_tokens(ids)  # the prompt's model call
    prefilled = time.perf_counter()
    new_tokens = 0
    first = prefilled
    while not generator.is_done():
        generator.generate_next_token()
        new_tokens += 1
        if new_tokens == 1:
            first = time.perf_counter()
        print(stream.decode(generator.get_next_tokens()[0]), end="", flush=True)
    done = time.perf_counter()
    print()
    print(
        f"{'ORT CPU EP' if args.cpu else EP_NAME}: prompt {len(ids)} tokens in {(prefilled - started) * 1e3:.0f} ms, "
        f"{new_tokens} new tokens, decode {decode_rate(new_tokens, first, done)}",
        flush=True,
    )
    del generator, model  # releases the session: the EP prints its counters
    return 0


if __name__ == "__main__":
    sys.exit(main())
