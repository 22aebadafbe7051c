# SPDX-License-Identifier: Apache-2.0
"""GroupQueryAttention (com.microsoft) on the EP: outputs and KV caches against a float64 numpy
reference of the operator (tight) and against ORT's CPU EP (a float32 bound: the two sum in other
orders), for decode, first and later prompts, batches, packed QKV, rotary forms, and a cache that
is both past and present (one buffer, as onnxruntime-genai and onebit-run pass it). Forms the EP
does not compute stay with ORT, with the reason logged; bad shapes are errors naming the node."""

from __future__ import annotations

import re

import ep_session as es
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

EP_NAME = es.EP_NAME
POSITIONS = 64  # rows of the cos/sin tables


def gqa_model(
    heads=4,
    kv_heads=2,
    head_size=16,
    rotary=True,
    interleaved=False,
    rotary_half=None,
    packed=False,
    scale=None,
    dtype=TensorProto.FLOAT,
    **extra,
):
    """One GroupQueryAttention node with constant cos/sin tables; `extra` are more attributes."""
    half = rotary_half or head_size // 2
    angles = np.outer(np.arange(POSITIONS), 1.0 / 10000 ** (np.arange(half) / half))
    q_width = (heads + 2 * kv_heads if packed else heads) * head_size
    inputs = [helper.make_tensor_value_info("query", dtype, ["B", "S", q_width])]
    names = ["query", "", ""]
    if not packed:
        inputs += [helper.make_tensor_value_info(n, dtype, ["B", "S", kv_heads * head_size]) for n in ("key", "value")]
        names = ["query", "key", "value"]
    inputs += [
        helper.make_tensor_value_info(n, dtype, ["B", kv_heads, "P", head_size]) for n in ("past_key", "past_value")
    ]
    inputs += [
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["B"]),
        helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
    ]
    names += ["past_key", "past_value", "seqlens_k", "total_sequence_length"]
    initializers = []
    if rotary:
        names += ["cos", "sin"]
        np_type = np.float16 if dtype == TensorProto.FLOAT16 else np.float32
        initializers = [
            helper.make_tensor(n, dtype, [POSITIONS, half], f(angles).astype(np_type).ravel())
            for n, f in (("cos", np.cos), ("sin", np.sin))
        ]
    attrs = dict(num_heads=heads, kv_num_heads=kv_heads, do_rotary=int(rotary), rotary_interleaved=int(interleaved))
    if scale is not None:
        attrs["scale"] = scale
    attrs.update(extra)
    node = helper.make_node(
        "GroupQueryAttention",
        names,
        ["output", "present_key", "present_value"],
        domain="com.microsoft",
        name="attention",
        **attrs,
    )
    outputs = [helper.make_tensor_value_info(n, dtype, None) for n in ("output", "present_key", "present_value")]
    graph = helper.make_graph([node], "gqa", inputs, outputs, initializers)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)], ir_version=10
    )


def feeds(rng, batch, rows, past_rows, valid, heads=4, kv_heads=2, head_size=16, packed=False, total=None):
    """Random q/k/v and a past cache of `past_rows` rows; `valid`: rows valid after the call, per entry."""
    width = (heads + 2 * kv_heads) if packed else heads
    f = {"query": rng.standard_normal((batch, rows, width * head_size)).astype(np.float32)}
    if not packed:
        for n in ("key", "value"):
            f[n] = rng.standard_normal((batch, rows, kv_heads * head_size)).astype(np.float32)
    for n in ("past_key", "past_value"):
        f[n] = rng.standard_normal((batch, kv_heads, past_rows, head_size)).astype(np.float32)
    f["seqlens_k"] = np.array(valid, np.int32) - 1
    f["total_sequence_length"] = np.array(max(valid) if total is None else total, np.int32)
    return f


def rotate(x, position, half, interleaved):
    """Rotary embedding of one head row (float64)."""
    angles = position / 10000 ** (np.arange(half) / half)
    # The tables are float32 in the model.
    cos, sin = (f(angles).astype(np.float32).astype(np.float64) for f in (np.cos, np.sin))
    out = x.copy()
    if interleaved:
        a, b = x[0 : 2 * half : 2], x[1 : 2 * half : 2]
        out[0 : 2 * half : 2], out[1 : 2 * half : 2] = a * cos - b * sin, b * cos + a * sin
    else:
        a, b = x[:half], x[half : 2 * half]
        out[:half], out[half : 2 * half] = a * cos - b * sin, b * cos + a * sin
    return out


def reference(
    f, heads=4, kv_heads=2, head_size=16, rotary=True, interleaved=False, rotary_half=None, packed=False, scale=None
):
    """The operator in float64: the output and the valid rows of each present cache."""
    d, half = head_size, rotary_half or head_size // 2
    q_all = f["query"].astype(np.float64)
    batch, rows = q_all.shape[:2]
    q_all = q_all.reshape(batch, rows, -1, d)
    q, k, v = (
        (q_all[:, :, :heads], q_all[:, :, heads : heads + kv_heads], q_all[:, :, heads + kv_heads :])
        if packed
        else (
            q_all,
            f["key"].astype(np.float64).reshape(batch, rows, kv_heads, d),
            f["value"].astype(np.float64).reshape(batch, rows, kv_heads, d),
        )
    )
    total = int(f["total_sequence_length"])
    first = rows == total
    scale = scale or 1 / np.sqrt(d)
    out = np.zeros((batch, rows, heads, d))
    keys, values = [], []
    for b in range(batch):
        valid = int(f["seqlens_k"][b]) + 1
        past = 0 if first else valid - rows
        kb = np.concatenate([f["past_key"][b, :, :past].astype(np.float64), np.zeros((kv_heads, rows, d))], axis=1)
        vb = np.concatenate([f["past_value"][b, :, :past].astype(np.float64), v[b].transpose(1, 0, 2)], axis=1)
        for g in range(kv_heads):
            for s in range(rows):
                kb[g, past + s] = rotate(k[b, s, g], past + s, half, interleaved) if rotary else k[b, s, g]
        for h in range(heads):
            g = h // (heads // kv_heads)
            for s in range(rows):
                qr = rotate(q[b, s, h], past + s, half, interleaved) if rotary else q[b, s, h]
                scores = scale * (kb[g, : past + s + 1] @ qr)
                p = np.exp(scores - scores.max())
                out[b, s, h] = (p / p.sum()) @ vb[g, : past + s + 1]
        keys.append(kb)
        values.append(vb)
    return out.reshape(batch, rows, heads * d), keys, values


def check(case, model_args, f, threads=None):
    """The EP's outputs against the reference (1e-5) and ORT's CPU EP (1e-4); returns the EP's run."""
    model = gqa_model(**model_args)
    run = es.run_with_ep(model, f, threads=threads)
    assert run.counters["attention_runs"] == 1, f"{case}: not run on the EP: {run.assignment}"
    output, present_key, present_value = run.outputs[0]
    expected, keys, values = reference(f, **model_args)
    np.testing.assert_allclose(output, expected, atol=1e-5, rtol=0, err_msg=f"{case}: output against the reference")
    for b, (kb, vb) in enumerate(zip(keys, values)):
        np.testing.assert_allclose(
            present_key[b, :, : kb.shape[1]], kb, atol=1e-5, rtol=0, err_msg=f"{case}: present_key"
        )
        np.testing.assert_array_equal(
            present_value[b, :, : vb.shape[1]], vb.astype(np.float32), err_msg=f"{case}: present_value"
        )
    cpu = es.run_cpu(model, f)
    for i, name in enumerate(("output", "present_key", "present_value")):
        assert cpu[i].shape == run.outputs[0][i].shape, f"{case}: {name} shape"
    # ORT leaves rows after a batch entry's valid ones as they were: compare the valid rows only.
    np.testing.assert_allclose(output, cpu[0], atol=1e-4, rtol=0, err_msg=f"{case}: output against ORT's CPU EP")
    return run


CASES = {
    "decode": (dict(), dict(batch=1, rows=1, past_rows=20, valid=[21])),
    "decode, cache larger than the rows used": (dict(), dict(batch=1, rows=1, past_rows=40, valid=[13])),
    "first prompt": (dict(), dict(batch=1, rows=9, past_rows=0, valid=[9])),
    "first prompt, batch 2": (dict(), dict(batch=2, rows=7, past_rows=0, valid=[7, 7])),
    "later prompt": (dict(), dict(batch=1, rows=5, past_rows=30, valid=[17])),
    "decode, batch 3 of other lengths": (dict(), dict(batch=3, rows=1, past_rows=24, valid=[5, 24, 12])),
    "packed qkv": (dict(packed=True), dict(batch=2, rows=1, past_rows=16, valid=[9, 16], packed=True)),
    "packed qkv, prompt": (dict(packed=True), dict(batch=1, rows=6, past_rows=0, valid=[6], packed=True)),
    "no rotary": (dict(rotary=False), dict(batch=1, rows=3, past_rows=10, valid=[8])),
    "interleaved rotary": (dict(interleaved=True), dict(batch=1, rows=1, past_rows=10, valid=[10])),
    "partial rotary": (dict(head_size=32, rotary_half=8), dict(batch=1, rows=2, past_rows=10, valid=[7], head_size=32)),
    "scale attribute": (dict(scale=0.3), dict(batch=1, rows=1, past_rows=8, valid=[5])),
    "one KV head, 64-wide heads": (
        dict(heads=3, kv_heads=1, head_size=64),
        dict(batch=1, rows=1, past_rows=50, valid=[50], heads=3, kv_heads=1, head_size=64),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_matches_reference_and_ort(case):
    model_args, feed_args = CASES[case]
    check(case, model_args, feeds(np.random.default_rng(len(case)), **feed_args))


def test_two_threads_give_the_same_values():
    f = feeds(np.random.default_rng(3), batch=2, rows=1, past_rows=30, valid=[30, 11])
    one = check("1 thread", {}, f, threads=1).outputs[0]
    two = check("2 threads", {}, f, threads=2).outputs[0]
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("rows", [1, 60], ids=["decode on one thread", "long prompt split"])
def test_threads_that_sleep_between_calls_give_the_same_values(rows):
    """Two threads that sleep between calls: a short call is meant to run on the calling thread, a
    long one (estimated at 100 µs or more: about 0.12 ms here) over both (the estimate is tested in
    group_query_attention_test.cpp); either way the values are one thread's."""
    shape = dict(heads=8, kv_heads=2, head_size=64)
    past, valid = (30, 31) if rows == 1 else (0, rows)
    f = feeds(np.random.default_rng(rows), batch=1, rows=rows, past_rows=past, valid=[valid], **shape)
    one = check("1 thread", shape, f, threads=1).outputs[0]
    two = es.run_with_ep(gqa_model(**shape), f, threads=2, config={"session.intra_op.allow_spinning": "0"})
    assert two.counters["attention_runs"] == 1
    for a, b in zip(one, two.outputs[0]):
        np.testing.assert_array_equal(a, b)


def test_a_cache_that_is_past_and_present_is_appended_in_place():
    """One buffer bound as past_key and present_key (likewise values): only the new row is written."""
    model = gqa_model()
    capacity, steps = 12, 4
    so = es._session_options()
    so.add_provider_for_devices(es.ep_devices(), {})
    es.ensure_registered()
    sess = ort.InferenceSession(es.model_bytes(model), sess_options=so, enable_fallback=0)
    cpu = ort.InferenceSession(es.model_bytes(model), providers=["CPUExecutionProvider"])
    caches = {}
    for name, session in (("ep", sess), ("cpu", cpu)):
        # The OrtValues view these arrays: they must outlive them.
        memory = [np.zeros((1, 2, capacity, 16), np.float32) for _ in range(2)]
        key, value = (ort.OrtValue.ortvalue_from_numpy(m) for m in memory)
        outs = []
        for step in range(steps):
            rows = 6 if step == 0 else 1
            valid = 6 + step
            x = feeds(np.random.default_rng(100 + step), batch=1, rows=rows, past_rows=capacity, valid=[valid])
            binding = session.io_binding()
            for n in ("query", "key", "value", "seqlens_k", "total_sequence_length"):
                binding.bind_cpu_input(n, x[n])
            binding.bind_ortvalue_input("past_key", key)
            binding.bind_ortvalue_input("past_value", value)
            binding.bind_output("output")
            binding.bind_ortvalue_output("present_key", key)
            binding.bind_ortvalue_output("present_value", value)
            session.run_with_iobinding(binding)
            outs.append(binding.get_outputs()[0].numpy())
        caches[name] = (outs, memory[0][:, :, : 6 + steps - 1], memory[1][:, :, : 6 + steps - 1])
    for a, b in zip(caches["ep"][0], caches["cpu"][0]):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=0)
    np.testing.assert_allclose(caches["ep"][1], caches["cpu"][1], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(caches["ep"][2], caches["cpu"][2])
    assert np.count_nonzero(caches["ep"][2][0, 0, :, 0]) == 6 + steps - 1  # every row written in place


@pytest.mark.parametrize(
    "attrs, dtype, reason",
    [
        (dict(softcap=30.0), TensorProto.FLOAT, "softcap"),
        (dict(local_window_size=4), TensorProto.FLOAT, "local_window_size=4"),
        (dict(smooth_softmax=1), TensorProto.FLOAT, "smooth_softmax=1"),
        (dict(), TensorProto.FLOAT16, "float32 attention only"),
        (dict(causal=0), TensorProto.FLOAT, "causal=0"),
        (dict(local_window_size=0), TensorProto.FLOAT, "local_window_size=0"),
        # Forms ORT's kernel refuses as well: the EP leaves them to it, and its error.
        (dict(sliding_window_cache=1), TensorProto.FLOAT, "sliding_window_cache=1"),
        (dict(kv_cache_bit_width=4), TensorProto.FLOAT, "kv_cache_bit_width=4"),
        (dict(k_quant_type="PER_TENSOR"), TensorProto.FLOAT, "k_quant_type=PER_TENSOR"),
        (dict(qk_output=1), TensorProto.FLOAT, "qk_output=1"),
        (dict(scale=float("nan")), TensorProto.FLOAT, "scale=nan"),
        (dict(num_heads=2**32 + 4), TensorProto.FLOAT, "within 32 bits"),
    ],
)
def test_forms_it_does_not_compute_stay_with_ort(attrs, dtype, reason):
    model = gqa_model(dtype=dtype, **attrs)
    f = feeds(np.random.default_rng(0), batch=1, rows=1, past_rows=8, valid=[5])
    if dtype == TensorProto.FLOAT16:
        f = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in f.items()}
    so = es._session_options()
    so.log_severity_level = 0
    so.add_provider_for_devices(es.ep_devices(), {})
    with es.captured_stderr() as err:
        try:
            sess = ort.InferenceSession(es.model_bytes(model), sess_options=so, enable_fallback=0)
        except Exception:  # ORT refuses the node at session creation, with or without the EP
            with pytest.raises(Exception, match="GroupQueryAttention"):
                es.run_cpu(model, f)
            sess = None
    assert "declined GroupQueryAttention 'attention': " in err["text"] and reason in err["text"], err["text"][-2000:]
    if sess is None:
        return
    assert es.fused_nodes(sess) == 0
    try:
        expected = es.run_cpu(model, f)
    except Exception as refused:  # ORT's kernel refuses it at run time: so does the session with the EP
        with pytest.raises(Exception, match=re.escape(str(refused).split("Status Message: ")[-1])):
            sess.run(None, f)
        return
    np.testing.assert_array_equal(sess.run(None, f)[0], expected[0])


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(seqlens_k=np.array([40], np.int32)), "seqlens_k[0] = 40 does not fit"),
        (dict(seqlens_k=np.array([-5], np.int32)), "seqlens_k[0] = -5 does not fit"),
        (dict(total_sequence_length=np.array(0, np.int32)), "total_sequence_length 0 is below"),
        (dict(past_value=np.zeros((1, 2, 7, 16), np.float32)), "past_value [1,2,7,16]"),
        (dict(key=np.zeros((1, 2, 32), np.float32)), "key [1,2,32] does not match"),
        (dict(total_sequence_length=np.array([[9]], np.int32)), "total_sequence_length [1,1] is not a scalar"),
    ],
)
def test_bad_shapes_are_errors_naming_the_node(change, message):
    f = feeds(np.random.default_rng(0), batch=1, rows=1, past_rows=8, valid=[5]) | change
    sess = es.create_ep_session(gqa_model())
    with pytest.raises(Exception) as error:
        sess.run(None, f)
    assert "GroupQueryAttention 'attention'" in str(error.value) and message in str(error.value), str(error.value)


def test_rotary_positions_past_the_table_are_errors():
    f = feeds(np.random.default_rng(0), batch=1, rows=1, past_rows=POSITIONS + 8, valid=[POSITIONS + 4])
    sess = es.create_ep_session(gqa_model())
    with pytest.raises(Exception, match="is past the 64 rows of cos_cache and sin_cache"):
        sess.run(None, f)


def test_a_first_prompts_padding_rows_attend_to_its_valid_rows():
    """Batch 2, valid lengths 5 and 2: the whole output, padding rows included, as ORT's."""
    f = feeds(np.random.default_rng(9), batch=2, rows=5, past_rows=0, valid=[5, 2])
    run = es.run_with_ep(gqa_model(), f)
    assert run.counters["attention_runs"] == 1
    np.testing.assert_allclose(run.outputs[0][0], es.run_cpu(gqa_model(), f)[0], atol=1e-4, rtol=0)


def test_rows_far_below_the_top_weigh_nothing():
    """Scores 400 against -400: the others' weight underflows to 0, whatever their values hold."""
    model = gqa_model(rotary=False)
    f = feeds(np.random.default_rng(1), batch=1, rows=1, past_rows=20, valid=[21])
    f["query"][:] = 1.0
    f["past_key"][:] = -100.0
    f["past_key"][0, :, 0, :] = 100.0
    f["key"][:] = -100.0
    f["past_value"][:] = 3e38
    f["past_value"][0, :, 0, :] = 1.0
    f["value"][:] = 3e38
    run = es.run_with_ep(model, f)
    assert run.counters["attention_runs"] == 1
    np.testing.assert_array_equal(run.outputs[0][0], np.ones_like(run.outputs[0][0]))


@pytest.mark.parametrize("unread", ["present_key", "present_value", "output"])
def test_an_output_read_by_nothing_leaves_the_node_to_ort(unread):
    """ORT hands the EP no place for an output nothing reads: such a node stays with ORT, and runs."""
    model = gqa_model()
    kept = [o for o in model.graph.output if o.name != unread]
    del model.graph.output[:]
    model.graph.output.extend(kept)
    f = feeds(np.random.default_rng(0), batch=1, rows=1, past_rows=8, valid=[5])
    run = es.run_with_ep(model, f)
    assert run.counters["attention_runs"] == 0
    for ours, theirs in zip(run.outputs[0], es.run_cpu(model, f)):
        np.testing.assert_array_equal(ours, theirs)


def test_key_and_value_without_rows_leave_the_node_to_ort():
    """key/value of 0 rows (attention to the cache alone) is a form the EP does not compute."""
    model = gqa_model()
    for value in model.graph.input:
        if value.name in ("key", "value"):
            value.type.tensor_type.shape.dim[1].dim_value = 0
    f = feeds(np.random.default_rng(0), batch=1, rows=1, past_rows=8, valid=[5])
    f["key"], f["value"] = (np.zeros((1, 0, 32), np.float32) for _ in range(2))
    run = es.run_with_ep(model, f)
    assert run.counters["attention_runs"] == 0
    assert ("attention", "GroupQueryAttention") not in run.ep_nodes()


def test_a_query_without_rows_is_an_error_naming_the_node():
    f = feeds(np.random.default_rng(0), batch=1, rows=0, past_rows=8, valid=[5], total=5)
    with pytest.raises(Exception, match="GroupQueryAttention 'attention': query \\[1,0,64\\] has no rows"):
        es.create_ep_session(gqa_model()).run(None, f)


def test_key_and_value_without_rows_where_the_graph_cannot_tell_are_an_error_naming_the_form():
    model = gqa_model()
    for value in model.graph.input:
        if value.name in ("key", "value"):
            value.type.tensor_type.shape.dim[1].dim_param = "key_rows"
    f = feeds(np.random.default_rng(0), batch=1, rows=1, past_rows=8, valid=[5])
    f["key"], f["value"] = (np.zeros((1, 0, 32), np.float32) for _ in range(2))
    with pytest.raises(Exception, match="key and value of 0 rows .* ONEBIT_ATTENTION=ort"):
        es.create_ep_session(model).run(None, f)
