# SPDX-License-Identifier: Apache-2.0
"""The W4A8 contract (kernels/gemm_w4a8.h, kernels/README.md) against ORT's CPU MatMulNBits.

A numpy reference of the contract — activations quantized per row and K-block with scale
max|x|/127 (round half to even), exact integer block dots, float32 scaling summed in increasing
block order — on random ORT-format weights (4 and 8 bits, block 16..256, K not a multiple of the
block, with and without zero points), compared with ORT's CPU EP at accuracy_level=4 (its int8
path) and with the exact product of x and the dequantized weights; and the C++ kernels themselves
(portable and the selected one, through test/kernels/gemm_w4a8_capi.cpp's C entry point, from the
build: $ONEBIT_W4A8_CAPI or build/native/test/kernels/libgemm_w4a8_capi.so) equal to the numpy
contract bit for bit. It needs no EP library.
"""

from __future__ import annotations

import ctypes
import os
import pathlib

import ep_session
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

# The quantized integers are the same as ORT's, so the two results differ only by float32
# rounding in the block sum: |contract - ORT| <= BOUND_ULPS · 2^-24 · Σ_b |a_s·w_s·dot_b| per output.
BOUND_ULPS = 4


REPO = pathlib.Path(__file__).resolve().parents[2]


def kernel_matmul(x, b, scales, zero_points, N, K, bits, block_size, kernel):
    """The C++ W4A8 kernel `kernel` ('portable', or None for the one selected on this CPU)."""
    path = os.environ.get("ONEBIT_W4A8_CAPI", str(REPO / "build/native/test/kernels/libgemm_w4a8_capi.so"))
    lib = ctypes.CDLL(path)  # OSError naming the path when the build lacks it
    ptr = lambda a: None if a is None else a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    i64 = ctypes.c_int64
    x = np.ascontiguousarray(x, np.float32)
    y = np.empty((x.shape[0], N), np.float32)
    error = ctypes.create_string_buffer(512)
    lib.onebit_w4a8_matmul.restype = ctypes.c_int
    status = lib.onebit_w4a8_matmul(
        i64(K),
        i64(N),
        i64(bits),
        i64(block_size),
        ptr(b),
        i64(b.nbytes),
        ptr(scales),
        i64(scales.size),
        ptr(zero_points),
        i64(0 if zero_points is None else zero_points.nbytes),
        ptr(x),
        i64(x.shape[0]),
        None,
        None if kernel is None else kernel.encode(),
        ptr(y),
        error,
        i64(len(error)),
    )
    assert status == 0, error.value.decode()
    return y


def nbits_session(K, N, bits, block_size, b, scales, zero_points, accuracy_level):
    inits = [numpy_helper.from_array(b, "B"), numpy_helper.from_array(scales, "scales")]
    inputs = ["A", "B", "scales"]
    if zero_points is not None:
        inits.append(numpy_helper.from_array(zero_points, "zero_points"))
        inputs.append("zero_points")
    node = helper.make_node(
        "MatMulNBits",
        inputs,
        ["Y"],
        domain="com.microsoft",
        K=K,
        N=N,
        bits=bits,
        block_size=block_size,
        accuracy_level=accuracy_level,
    )
    graph = helper.make_graph(
        [node],
        "nbits",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", K])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", N])],
        inits,
    )
    model = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def model_values(b, zero_points, N, K, bits, block_size):
    """The unsigned weights [N, k_blocks·block_size] and zero points [N, k_blocks] the bytes hold:
    low nibble first; absent zero points are 2^(bits-1)."""
    k_blocks = -(-K // block_size)
    if bits == 4:
        q = np.empty((N, k_blocks * block_size), np.int64)
        q[:, 0::2] = (b & 15).reshape(N, -1)
        q[:, 1::2] = (b >> 4).reshape(N, -1)
    else:
        q = b.reshape(N, -1).astype(np.int64)
    if zero_points is None:
        z = np.full((N, k_blocks), 1 << (bits - 1), np.int64)
    elif bits == 4:
        z = np.empty((N, 2 * zero_points.shape[1]), np.int64)
        z[:, 0::2] = zero_points & 15
        z[:, 1::2] = zero_points >> 4
        z = z[:, :k_blocks]
    else:
        z = zero_points.astype(np.int64)
    return q, z


def contract(x, b, scales, zero_points, N, K, bits, block_size):
    """y and the per-output sum of |terms| (the float-rounding scale) under the contract."""
    M, k_blocks = x.shape[0], -(-K // block_size)
    q, z = model_values(b, zero_points, N, K, bits, block_size)
    padded = np.zeros((M, k_blocks * block_size), np.float32)
    padded[:, :K] = x
    blocks = padded.reshape(M, k_blocks, block_size)
    amax = np.abs(blocks).max(axis=2)
    a_scale = (amax / np.float32(127)).astype(np.float32)
    # 127/amax as ORT's quantizer has it (1/a_scale differs in the last bit for some amax).
    with np.errstate(divide="ignore", over="ignore"):
        inverse = (np.float32(127) / amax).astype(np.float32)
    inverse[~np.isfinite(inverse)] = 0  # amax 0, or so small that 127/amax overflows: zeros
    xq = np.rint(blocks * inverse[:, :, None]).astype(np.int64)  # rint rounds half to even
    assert np.abs(xq).max() <= 127
    w = q.reshape(N, k_blocks, block_size) - z[:, :, None]
    w = w * (np.arange(k_blocks * block_size).reshape(k_blocks, block_size) < K)  # ignore ORT's padding
    dot = np.einsum("mbk,nbk->mnb", xq, w)  # exact in int64 (and in int32)
    # ORT may scale Σ q·w and the zero-point term zp·Σq apart and subtract in float: its rounding
    # scale is their magnitudes, not the (smaller) block dot's.
    split = np.einsum("mbk,nbk->mnb", np.abs(xq), np.abs(w) + z[:, :, None])
    w_scale = scales.reshape(N, k_blocks)
    y = np.zeros((M, N), np.float32)
    magnitude = np.zeros((M, N), np.float64)
    for blk in range(k_blocks):
        s = (a_scale[:, blk][:, None] * w_scale[:, blk][None, :]).astype(np.float32)
        term = (s * dot[:, :, blk].astype(np.float32)).astype(np.float32)
        y = (y + term).astype(np.float32)
        magnitude += np.abs(s).astype(np.float64) * split[:, :, blk]
    return y, magnitude


def exact(x, b, scales, zero_points, N, K, bits, block_size):
    k_blocks = -(-K // block_size)
    q, z = model_values(b, zero_points, N, K, bits, block_size)
    w = (q.reshape(N, k_blocks, block_size) - z[:, :, None]) * scales.reshape(N, k_blocks, 1).astype(np.float64)
    return x.astype(np.float64) @ w.reshape(N, -1)[:, :K].T


CASES = [
    (bits, K, N, bs)
    for bits in (4, 8)
    for (K, N, bs) in [(576, 576, 32), (1536, 67, 32), (576, 192, 128), (100, 37, 16), (300, 64, 256), (250, 9, 64)]
]


@pytest.mark.parametrize("with_zero_points", [False, True], ids=["sym", "zp"])
@pytest.mark.parametrize("bits,K,N,block_size", CASES)
def test_contract_matches_ort_accuracy_level_4(bits, K, N, block_size, with_zero_points):
    rng = np.random.default_rng(K * 7 + N + bits + block_size + with_zero_points)
    k_blocks = -(-K // block_size)
    b = rng.integers(0, 256, (N, k_blocks, block_size * bits // 8), dtype=np.uint8)  # padding bytes random too
    scales = rng.uniform(0.001, 0.05, N * k_blocks).astype(np.float32)
    zero_points = rng.integers(0, 256, (N, -(-k_blocks * bits // 8)), dtype=np.uint8) if with_zero_points else None
    session = nbits_session(K, N, bits, block_size, b, scales, zero_points, 4)
    for M in (1, 3, 32):
        # Rows of very different magnitudes, and an exact tie of the rounding (127 and 0.5 in one block).
        x = (rng.standard_normal((M, K)) * rng.uniform(0.01, 50, (M, 1))).astype(np.float32)
        x[0, 0], x[0, 1] = 127.0, 0.5
        y_ort = session.run(None, {"A": x})[0]
        y, magnitude = contract(x, b, scales, zero_points, N, K, bits, block_size)
        ratio = np.abs(y.astype(np.float64) - y_ort) / (magnitude * 2.0**-24 + 1e-300)
        want = exact(x, b, scales, zero_points, N, K, bits, block_size)
        rms = lambda v: float(np.sqrt(np.mean((v - want) ** 2)))  # noqa: E731
        line = (
            f"MatMulNBits bits={bits} K={K} N={N} bs={block_size} zp={with_zero_points} M={M}: "
            f"|contract-ORT| max {ratio.max():.2f} ulps of Σ|terms|; rms vs exact contract "
            f"{rms(y):.4g}, ORT {rms(y_ort):.4g}"
        )
        ep_session.record_measurement(line)
        assert ratio.max() <= BOUND_ULPS, line
        for kernel in ("portable", None):
            y_kernel = kernel_matmul(x, b, scales, zero_points, N, K, bits, block_size, kernel)
            assert np.array_equal(y_kernel.view(np.uint32), y.view(np.uint32)), f"{kernel or 'selected'} kernel"


def test_format_facts_low_nibble_first_and_scales_either_shape():
    """ORT reads B low nibble first, zero points for block 2j in the low nibble of byte j, scales
    as [N·k_blocks] or [N, k_blocks], and ignores B's padding past K (accuracy_level 0: float)."""
    rng = np.random.default_rng(0)
    K, N, bits, block_size = 100, 5, 4, 32
    b = rng.integers(0, 256, (N, 4, 16), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.05, (N, 4)).astype(np.float32)
    zero_points = rng.integers(0, 256, (N, 2), dtype=np.uint8)
    x = rng.standard_normal((2, K)).astype(np.float32)
    want = exact(x, b, scales, zero_points, N, K, bits, block_size)
    for s in (scales, scales.reshape(-1)):
        y = nbits_session(K, N, bits, block_size, b, s, zero_points, 0).run(None, {"A": x})[0]
        assert np.abs(y - want).max() <= 1e-5 * np.abs(want).max()
    swapped = ((b & 15) << 4) | (b >> 4)  # high nibble first would read these bytes instead
    y = nbits_session(K, N, bits, block_size, swapped, scales, zero_points, 0).run(None, {"A": x})[0]
    assert np.abs(y - want).max() > 0.1 * np.abs(want).max()
