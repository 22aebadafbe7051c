# SPDX-License-Identifier: Apache-2.0
"""SmolLM2 decode tokens/s under onnxruntime-genai: genai with the onebit EP against genai with ORT's
CPU EP on the same model (the A8W8 and the int4 genai folders the builder writes), and our own
`onebit-run` loop (its arms on the same models) and, with --llama-cpp, llama.cpp on the Q4_1 GGUF
these models come from; every arm once a round, rounds interleaved.

usage: python bench/genai_decode.py [--rounds 5] [--tokens 64] [--prompt-tokens 64] [--threads 1]
                                    [--layers N] [--no-onebit-run] [--llama-cpp] [--lib PATH] [--warmup 0]

Prints one JSON line a measurement, then median and min-max per arm, and the EP int4's ratios to
llama.cpp, ORT int4 and the EP's A8W8 within each round (median and min-max over the rounds). Decode tokens/s: genai's
first generate_next_token only picks from the prompt's logits, so the decode time runs from it to
the last token and counts tokens - 1 model calls; a minimum length keeps every arm to --tokens.
The prompt is --prompt-tokens tokens, the chat template around the start of the evaluation text,
as onebit-run's --prompt-tokens builds it. Needs onnxruntime-genai, the EP library (--lib, else
$ONEBIT_EP_LIB, else build/native/libonebit_ep.so), for the onebit-run arms `npm run build:ts`, and
for llama.cpp's `npm ci --prefix bench/llama_cpp` (its prompt: as many tokens from the start of the
evaluation text, decode.mjs --prompt-file --prompt-tokens, as bench/llm_decode.mjs gives it).
--warmup N times each arm's generation after N untimed ones with the same model (genai: the same
og.Model; onebit-run --warmup N; llama.cpp's last of N + 1 rounds), as bench/llm_decode.mjs does.
Builds the model folder first if needed (with the int4 model)."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import onnxruntime_genai as og
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "models"))
import build_smollm2  # noqa: E402
import gguf_llama  # noqa: E402
import tokenizer_json  # noqa: E402

EP_NAME = "OnebitExecutionProvider"
# The EP's int4 decode over these, round by round (arms minutes apart drift less than whole runs do);
# pairs whose arms a run leaves out are skipped.
PAIRED = [
    ("genai onebit EP:int4", "llama.cpp:q4_1"),
    ("genai onebit EP:int4", "genai ORT CPU EP:int4"),
    ("genai onebit EP:int4", "genai onebit EP:a8w8"),
    ("onebit-run onebit:int4", "llama.cpp:q4_1"),
]


def prompt_ids(folder: pathlib.Path, manifest: dict, count: int) -> list[int]:
    """count tokens: the chat template around the start of the evaluation text."""
    tokenizer = Tokenizer.from_file(str(folder / manifest["tokenizer"]))
    chat = json.loads((folder / manifest["chat"]).read_text())
    head, tail = (tokenizer.encode(part).ids for part in tokenizer_json.chat_prompt(chat, "\0").split("\0"))
    text = (folder / manifest["evaluation_text"]).read_text()
    user = tokenizer.encode(text).ids
    while len(user) < count:
        user += user
    return head + user[: count - len(head) - len(tail)] + tail


def genai_decode(path: pathlib.Path, ep: bool, ids: list[int], tokens: int, threads: int, warmup: int) -> dict:
    config = og.Config(str(path))
    config.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": threads}}}}))
    config.clear_providers()
    if ep:
        config.append_provider(EP_NAME)
    model = og.Model(config)
    for _ in range(warmup):
        generate(model, ids, tokens)
    return generate(model, ids, tokens)


def generate(model: og.Model, ids: list[int], tokens: int) -> dict:
    params = og.GeneratorParams(model)
    params.set_search_options(min_length=len(ids) + tokens, max_length=len(ids) + tokens)
    generator = og.Generator(model, params)
    started = time.perf_counter()
    generator.append_tokens(ids)
    generator.generate_next_token()  # picks the first token from the prompt's logits
    first = time.perf_counter()
    steps = 0
    while not generator.is_done():
        generator.generate_next_token()
        steps += 1
    done = time.perf_counter()
    return {"decode": steps / (done - first), "prefill_ms": (first - started) * 1e3, "steps": steps}


def onebit_run(weights: str, args) -> list[dict]:
    """onebit-run's own arms (JSON report) on the same model and prompt length."""
    command = [
        "npm",
        "run",
        "--silent",
        "onebit-run",
        "--",
        "--weights",
        weights,
        "--threads",
        str(args.threads),
        "--prompt-tokens",
        str(args.prompt_tokens),
        "--max-tokens",
        str(args.tokens),
        "--warmup",
        str(args.warmup),
        "--json",
    ]
    if args.layers:
        command += ["--layers", str(args.layers)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"genai_decode: {' '.join(command)} failed:\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return [
        {
            "arm": f"onebit-run {a['arm']}:{weights}",
            "decode": a["decodeTokensPerS"],
            "prefill_ms": a["prefillMs"],
            "steps": a["decodeSteps"],
        }
        for a in report["arms"]
    ]


def llama_cpp(folder: pathlib.Path, manifest: dict, args) -> dict:
    """llama.cpp's decode of args.tokens tokens (bench/llama_cpp/decode.mjs: the last of args.warmup + 1 rounds)."""
    prompt_file = str(folder / manifest["evaluation_text"])
    command = ["node", str(ROOT / "bench/llama_cpp/decode.mjs"), "--gguf", gguf_llama.packaged_gguf_path()]
    command += ["--threads", str(args.threads), "--tokens", str(args.tokens), "--rounds", str(args.warmup + 1)]
    command += ["--prompt-file", prompt_file, "--prompt-tokens", str(args.prompt_tokens)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(
            f"genai_decode: llama.cpp's arm failed (npm ci --prefix bench/llama_cpp?):\n{done.stderr[-2000:]}"
        )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"decode": result["decode_tok_s"], "prefill_ms": None, "steps": result["decode_tokens"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--layers", type=int, default=None, help="a model cut to N layers (a quick check)")
    parser.add_argument("--no-onebit-run", action="store_true", help="leave out onebit-run's arms")
    parser.add_argument("--llama-cpp", action="store_true", help="add llama.cpp on the Q4_1 GGUF")
    parser.add_argument("--lib", default=os.environ.get("ONEBIT_EP_LIB", str(ROOT / "build/native/libonebit_ep.so")))
    parser.add_argument("--warmup", type=int, default=0, help="untimed generations before each timed one")
    args = parser.parse_args()
    if args.warmup < 0:
        parser.error(f"--warmup takes a count >= 0, got {args.warmup}")

    log = lambda text: print(f"genai_decode: {text}", file=sys.stderr, flush=True)  # noqa: E731
    folder = pathlib.Path(
        build_smollm2.build_cached(build_smollm2.default_cache_dir(), layers=args.layers, log=log, weights="int4")
    )
    manifest = json.loads((folder / build_smollm2.MANIFEST).read_text())
    ids = prompt_ids(folder, manifest, args.prompt_tokens)
    og.register_execution_provider_library("onebit", os.path.abspath(args.lib))
    print(
        f"# onnxruntime-genai {og.__version__}, {args.threads} thread(s), prompt {len(ids)} tokens, "
        f"{args.tokens} new tokens, {args.warmup} untimed generation(s) before each timed one, {folder.name}",
        flush=True,
    )

    arms = [
        (
            f"genai {'onebit EP' if ep else 'ORT CPU EP'}:{weights}",
            lambda weights=weights, ep=ep: genai_decode(
                folder / manifest["genai"][weights], ep, ids, args.tokens, args.threads, args.warmup
            ),
        )
        for weights in ("a8w8", "int4")
        for ep in (True, False)
    ]
    if args.llama_cpp:
        arms.append(("llama.cpp:q4_1", lambda: llama_cpp(folder, manifest, args)))
    runs = [("onebit-run", lambda weights=weights: onebit_run(weights, args)) for weights in ("a8w8", "int4")]
    seen: dict[str, list[float]] = {}
    paired: dict[tuple[str, str], list[float]] = {}
    for round_ in range(1, args.rounds + 1):
        this_round: dict[str, float] = {}
        for name, measure in arms + ([] if args.no_onebit_run else runs):
            results = measure()
            for result in results if isinstance(results, list) else [dict(results, arm=name)]:
                print(json.dumps({"round": round_, **result}), flush=True)
                seen.setdefault(result["arm"], []).append(result["decode"])
                this_round[result["arm"]] = result["decode"]
        for pair in PAIRED:
            if all(arm in this_round for arm in pair):
                paired.setdefault(pair, []).append(this_round[pair[0]] / this_round[pair[1]])
    for arm, values in seen.items():
        print(
            f"{arm:34s} decode tok/s median {statistics.median(values):7.1f}  "
            f"({min(values):.1f}-{max(values):.1f}, {len(values)} runs)"
        )
    for (arm, other), ratios in paired.items():
        print(
            f"{arm} / {other}: per round median {statistics.median(ratios):.2f}  "
            f"({min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} rounds)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
