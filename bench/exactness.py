# SPDX-License-Identifier: Apache-2.0
"""How many outputs each arm gets wrong against exact integer arithmetic, per quantized form.

The EP and ORT's CPU EP run the same model on the same full-range operands (uint8 activations,
int8 weights in [-127, 127], K = N = 256, M = 4); each output is compared with the ONNX semantics
evaluated exactly (test/python/reference.py: int64 accumulation, then the form's own scaling and
rounding). An integer output counts as wrong when it differs at all; a float output (the
quantize_dynamic chain) when it differs by more than 4 float32 ulps of the exact value. The tests
hold the EP to these references; this prints the counts for BENCHMARKS.md and docs/what-it-claims.md.

Run: ONEBIT_EP_LIB=$PWD/build/native/libonebit_ep.so .venv/bin/python bench/exactness.py
(under `qemu-x86_64 -cpu Haswell` for an AVX2 CPU's ORT on any machine).
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test" / "python"))
import dynamic_models  # noqa: E402
import ep_session as es  # noqa: E402
import qdq_models as qm  # noqa: E402
import reference  # noqa: E402
from ort_int8 import ort_u8s8_wrong_outputs  # noqa: E402

K = N = 256
M = 4
ULPS = 4


def forms(tmp: pathlib.Path):
    """(name, model, feeds) per form, all uint8 x int8 at K = N = 256."""
    rng = np.random.default_rng(2026)
    a = rng.integers(0, 256, (M, K)).astype(np.uint8)
    qdq = qm.build_qdq_group(
        qm.QdqSpec(
            K=K,
            N=N,
            x_type=np.uint8,
            x_zp=3,
            w_per_channel=True,
            w_range=(-127, 127),
            bias="float",
            out_type=np.uint8,
            name="qdq",
        )
    )
    yield "QDQ group (DQ, DQ -> MatMul -> Add -> Q), uint8 output", qdq, {"x_q": a}
    yield "QLinearMatMul", qm.build_qlinear_matmul(K=K, N=N), {"a": a}
    yield "MatMulInteger", qm.build_matmul_integer(K=K, N=N), {"A": a}
    fp32 = dynamic_models.float_matmuls([M, K], [(K, N)], bias=True)
    x = (rng.standard_normal((M, K)) * 2).astype(np.float32)
    chain = dynamic_models.dynamic_quantized(fp32, tmp, True, dynamic_models.QuantType.QInt8, reduce_range=False)
    yield "quantize_dynamic chain (DQL -> MatMulInteger -> Cast -> Mul -> Add)", chain, {"x": x}


def wrong(got: np.ndarray, exact: np.ndarray) -> int:
    if exact.dtype.kind == "f":
        limit = ULPS * np.finfo(np.float32).eps * np.abs(exact).astype(np.float64)
        return int((np.abs(got.astype(np.float64) - exact) > limit).sum())
    return int((got.astype(np.int64) != exact.astype(np.int64)).sum())


def main() -> None:
    es.ensure_registered()
    print(f"onnxruntime {es.ort.__version__}; ORT's u8·s8 check: {ort_u8s8_wrong_outputs()} of 16 outputs wrong")
    print(f"{'form':70s} {'outputs':>8s} {'EP wrong':>9s} {'ORT wrong':>10s} {'ORT max |diff|':>15s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feeds in forms(pathlib.Path(tmp)):
            (exact,) = reference.reference_run(es.level1_model(model), feeds)
            run = es.run_with_ep(model, feeds)
            assert run.groups >= 1, f"{name}: not claimed"
            ours = run.outputs[0][0]
            theirs = es.run_cpu(model, feeds)[0]
            diff = np.abs(theirs.astype(np.float64) - exact.astype(np.float64)).max()
            print(f"{name:70s} {exact.size:8d} {wrong(ours, exact):9d} {wrong(theirs, exact):10d} {diff:15.6g}")


if __name__ == "__main__":
    main()
