# SPDX-License-Identifier: Apache-2.0
"""The SmolLM2 builder (models/) on a 2-layer model cut from the packaged GGUF file.

- the fp32 ONNX decoder (its weights smoothed) equals the numpy reference (llama_reference.py,
  float64) of the GGUF weights as read, on new tokens; smoothing narrows each activation's range;
- every quantized projection (7 a layer + lm_head) runs on the onebit EP (trace counters, and no
  constant-weight MatMul left on ORT's CPU EP), in the QDQ model with uint8 activations and in the
  one with int8 activations (asymmetric: quantize_static's int8 has zero points);
- the EP's logits on either QDQ model equal ORT's CPU EP with every optimisation off (each group
  DequantizeLinear + float MatMul) up to float rounding;
- decoding one token with the KV cache gives the last token's logits of a full-sequence recompute;
  with the cache in shared past/present buffers (GroupQueryAttention appending in place), the same
  logits and cache rows as with a copied cache;
- the onnxruntime-genai folders name the decoder's real inputs and outputs and link the folder's
  files; a folder built before them gets them (test_genai.py runs them under genai);
- tokenizer.json round-trips multilingual text and special tokens, with the ids the GGUF vocabulary
  defines for the control tokens;
- bad GGUF input (missing, corrupt, another architecture, an unsupported tensor type) is a clear
  error and leaves nothing in the cache.
"""

from __future__ import annotations

import gc
import json
import os
import pathlib
import subprocess
import sys

import ep_session as es
import gguf
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import smollm2_folder
from onnx import numpy_helper
from smollm2_folder import LAYERS, builder_env

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "models"))
import build_smollm2  # noqa: E402
import gguf_llama  # noqa: E402
import llama_onnx  # noqa: E402
import llama_reference  # noqa: E402
import smooth_activations  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

# Token ids of a short chat prompt with a multilingual user turn (fixed, so the test does not
# depend on the tokenizer it also checks).
IDS = [1, 4093, 198, 19556, 28, 905, 17, 216, 33, 34, 9171, 7170, 34878, 85, 28, 17097, 2, 198]
ACTIVATIONS = sorted(build_smollm2.QDQ_MODELS)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(model folder, manifest, fp32 weights) of the 2-layer model (smollm2_folder.py), built once
    for the module."""
    out, manifest = smollm2_folder.build(tmp_path_factory)
    path = gguf_llama.packaged_gguf_path()
    return out, manifest, gguf_llama.read_llama(gguf_llama.open_gguf(path), path, LAYERS)


def run(session, config, ids, past=None):
    """logits [seq, vocab] and the present cache as the next call's past."""
    out = session.run(None, llama_onnx.decoder_feeds(config, ids, past))
    return out[0][0], dict(zip(llama_onnx.cache_names(config, "past"), out[1:]))


def ep_session(model_path):
    so = es._session_options()
    so.add_provider_for_devices(es.ep_devices(), {"trace": "1"})
    return ort.InferenceSession(str(model_path), sess_options=so, enable_fallback=0)


@pytest.mark.builder
def test_fp32_decoder_equals_numpy_reference(built):
    out, manifest, weights = built
    assert manifest["reference_check"]["max_relative_diff"] <= build_smollm2.REFERENCE_TOLERANCE
    cpu = ort.InferenceSession(str(out / manifest["fp32_model"]), providers=["CPUExecutionProvider"])
    logits, _ = run(cpu, weights.config, IDS)
    reference = llama_reference.logits(weights, IDS)
    assert logits.shape == (len(IDS), weights.config.vocab)
    np.testing.assert_allclose(logits, reference, atol=1e-4 * np.abs(reference).max(), rtol=0)
    assert (logits.argmax(-1) == reference.argmax(-1)).all()


@pytest.mark.builder
def test_smoothing_narrows_the_activation_ranges(built):
    _, _, weights = built
    prompts = [IDS, IDS[:7]]
    before = smooth_activations.input_maxima(weights, prompts)
    smoothed = gguf_llama.LlamaWeights(
        weights.config, weights.embedding, weights.final_norm, [dict(layer) for layer in weights.layers]
    )
    smooth_activations.smooth(smoothed, prompts)
    after = smooth_activations.input_maxima(smoothed, prompts)
    spread = lambda m: m.max() / np.median(m)  # noqa: E731 - the largest channel against a typical one
    for key in before:
        assert spread(after[key]) < spread(before[key]), key
    # Equal up to the float32 rounding of the rescaled weights.
    np.testing.assert_allclose(
        llama_reference.logits(smoothed, IDS), llama_reference.logits(weights, IDS), rtol=0, atol=1e-4
    )


def qdq_model(out, manifest, activations):
    return out / manifest["qdq_models"][activations]


@pytest.mark.parametrize("activations", ACTIVATIONS)
def test_every_projection_runs_on_the_ep(built, ep_lib, activations):
    out, manifest, weights = built
    assert manifest["projections"] == 7 * LAYERS + 1  # q k v o gate up down per layer, and lm_head
    with es.captured_stderr() as err:
        session = ep_session(qdq_model(out, manifest, activations))
        assignment, fused = es._assignment(session), es.fused_nodes(session)
        run(session, weights.config, IDS[:5])
        run(session, weights.config, IDS[:1])
        del session
        gc.collect()
    counters = es.parse_trace(err["text"])[0]
    assert counters["groups"] == manifest["projections"]
    assert counters["group_runs"] == 2 * manifest["projections"]
    assert counters["attention_runs"] == 2 * LAYERS
    assert counters["gate_runs"] == 2 * LAYERS  # each layer's SwiGLU, with its gate/up projections
    # Each layer's two SkipSimplifiedLayerNormalizations (the first layer's input norm is the plain
    # one ORT keeps; the final norm joins the output projection): 2 a layer, in each of 2 passes,
    # where the projections take the norm's output through their own QuantizeLinear (uint8).
    assert counters["norm_runs"] == (2 * 2 * LAYERS if activations == "uint8" else 0)
    # Siblings fuse: q/k/v, o, gate/up, down and the attention per layer, and lm_head.
    assert fused == 5 * LAYERS + 1
    ours = {name for name, op in assignment[es.EP_NAME] if op == "MatMul"}
    assert ours == set(llama_onnx.projection_nodes(weights.config))
    # With uint8 activations every activation QuantizeLinear runs on the EP: in its group (o, down,
    # lm_head), or in the fused node of the siblings sharing it (q/k/v, gate/up). int8 ones stay with ORT.
    quantize_on_ep = sum(op == "QuantizeLinear" for _, op in assignment[es.EP_NAME])
    assert quantize_on_ep == (4 * LAYERS + 1 if activations == "uint8" else 0)
    if activations == "uint8":
        assert [n for n, op in assignment["CPUExecutionProvider"] if op == "QuantizeLinear"] == []
    # What stays on ORT: no MatMul and no attention (each layer's float GroupQueryAttention node,
    # its activation x activation products included, runs on the EP: ep/attention_kernel.h).
    left = [
        (name, op) for name, op in assignment["CPUExecutionProvider"] if op in ("MatMul", "Gemm", "GroupQueryAttention")
    ]
    assert left == []
    attention = sorted(name for name, op in assignment[es.EP_NAME] if op == "GroupQueryAttention")
    assert attention == [f"layers.{i}.attention" for i in range(LAYERS)]


@pytest.mark.builder
def test_int4_model_is_what_genai_builds_for_cpu(built):
    """One MatMulNBits per projection, 4 bits in blocks of 32, symmetric (no zero points),
    accuracy_level 4; each weight read back from its blob (low nibble first, 8 subtracted) times its
    block's scale is the fp32 weight within one quantization step."""
    out, manifest, _ = built
    model = onnx.load(str(out / manifest["int4_model"]))
    fp32 = onnx.load(str(out / manifest["fp32_model"]))
    initializers = {i.name: numpy_helper.to_array(i) for g in (model, fp32) for i in g.graph.initializer}
    nodes = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    projection = lambda node: node.name.removesuffix("_Q4")  # noqa: E731 - the quantizer's renaming
    assert sorted(projection(n) for n in nodes) == sorted(
        llama_onnx.projection_nodes(gguf_llama.LlamaConfig(**manifest["config"]))
    )
    for node in nodes:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert (attrs["bits"], attrs["block_size"], attrs["accuracy_level"]) == (4, 32, 4), node.name
        assert len(node.input) == 3, node.name  # A, B, scales: symmetric
        K, N = attrs["K"], attrs["N"]
        blob, scales = initializers[node.input[1]], initializers[node.input[2]].reshape(N, -1)
        nibbles = np.stack([blob & 0xF, blob >> 4], axis=-1).reshape(N, -1)[:, :K].astype(np.float32) - 8
        weight = nibbles * np.repeat(scales, 32, axis=1)[:, :K]
        original = initializers[f"{projection(node)}.weight"].T
        step = np.repeat(np.abs(scales), 32, axis=1)[:, :K]
        assert (np.abs(weight - original) <= step * 1.0001).all(), node.name


@pytest.mark.builder
@pytest.mark.parametrize("weights", sorted(build_smollm2.GENAI_FOLDERS))
def test_genai_folder_names_the_decoder_and_links_its_files(built, weights):
    out, manifest, _ = built
    path = out / manifest["genai"][weights]
    config = json.loads((path / "genai_config.json").read_text())["model"]
    decoder = config["decoder"]
    graph = onnx.load(str(path / decoder["filename"]), load_external_data=False).graph
    layers = range(decoder["num_hidden_layers"])
    inputs, outputs = decoder["inputs"], decoder["outputs"]
    assert [i.name for i in graph.input] == [inputs["input_ids"], inputs["attention_mask"]] + [
        inputs[f"past_{kv}_names"] % i for i in layers for kv in ("key", "value")
    ]
    assert [o.name for o in graph.output] == [outputs["logits"]] + [
        outputs[f"present_{kv}_names"] % i for i in layers for kv in ("key", "value")
    ]
    assert decoder["num_hidden_layers"] == manifest["config"]["layers"]
    model_file = manifest["int4_model"] if weights == "int4" else manifest["qdq_models"]["uint8"]
    for name in (model_file, f"{model_file}.data", "tokenizer.json"):
        assert (path / name).readlink() == pathlib.Path("..", name), name  # links, not copies
    chat = json.loads((out / "chat.json").read_text())
    assert config["eos_token_id"] == [chat["eos_token_id"]]


@pytest.mark.builder
def test_a_folder_built_before_genai_folders_gets_them(built, tmp_path):
    """The builder version did not change with the genai folders: a folder without them gets them
    on the next run, and only them."""
    out, manifest, _ = built
    folder = tmp_path / "old"
    folder.mkdir()
    model = manifest["qdq_models"]["uint8"]
    for name in (manifest["tokenizer"], manifest["chat"], model, f"{model}.data"):
        os.link(out / name, folder / name)
    old = {k: v for k, v in manifest.items() if k != "genai"}
    (folder / build_smollm2.MANIFEST).write_text(json.dumps(old))
    before = listing(folder)
    build_smollm2.add_genai(str(folder), "a8w8", log=lambda _: None)
    assert listing(folder) == sorted(before + ["genai-a8w8"])
    assert json.loads((folder / build_smollm2.MANIFEST).read_text()) == dict(old, genai={"a8w8": "genai-a8w8"})
    for name in ("genai_config.json", "tokenizer_config.json"):
        assert (folder / "genai-a8w8" / name).read_text() == (out / "genai-a8w8" / name).read_text()


@pytest.mark.builder
def test_activation_types(built):
    """Every activation QuantizeLinear has the variant's type; int8 ones are asymmetric (zero points
    other than 0), as quantize_static makes them by default."""
    out, manifest, _ = built
    for activations, dtype in (("uint8", np.uint8), ("int8", np.int8)):
        graph = onnx.load(str(qdq_model(out, manifest, activations)), load_external_data=False).graph
        initializers = {i.name: i for i in graph.initializer}  # the weights stay in their data file
        zero_points = [
            numpy_helper.to_array(initializers[n.input[2]]) for n in graph.node if n.op_type == "QuantizeLinear"
        ]
        assert len(zero_points) == 4 * LAYERS + 1  # q/k/v, o, gate/up, down inputs per layer; lm_head's
        assert all(z.dtype == dtype for z in zero_points), activations
        assert any(z != 0 for z in zero_points), activations  # asymmetric, int8 included


def uint8_only_copy(built, cache_dir: pathlib.Path, fp32_data: bytes | None = None) -> pathlib.Path:
    """A copy of the built folder as the builder first makes it (the uint8 QDQ model left out:
    adding the int8 one does not read it), in cache_dir; fp32_data replaces the fp32 weights."""
    out, manifest, _ = built
    folder = cache_dir / build_smollm2.model_dir_name(LAYERS)
    folder.mkdir(parents=True)
    (folder / build_smollm2.MANIFEST).write_text(
        json.dumps(dict(manifest, qdq_models={"uint8": manifest["qdq_models"]["uint8"]}))
    )
    fp32 = manifest["fp32_model"]
    for name in (manifest["tokenizer"], manifest["chat"], fp32, f"{fp32}.data"):
        (folder / name).write_bytes((out / name).read_bytes())
    if fp32_data is not None:
        (folder / f"{fp32}.data").write_bytes(fp32_data)
    return folder


def listing(folder: pathlib.Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.builder
def test_a_failed_addition_leaves_the_folder_as_it_was(built, tmp_path):
    """quantize_static's shape-inferred copy of the fp32 model, written beside it, goes too."""
    folder = uint8_only_copy(built, tmp_path, fp32_data=b"")  # weights missing: quantization fails
    before = listing(folder)
    manifest = (folder / build_smollm2.MANIFEST).read_text()
    with pytest.raises(Exception):
        build_smollm2.add_model(str(folder), "int8", log=lambda _: None)
    assert listing(folder) == before
    assert (folder / build_smollm2.MANIFEST).read_text() == manifest


@pytest.mark.builder
def test_builders_adding_the_same_model_at_once_take_turns(built, tmp_path):
    """Two builders asked for int8 activations at once (two onebit-run processes): both succeed
    and the model is made once (they raced on quantize_static's shape-inferred file: one unlinked
    the other's, FileNotFoundError)."""
    folder = uint8_only_copy(built, tmp_path)
    before = listing(folder)
    script = pathlib.Path(build_smollm2.__file__)
    command = [
        sys.executable,
        str(script),
        "--cache-dir",
        str(tmp_path),
        "--layers",
        str(LAYERS),
        "--activations",
        "int8",
    ]
    builders = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=builder_env())
        for _ in range(2)
    ]
    outcomes = [(b.wait(timeout=600), b.stdout.read(), b.stderr.read()) for b in builders]
    for status, stdout, stderr in outcomes:
        assert status == 0, stderr[-2000:]
        assert stdout.strip().splitlines()[-1] == str(folder)
    assert sum("quantizing" in stderr for _, _, stderr in outcomes) == 1
    name = build_smollm2.QDQ_MODELS["int8"]
    assert listing(folder) == sorted(before + [name, f"{name}.data"])
    assert json.loads((folder / build_smollm2.MANIFEST).read_text())["qdq_models"]["int8"] == name


@pytest.mark.parametrize("activations", ACTIVATIONS)
def test_ep_equals_ort_without_optimisations(built, ep_lib, activations):
    out, manifest, weights = built
    path = qdq_model(out, manifest, activations)
    ours, _ = run(ep_session(path), weights.config, IDS)
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    theirs, _ = run(ort.InferenceSession(str(path), plain, providers=["CPUExecutionProvider"]), weights.config, IDS)
    # Exact integer sums against float32 ones: float rounding, unless it moves a QuantizeLinear by 1.
    np.testing.assert_allclose(ours, theirs, atol=1e-3 * np.abs(theirs).max(), rtol=0)
    assert (ours.argmax(-1) == theirs.argmax(-1)).all()
    gc.collect()


def arm_session(built, arm):
    """'onebit-<activations>': the EP on that QDQ model; 'fp32': ORT's CPU EP on the fp32 model."""
    out, manifest, _ = built
    if arm.startswith("onebit"):
        return ep_session(qdq_model(out, manifest, arm.split("-")[1]))
    return ort.InferenceSession(str(out / manifest["fp32_model"]), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("arm", ["onebit-uint8", "onebit-int8", "fp32"])
def test_kv_cache_decode_equals_full_recompute(built, ep_lib, arm):
    c = built[2].config
    session = arm_session(built, arm)
    full, _ = run(session, c, IDS)
    _, past = run(session, c, IDS[:11])
    for t in range(11, len(IDS)):  # token by token from an 11-token prefill
        step, past = run(session, c, [IDS[t]], past)
        assert past["past_key.0"].shape == (1, c.kv_heads, t + 1, c.head_dim)
    scale = np.abs(full[-1]).max()
    np.testing.assert_allclose(step[-1], full[-1], atol=2e-5 * scale, rtol=0)
    assert step[-1].argmax() == full[-1].argmax()
    del session
    gc.collect()


@pytest.mark.parametrize("arm", ["onebit-uint8", "fp32"])
def test_kv_cache_in_shared_buffers_equals_copied_cache(built, ep_lib, arm):
    """One buffer per past_* input, bound as the matching present_* output too (IO binding, the same
    memory): GroupQueryAttention appends in place, and the valid length comes from attention_mask.
    Token by token from an 11-token prefill, the logits and the cache rows equal the copied cache's."""
    c = built[2].config
    session = arm_session(built, arm)
    capacity = len(IDS) + 5
    buffers = {
        name: ort.OrtValue.ortvalue_from_numpy(np.zeros((1, c.kv_heads, capacity, c.head_dim), np.float32))
        for name in llama_onnx.cache_names(c, "past")
    }
    binding = session.io_binding()
    binding.bind_output("logits")  # first: get_outputs() lists the outputs in binding order
    for past_name, present_name in zip(llama_onnx.cache_names(c, "past"), llama_onnx.cache_names(c, "present")):
        binding.bind_ortvalue_input(past_name, buffers[past_name])
        binding.bind_ortvalue_output(present_name, buffers[past_name])

    def shared_step(ids, past_length):
        binding.bind_cpu_input("input_ids", np.array([ids], np.int64))
        binding.bind_cpu_input("attention_mask", np.ones((1, past_length + len(ids)), np.int64))
        binding.bind_output("logits")  # again: its shape changes from call to call
        session.run_with_iobinding(binding)
        return binding.get_outputs()[0].numpy()[0]

    shared_step(IDS[:11], 0)
    _, past = run(session, c, IDS[:11])
    for t in range(11, len(IDS)):
        logits = shared_step([IDS[t]], t)
        copied, past = run(session, c, [IDS[t]], past)
        np.testing.assert_array_equal(logits, copied)
    for name, value in past.items():
        np.testing.assert_array_equal(buffers[name].numpy()[:, :, : len(IDS)], value)
    binding = session = None  # released before the collection, as the other arms' sessions
    gc.collect()


@pytest.mark.builder
def test_tokenizer_round_trips_text_and_special_tokens(built):
    out, _, _ = built
    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
    chat = json.loads((out / "chat.json").read_text())
    assert (chat["bos_token_id"], chat["eos_token_id"]) == (1, 2)
    assert [tokenizer.token_to_id(t) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")] == [0, 1, 2]
    texts = [
        "Hello, world! 12345",
        "Grüße aus München — naïve café",
        "東京は日本の首都です。",
        "Привет, мир",
        "emoji 🙂🚀 and tabs\tand\nnewlines",
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    ]
    for text in texts:
        ids = tokenizer.encode(text).ids
        assert tokenizer.decode(ids, skip_special_tokens=False) == text
    # Special tokens are matched whole, the text between them is BPE over byte-level pieces ('Ċ' = "\n").
    assert tokenizer.encode(texts[-1]).ids[:5] == [
        tokenizer.token_to_id(t) for t in ("<|im_start|>", "user", "Ċ", "Hi", "<|im_end|>")
    ]
    assert tokenizer.encode("2026").ids == [tokenizer.token_to_id(d) for d in "2026"]  # one token per digit


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def tiny_gguf(path, arch="llama", embedding_type=None):
    """A one-layer llama-shaped GGUF file with random F32 weights (hidden 8, vocab 4)."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(1)
    w.add_context_length(16)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_token_list(["a", "b", "c", "d"])
    rng = np.random.default_rng(0)
    if embedding_type is None:
        w.add_tensor("token_embd.weight", rng.standard_normal((4, 8)).astype(np.float32))
    else:  # raw bytes of another tensor type: one Q6_K block is 210 bytes for 256 values
        w.add_tensor("token_embd.weight", np.zeros((1, 210), np.uint8), raw_dtype=embedding_type)
    w.add_tensor("output_norm.weight", np.ones(8, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def expect_build_error(tmp_path, gguf_path, message):
    cache = tmp_path / "cache"
    with pytest.raises(gguf_llama.GgufError, match=message):
        build_smollm2.build_cached(str(cache), gguf_path, layers=1, log=lambda _: None)
    assert not cache.exists() or list(cache.iterdir()) == []  # nothing half-written


def test_missing_gguf(tmp_path):
    expect_build_error(tmp_path, str(tmp_path / "absent.gguf"), r"GGUF file not found: .*absent\.gguf")


def test_corrupt_gguf(tmp_path):
    good = gguf_llama.packaged_gguf_path()
    truncated = tmp_path / "truncated.gguf"
    with open(good, "rb") as f:
        truncated.write_bytes(f.read(4096))
    expect_build_error(tmp_path, str(truncated), r"truncated\.gguf is not a readable GGUF file")
    noise = tmp_path / "noise.gguf"
    noise.write_bytes(os.urandom(1000))
    expect_build_error(tmp_path, str(noise), r"noise\.gguf is not a readable GGUF file")


def test_unsupported_architecture(tmp_path):
    expect_build_error(
        tmp_path,
        tiny_gguf(tmp_path / "qwen.gguf", arch="qwen2"),
        r"qwen\.gguf: architecture 'qwen2' is not supported \(only 'llama'\)",
    )


def test_unsupported_tensor_type(tmp_path):
    path = tiny_gguf(tmp_path / "q6k.gguf", embedding_type=gguf.GGMLQuantizationType.Q6_K)
    expect_build_error(
        tmp_path, path, r"q6k\.gguf: tensor 'token_embd.weight' has type Q6_K; supported: F32, F16, Q8_0"
    )


def test_layers_out_of_range(tmp_path):
    cache = tmp_path / "cache"
    with pytest.raises(gguf_llama.GgufError, match=r"tiny\.gguf: --layers 2 is outside 1\.\.1"):
        build_smollm2.build_cached(str(cache), tiny_gguf(tmp_path / "tiny.gguf"), layers=2, log=lambda _: None)
    assert list(cache.iterdir()) == []
