# SPDX-License-Identifier: Apache-2.0
"""A seeded mutation fuzzer for the EP's model matcher and group reader (ep/group_match.cpp,
ep/group_plan.cpp): start from groups the EP claims (QDQ MatMul, QDQ Gemm, QLinearMatMul,
MatMulInteger), apply one random mutation (an initializer's type, shape or values; an attribute; an
input dropped, swapped or made non-constant; the activation's type or rank), then create a session
with the EP and one with ORT's CPU EP alone and run both on the same random input.

Run as a script (`python matcher_fuzz.py SEED COUNT`), one process per batch, so a crash is seen as
the process dying with the seed that caused it. It prints one JSON line of counts; it exits 1 if
the EP failed where ORT's CPU EP ran, ran a model ORT's CPU EP refuses, or if the two disagreed on
the output's shape or type."""

from __future__ import annotations

import json
import sys

import ep_session as es
import numpy as np
import onnx
import onnxruntime as ort
import qdq_models as qm
from onnx import TensorProto, helper, numpy_helper

ELEM_TYPES = [
    TensorProto.INT8,
    TensorProto.UINT8,
    TensorProto.INT32,
    TensorProto.FLOAT,
    TensorProto.FLOAT16,
    TensorProto.INT64,
    TensorProto.INT4,
]
NP_OF = {
    TensorProto.INT8: np.int8,
    TensorProto.UINT8: np.uint8,
    TensorProto.INT32: np.int32,
    TensorProto.FLOAT: np.float32,
    TensorProto.FLOAT16: np.float16,
    TensorProto.INT64: np.int64,
    TensorProto.BOOL: np.bool_,
    TensorProto.DOUBLE: np.float64,
}


def base_models():
    return [
        qm.build_qdq_group(qm.QdqSpec(K=24, N=20, x_shape=("M", None))),
        qm.build_qdq_group(qm.QdqSpec(K=24, N=20, x_shape=("M", None), form="gemm", bias="float")),
        qm.build_qdq_group(qm.QdqSpec(K=24, N=20, x_shape=("B", "M", None), out_type=np.int8, w_per_channel=True)),
        qm.build_qlinear_matmul(K=24, N=20),
        qm.build_matmul_integer(K=24, N=20, b_zp="column"),
    ]


def mutate(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """Applies one random mutation in place; returns what it did."""
    g = model.graph
    kind = rng.integers(8)
    if kind == 0 and g.initializer:  # an initializer's element type
        t = g.initializer[rng.integers(len(g.initializer))]
        new_type = ELEM_TYPES[rng.integers(len(ELEM_TYPES))]
        arr = numpy_helper.to_array(t)
        if new_type == TensorProto.INT4:
            t.CopyFrom(helper.make_tensor(t.name, new_type, arr.shape, np.zeros(arr.size, np.int8).tolist()))
        else:
            t.CopyFrom(numpy_helper.from_array(arr.astype(NP_OF[new_type]), t.name))
        return f"initializer {t.name} -> type {new_type}"
    if kind == 1 and g.initializer:  # an initializer's shape
        t = g.initializer[rng.integers(len(g.initializer))]
        arr = numpy_helper.to_array(t)
        shape = tuple(int(d) for d in rng.integers(0, 5, size=rng.integers(0, 4)))
        t.CopyFrom(numpy_helper.from_array(np.resize(arr, shape).astype(arr.dtype), t.name))
        return f"initializer {t.name} -> shape {shape}"
    if kind == 2 and g.initializer:  # an initializer's values: zero, negative, NaN, Inf, extremes
        t = g.initializer[rng.integers(len(g.initializer))]
        arr = numpy_helper.to_array(t).copy()
        if arr.size:
            pick = [0, -1, np.nan, np.inf, -np.inf, 127, -128, 255][rng.integers(8)]
            with np.errstate(invalid="ignore", over="ignore"):
                flat = arr.reshape(-1)
                flat[rng.integers(arr.size)] = (
                    np.array(pick).astype(arr.dtype)
                    if arr.dtype.kind in "fc"
                    else np.array(0 if not np.isfinite(pick) else pick).astype(np.int64).astype(arr.dtype)
                )
        t.CopyFrom(numpy_helper.from_array(arr, t.name))
        return f"initializer {t.name} values"
    node = g.node[rng.integers(len(g.node))]
    if kind == 3:  # an attribute
        name = ["axis", "transB", "transA", "alpha", "beta", "block_size", "output_dtype"][rng.integers(7)]
        value = [int(rng.integers(-3, 4)), float(rng.choice([0.5, 1.0, 2.0]))][int(name in ("alpha", "beta"))]
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute(name, value)])
        return f"{node.op_type} {name}={value}"
    if kind == 4 and len(node.input) > 1:  # an optional input dropped
        i = int(rng.integers(1, len(node.input)))
        node.input[i] = ""
        return f"{node.op_type} input {i} dropped"
    if kind == 5 and len(node.input) > 1:  # two inputs swapped
        i, j = rng.choice(len(node.input), 2, replace=False)
        node.input[i], node.input[j] = node.input[j], node.input[i]
        return f"{node.op_type} inputs {i},{j} swapped"
    if kind == 6 and g.initializer:  # an initializer made a graph input (not constant)
        t = g.initializer[rng.integers(len(g.initializer))]
        g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        g.initializer.remove(t)
        return f"initializer {t.name} -> graph input"
    x = g.input[0]  # the activation's type or rank
    x_type = [TensorProto.INT8, TensorProto.UINT8, TensorProto.FLOAT, TensorProto.INT32][rng.integers(4)]
    dims = [d.dim_param or d.dim_value for d in x.type.tensor_type.shape.dim]
    dims = ["M"] * int(rng.integers(0, 4)) + dims[-1:]
    x.CopyFrom(helper.make_tensor_value_info(x.name, x_type, dims))
    return f"activation -> {x_type} {dims}"


def feeds_for(session: ort.InferenceSession, rng: np.random.Generator) -> dict:
    feeds = {}
    for i in session.get_inputs():
        np_type = {
            "tensor(int8)": np.int8,
            "tensor(uint8)": np.uint8,
            "tensor(float)": np.float32,
            "tensor(int32)": np.int32,
            "tensor(int64)": np.int64,
            "tensor(float16)": np.float16,
        }.get(i.type)
        if np_type is None:
            return {}
        shape = [d if isinstance(d, int) and d >= 0 else 3 for d in i.shape]
        feeds[i.name] = (rng.integers(-100, 100, size=shape) % (256 if np_type == np.uint8 else 1 << 30)).astype(
            np_type
        )
    return feeds


def run(model: onnx.ModelProto, feeds: dict, with_ep: bool):
    so = ort.SessionOptions()
    so.log_severity_level = 4
    if with_ep:
        so.add_provider_for_devices(es.ep_devices(), {})
    session = ort.InferenceSession(
        model.SerializeToString(),
        sess_options=so,
        enable_fallback=0,
        providers=None if with_ep else ["CPUExecutionProvider"],
    )
    return session.run(None, feeds)


def main(seed: int, count: int) -> int:
    es.ensure_registered()
    rng = np.random.default_rng(seed)
    bases = base_models()
    stats = {"mutants": 0, "both_ran": 0, "both_refused": 0, "only_ep_refused": 0, "only_ort_refused": 0}
    problems = []
    for n in range(count):
        model = onnx.ModelProto()
        model.CopyFrom(bases[n % len(bases)])
        what = mutate(model, rng)
        stats["mutants"] += 1
        results = {}
        try:
            probe = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            feeds = feeds_for(probe, rng)
        except Exception:  # noqa: BLE001 - a model ORT itself refuses: still offered to the EP below
            feeds = {}
        for with_ep in (True, False):
            try:
                results[with_ep] = run(model, feeds, with_ep)
            except Exception as e:  # noqa: BLE001 - a clean error is an allowed outcome
                results[with_ep] = e
        ep, cpu = results[True], results[False]
        ep_ok, cpu_ok = not isinstance(ep, Exception), not isinstance(cpu, Exception)
        if ep_ok and cpu_ok:
            stats["both_ran"] += 1
            if [(o.shape, o.dtype) for o in ep] != [(o.shape, o.dtype) for o in cpu]:
                problems.append(f"seed {seed} #{n} ({what}): outputs differ in shape or type")
        elif cpu_ok:
            stats["only_ep_refused"] += 1
            problems.append(f"seed {seed} #{n} ({what}): the EP failed where ORT's CPU EP ran: {ep}")
        elif ep_ok:
            stats["only_ort_refused"] += 1
            problems.append(f"seed {seed} #{n} ({what}): the EP ran a model ORT's CPU EP refuses: {cpu}")
        else:
            stats["both_refused"] += 1
    print(json.dumps({"stats": stats, "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
