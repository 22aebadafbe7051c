# SPDX-License-Identifier: Apache-2.0
"""onnxruntime-genai runs the onebit EP on the builder's genai folders (2-layer SmolLM2, A8W8 and int4).

- genai's tokenizer gives the ids of tokenizer.json, and its chat template our ChatML prompt
  (test_smollm2.py checks the folders' files without genai);
- genai, with the EP registered by genai's own call and appended by name, generates with every
  projection on the EP (the EP's trace counters: one run per projection per model call);
- genai's greedy loop on the EP (its KV cache in shared past/present buffers, one token a call)
  gives, token by token, the logits of the EP on the whole sequence in one plain ORT session;
- the EP's logits under genai equal genai with ORT's CPU EP: the prompt's within the bounds below,
  the greedy token at every step. A8W8 against ORT with every optimisation off (DequantizeLinear +
  float MatMul: exact integer sums up to float rounding), int4 against ORT's MatMulNBits (the same
  W4A8 arithmetic). Greedy tokens equal ORT's optimised CPU EP where ORT's int8 kernel is exact on
  this CPU (ort_int8.py: AVX2-only CPUs saturate u8·s8 sums), and for int4;
- a bad provider option is genai's error naming it, and the process goes on;
- examples/genai_demo.py counts decode tokens/s over the calls after the first token, and turns bad
  input into one line naming it, exit code 2.
onnxruntime-genai missing or older than GENAI_MIN: the module is skipped, saying so.
"""

from __future__ import annotations

import gc
import json
import os
import pathlib
import re
import subprocess
import sys

import build_smollm2  # noqa: E402
import ep_session as es
import gguf_llama  # noqa: E402
import llama_onnx  # noqa: E402
import numpy as np
import onnxruntime as ort
import ort_int8
import pytest
import smollm2_folder
import tokenizer_json  # noqa: E402
from tokenizers import Tokenizer

GENAI_MIN = "0.17"  # the series tested here (requirements.txt pins 0.17.1, which takes onnxruntime 1.30)
og = pytest.importorskip(
    "onnxruntime_genai",
    minversion=GENAI_MIN,
    reason=f"onnxruntime-genai >= {GENAI_MIN} is not installed (test/python/requirements.txt)",
)

# "What is 12+30?" as a chat turn, tokenized by the tokenizers library: the generation checks do not
# depend on genai's tokenizer (checked on its own).
PROMPT = "<|im_start|>user\nWhat is 12+30?<|im_end|>\n<|im_start|>assistant\n"
NEW_TOKENS = 12
WEIGHTS = sorted(build_smollm2.GENAI_FOLDERS)
DEMO = pathlib.Path(__file__).resolve().parent.parent.parent / "examples" / "genai_demo.py"
# The prompt's logits, EP against ORT's CPU EP: largest |difference| / largest |logit|. A8W8:
# test_smollm2.py's bound against the exact reference. int4: both quantize activations per block
# of 32, so a float-rounding difference in one layer can move a value by one int8 step in the next
# (measured up to 4.4e-3 over 12 greedy steps, AVX2).
BOUND = {"a8w8": 1e-3, "int4": 1e-2}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return smollm2_folder.build(tmp_path_factory)


@pytest.fixture(scope="module")
def genai_ep():
    """The EP library registered with genai (its own ORT environment, not onnxruntime's Python one)."""
    og.register_execution_provider_library("onebit", es.ep_lib_path())
    yield
    gc.collect()  # genai's models hold sessions of the library
    og.unregister_execution_provider_library("onebit")


def folder(built, weights):
    out, manifest = built
    return out / manifest["genai"][weights]


def model(path, provider=None, options=None, overlay=None):
    config = og.Config(str(path))
    if overlay:
        config.overlay(json.dumps(overlay))
    config.clear_providers()
    if provider:
        config.append_provider(provider)
        for key, value in (options or {}).items():
            config.set_provider_option(provider, key, value)
    return og.Model(config)


def prompt_ids(path):
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    return tokenizer.encode(PROMPT).ids


def greedy(m, ids):
    """genai's own loop: NEW_TOKENS new tokens (no end-of-turn stop before)."""
    params = og.GeneratorParams(m)
    params.set_search_options(min_length=len(ids) + NEW_TOKENS, max_length=len(ids) + NEW_TOKENS)
    generator = og.Generator(m, params)
    generator.append_tokens(ids)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens


def logits_along(m, ids, tokens):
    """The next-token logits after ids, then after each of tokens appended one at a time."""
    params = og.GeneratorParams(m)
    params.set_search_options(max_length=len(ids) + len(tokens) + 1)
    generator = og.Generator(m, params)
    generator.append_tokens(ids)
    rows = [generator.get_logits()[0].copy()]
    for token in tokens:
        generator.append_tokens([token])
        rows.append(generator.get_logits()[0].copy())
    return np.stack(rows)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_genai_tokenizer_gives_the_ids_of_tokenizer_json(built, weights):
    path = folder(built, weights)
    tokenizer = og.Tokenizer(model(path))
    text = PROMPT + "Grüße, 東京! 1234 ümlaut\tdone"
    expected = Tokenizer.from_file(str(path / "tokenizer.json")).encode(text).ids
    assert list(tokenizer.encode(text)) == expected
    # genai's decode leaves the special tokens out, as tokenizers' does by default.
    assert tokenizer.decode(expected) == Tokenizer.from_file(str(path / "tokenizer.json")).decode(expected)
    chat = json.loads((built[0] / built[1]["chat"]).read_text())
    messages = json.dumps([{"role": "user", "content": "Grüße, 東京!"}])
    assert tokenizer.apply_chat_template(messages, add_generation_prompt=True) == tokenizer_json.chat_prompt(
        chat, "Grüße, 東京!"
    )


@pytest.mark.parametrize("weights", WEIGHTS)
def test_genai_runs_every_projection_on_the_ep(built, genai_ep, weights):
    out, manifest = built
    path = folder(built, weights)
    ids = prompt_ids(path)
    with es.captured_stderr() as err:
        m = model(path, es.EP_NAME, {"trace": "1"})
        tokens = greedy(m, ids)
        del m
        gc.collect()
    (counters,) = es.parse_trace(err["text"])
    assert len(tokens) == NEW_TOKENS
    assert counters["groups"] == manifest["projections"]
    # One prefill, then one call per new token but the last.
    assert counters["group_runs"] == NEW_TOKENS * manifest["projections"]
    assert counters["attention_runs"] == NEW_TOKENS * manifest["config"]["layers"]
    assert counters["gate_runs"] == NEW_TOKENS * manifest["config"]["layers"]
    assert counters["norm_runs"] == NEW_TOKENS * 2 * manifest["config"]["layers"]


@pytest.mark.parametrize("weights", WEIGHTS)
def test_genai_decode_equals_the_ep_on_the_whole_sequence(built, genai_ep, ep_lib, weights):
    out, manifest = built
    path = folder(built, weights)
    ids = prompt_ids(path)
    m = model(path, es.EP_NAME)
    tokens = greedy(m, ids)
    ours = logits_along(m, ids, tokens[:-1])[:, 0]
    assert list(ours.argmax(-1)) == tokens  # genai's loop is greedy over these logits
    options = es._session_options()
    options.add_provider_for_devices(es.ep_devices(), {})
    decoder = json.loads((path / "genai_config.json").read_text())["model"]["decoder"]
    session = ort.InferenceSession(str(path / decoder["filename"]), sess_options=options, enable_fallback=0)
    config = gguf_llama.LlamaConfig(**manifest["config"])
    whole = session.run(["logits"], llama_onnx.decoder_feeds(config, ids + tokens[:-1]))[0][0, len(ids) - 1 :]
    # test_smollm2.py's bound for a decode step against the full recompute.
    np.testing.assert_allclose(ours, whole, atol=2e-5 * np.abs(whole).max(), rtol=0)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_genai_ep_logits_equal_ort_cpu(built, genai_ep, weights, monkeypatch):
    """The prompt's logits within BOUND, the greedy token at every step. (Over the decode steps one
    A8W8 activation can round the other way, exact integer sums against float ones, and move that
    step's logits by ~1 %: the test above checks the steps against the EP on the whole sequence.)
    For A8W8 the EP leaves attention to ORT here: its attention output differs from ORT's by float
    rounding (1e-6, test_group_query_attention.py), and a static uint8 quantization of it can then
    round the other way too (on the full model, a 24-token prompt: layer 8, logits moved by 2.8 of
    29); this test is about the quantized MatMuls."""
    if weights == "a8w8":
        monkeypatch.setenv("ONEBIT_ATTENTION", "ort")
    path = folder(built, weights)
    ids = prompt_ids(path)
    m = model(path, es.EP_NAME)
    tokens = greedy(m, ids)
    ours = logits_along(m, ids, tokens[:-1])[:, 0]
    overlay = {"model": {"decoder": {"session_options": {"graph_optimization_level": "ORT_DISABLE_ALL"}}}}
    theirs = logits_along(model(path, overlay=overlay if weights == "a8w8" else None), ids, tokens[:-1])[:, 0]
    np.testing.assert_allclose(ours[0], theirs[0], atol=BOUND[weights] * np.abs(theirs[0]).max(), rtol=0)
    assert list(theirs.argmax(-1)) == tokens


@pytest.mark.parametrize("weights", WEIGHTS)
def test_genai_greedy_tokens_equal_ort_cpu(built, genai_ep, weights):
    if weights == "a8w8" and ort_int8.ort_u8s8_saturates():
        pytest.skip(
            "ORT's uint8 x int8 kernel saturates on this CPU (AVX2 without VNNI): its greedy tokens "
            "are not the exact model's; test_genai_ep_logits_equal_ort_cpu checks the EP"
        )
    path = folder(built, weights)
    ids = prompt_ids(path)
    assert greedy(model(path, es.EP_NAME), ids) == greedy(model(path), ids)


def test_bad_provider_option_is_genais_error(built, genai_ep):
    path = folder(built, "a8w8")
    with pytest.raises(RuntimeError, match="onebit: unknown option 'no_such_option'"):
        model(path, es.EP_NAME, {"no_such_option": "1"})
    with pytest.raises(RuntimeError, match="onebit: option trace='maybe' is invalid"):
        model(path, es.EP_NAME, {"trace": "maybe"})
    assert len(greedy(model(path, es.EP_NAME), prompt_ids(path))) == NEW_TOKENS  # the process goes on


def run_demo(*args):
    return subprocess.run(
        [sys.executable, str(DEMO), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ONEBIT_EP_LIB": es.ep_lib_path()},
    )


# genai's first generate_next_token only picks a token from the prompt's logits: one token has no
# decode rate, and three tokens are timed over the two calls after the first.
@pytest.mark.parametrize(
    "new_tokens,rate",
    [("1", r"decode n/a \(one token\)"), ("3", r"decode \d+\.\d tokens/s")],
)
def test_demo_decode_rate_counts_the_calls_after_the_first_token(built, new_tokens, rate):
    demo = run_demo(str(folder(built, "a8w8")), "--max-new-tokens", new_tokens)
    assert demo.returncode == 0, demo.stderr
    summary = demo.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"{es.EP_NAME}: prompt \d+ tokens in \d+ ms, {new_tokens} new tokens, {rate}", summary)


def run_demo_badly(*args):
    """The demo with bad input: its stderr, which must be one line, and exit code 2."""
    demo = subprocess.run([sys.executable, str(DEMO), *args], capture_output=True, timeout=60)
    assert demo.returncode == 2, demo.stderr
    return demo.stderr.decode()


@pytest.mark.parametrize(
    "args,error",
    [
        (["{tmp}", "--max-new-tokens", "0"], "--max-new-tokens must be 1 or more, got 0"),
        (["{tmp}", "--max-new-tokens", "-3"], "--max-new-tokens must be 1 or more, got -3"),
        (["{tmp}/missing"], "MODEL_DIR '{tmp}/missing' is not a folder"),
        (["{tmp}"], "MODEL_DIR '{tmp}' has no genai_config.json: pass a genai model folder (e.g. genai-a8w8/)"),
    ],
)
def test_demo_bad_argument_is_one_line_naming_it(tmp_path, args, error):
    stderr = run_demo_badly(*(a.format(tmp=tmp_path) for a in args))
    assert stderr == f"genai_demo.py: error: {error.format(tmp=tmp_path)}\n"


def test_demo_non_utf8_prompt_is_one_line_naming_it(tmp_path):
    stderr = run_demo_badly(str(tmp_path), "--prompt", b"caf\xe9 \xff")  # latin-1 bytes, as a shell may pass
    assert stderr == "genai_demo.py: error: --prompt is not valid UTF-8 (character 3): pass UTF-8 text\n"


def test_demo_folder_with_a_broken_link_names_the_link(tmp_path):
    copy = tmp_path / "copied"  # the builder's genai-a8w8/ copied by cp -r: its links point nowhere
    copy.mkdir()
    (copy / "genai_config.json").write_text("{}")
    (copy / "model-a8w8.onnx").symlink_to("../model-a8w8.onnx")
    assert run_demo_badly(str(copy)) == (
        f"genai_demo.py: error: {copy}/model-a8w8.onnx is a symbolic link to ../model-a8w8.onnx, which does not "
        f"exist here: copy the genai folder with `cp -rL`, or copy the whole model folder\n"
    )


def test_the_library_under_a_second_name_is_the_same_ep(built, genai_ep):
    """genai appends every device of the EP's name: with the library registered twice they must be
    one factory's, or ORT refuses the session (docs/genai.md)."""
    path = folder(built, "a8w8")
    ids = prompt_ids(path)
    expected = greedy(model(path, es.EP_NAME), ids)
    og.register_execution_provider_library("onebit_again", es.ep_lib_path())
    try:
        assert greedy(model(path, es.EP_NAME), ids) == expected
    finally:
        gc.collect()
        og.unregister_execution_provider_library("onebit_again")
