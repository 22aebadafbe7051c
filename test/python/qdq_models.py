# SPDX-License-Identifier: Apache-2.0
"""Small, deterministic builders for the quantized-MatMul models the tests run.

Every builder returns an onnx.ModelProto. Weights, scales and zero points are initializers
(constants); the activation is a graph input of type int8/uint8 (or float for the models that
quantize their own input). Random data comes from numpy Generators with fixed seeds, so the
models are identical on every run.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

NP_TO_ONNX = {
    np.dtype(np.int8): TP.INT8,
    np.dtype(np.uint8): TP.UINT8,
    np.dtype(np.int32): TP.INT32,
    np.dtype(np.float32): TP.FLOAT,
    np.dtype(np.float16): TP.FLOAT16,
}

QRANGE = {
    np.dtype(np.int8): (-128, 127),
    np.dtype(np.uint8): (0, 255),
}


# Standard deviation of a product of two independent full-range 8-bit values (uniform over 256
# values: std 256/sqrt(12) each); the accumulator over K terms has std ~ this * sqrt(K).
ACC_STD_PER_SQRT_K = 256.0 * 256.0 / 12.0


def qrange(dtype) -> tuple[int, int]:
    return QRANGE[np.dtype(dtype)]


def make_model(nodes, inputs, outputs, initializers, opset=21, ir_version=10, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)
    model.producer_name = "onebit-ep-tests"
    onnx.checker.check_model(model)
    return model


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def rand_q(rng, shape, dtype, lo=None, hi=None):
    """Uniform integers over the full range of dtype (or [lo, hi])."""
    qlo, qhi = qrange(dtype)
    lo = qlo if lo is None else lo
    hi = qhi if hi is None else hi
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# One QDQ group: DQ(x_q), DQ(W_q) -> MatMul/Gemm -> [Add bias] -> [QuantizeLinear]
# ---------------------------------------------------------------------------------------------


class QdqSpec:
    """Parameters of one QDQ MatMul group (documented defaults)."""

    def __init__(self, **kw):
        self.K = 64
        self.N = 48
        self.x_shape = ["M", None]  # None = K; strings are symbolic dims
        self.x_type = np.int8
        self.x_scale = 0.0173
        self.x_zp = 3
        self.w_type = np.int8
        self.w_per_channel = False
        self.w_zp = 0  # int, or "random" for per-channel random zero points
        self.bias = None  # None | "float" | "float_first" | "dq_int32"
        self.out_type = None  # None (float output) | np.int8 | np.uint8
        self.y_zp = None  # None = middle of the range chosen by the builder
        self.form = "matmul"  # "matmul" | "gemm" (explicit Gemm, rank-2 only)
        self.trans_b = 0
        self.opset = 21
        self.seed = 0
        self.scales_pow2 = False  # power-of-two scales: makes exact .5 ties frequent
        self.w_axis = None  # override the DQ(W) axis (bad-input tests)
        self.w_range = None  # (lo, hi) of the weight values; None = full range of w_type
        self.x_range = None  # (lo, hi) of the activation data random_activation draws
        self.name = "qdq"
        for k, v in kw.items():
            if not hasattr(self, k):
                raise TypeError(f"unknown QdqSpec field {k}")
            setattr(self, k, v)


def _x_dims(spec):
    return [spec.K if d is None else d for d in spec.x_shape]


def build_qdq_group(spec: QdqSpec) -> onnx.ModelProto:
    rng = np.random.default_rng(spec.seed)
    K, N = spec.K, spec.N
    x_type = np.dtype(spec.x_type)
    w_type = np.dtype(spec.w_type)

    # Weights over the full range of their type.
    w = rand_q(rng, (K, N), w_type, *(spec.w_range or (None, None)))
    if spec.w_per_channel:
        if spec.scales_pow2:
            w_scale = (2.0 ** -rng.integers(3, 7, size=N)).astype(np.float32)
        else:
            w_scale = rng.uniform(0.005, 0.009, size=N).astype(np.float32)
        if spec.w_zp == "random":
            lo, hi = qrange(w_type)
            w_zp = rng.integers(lo + 20, hi - 20 + 1, size=N).astype(w_type)
        else:
            w_zp = np.full(N, spec.w_zp, dtype=w_type)
    else:
        w_scale = np.float32(2.0**-5 if spec.scales_pow2 else 0.0071)
        w_zp = np.array(spec.w_zp if spec.w_zp != "random" else 7, dtype=w_type)

    x_scale = np.float32(2.0**-4 if spec.scales_pow2 else spec.x_scale)
    x_zp = np.array(spec.x_zp if x_type == np.int8 else spec.x_zp + 128, dtype=x_type)

    # Bias values on the scale of the products.
    sw_vec = np.broadcast_to(np.asarray(w_scale, np.float64), (N,))
    acc_scale = np.float64(x_scale) * sw_vec
    typical = acc_scale * ACC_STD_PER_SQRT_K * np.sqrt(K)  # std of the float MatMul output
    bias_f = (rng.standard_normal(N) * typical * 0.5).astype(np.float32)

    # Output scale: chosen so that roughly 1% of outputs saturate (covers clipping too).
    if spec.out_type is not None:
        if spec.scales_pow2:
            # sx*sw = 2^-9 per tensor, so v / y_scale = acc / 2: every odd acc is an exact tie.
            y_scale = np.float32(2.0**-8)
        else:
            y_scale = np.float32(np.float64(typical.mean()) * 2.8 / 127.0)
        o_type = np.dtype(spec.out_type)
        if spec.y_zp is None:
            y_zp = np.array(-5 if o_type == np.int8 else 131, dtype=o_type)
        else:
            y_zp = np.array(spec.y_zp, dtype=o_type)

    inits = [
        init("x_scale", x_scale),
        init("x_zero_point", x_zp),
        init("w_scale", w_scale),
        init("w_zero_point", w_zp),
    ]
    w_axis = spec.w_axis if spec.w_axis is not None else 1
    if spec.form == "gemm" and spec.trans_b:
        inits.append(init("w_q", np.ascontiguousarray(w.T)))
        w_axis = spec.w_axis if spec.w_axis is not None else 0
    else:
        inits.append(init("w_q", w))
    dq_w_attrs = {"axis": w_axis} if (spec.w_per_channel or spec.w_axis is not None) else {}

    nodes = [
        helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_f"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero_point"], ["w_f"], name="dq_w", **dq_w_attrs),
    ]

    bias_name = None
    if spec.bias in ("float", "float_first"):
        inits.append(init("bias", bias_f))
        bias_name = "bias"
    elif spec.bias == "dq_int32":
        b_scale = (np.float32(x_scale) * np.asarray(w_scale, np.float32)).astype(np.float32)
        b_q = np.rint(bias_f.astype(np.float64) / b_scale.astype(np.float64)).astype(np.int32)
        inits += [init("bias_q", b_q), init("bias_scale", b_scale)]
        nodes.append(helper.make_node("DequantizeLinear", ["bias_q", "bias_scale"], ["bias_f"], name="dq_bias", axis=0))
        bias_name = "bias_f"
    elif spec.bias is not None:
        raise ValueError(spec.bias)

    float_out = "y_f" if spec.out_type is not None else "y"
    if spec.form == "matmul":
        mm_out = float_out if bias_name is None else "mm"
        nodes.append(helper.make_node("MatMul", ["x_f", "w_f"], [mm_out], name="matmul"))
        if bias_name is not None:
            ins = [bias_name, "mm"] if spec.bias == "float_first" else ["mm", bias_name]
            nodes.append(helper.make_node("Add", ins, [float_out], name="add_bias"))
    elif spec.form == "gemm":
        ins = ["x_f", "w_f"] + ([bias_name] if bias_name else [])
        nodes.append(helper.make_node("Gemm", ins, [float_out], name="gemm", transB=spec.trans_b))
    else:
        raise ValueError(spec.form)

    if spec.out_type is not None:
        inits += [init("y_scale", y_scale), init("y_zero_point", y_zp)]
        nodes.append(helper.make_node("QuantizeLinear", ["y_f", "y_scale", "y_zero_point"], ["y"], name="q_y"))
        out_elem = NP_TO_ONNX[np.dtype(spec.out_type)]
    else:
        out_elem = TP.FLOAT

    x_dims = _x_dims(spec)
    out_dims = x_dims[:-1] + [N]
    inputs = [helper.make_tensor_value_info("x_q", NP_TO_ONNX[x_type], x_dims)]
    outputs = [helper.make_tensor_value_info("y", out_elem, out_dims)]
    return make_model(nodes, inputs, outputs, inits, opset=spec.opset, name=spec.name)


def random_activation(spec_or_type, shape, seed=100):
    """Full-range int8/uint8 activation data."""
    if isinstance(spec_or_type, QdqSpec):
        dtype, rng_ = spec_or_type.x_type, spec_or_type.x_range or (None, None)
    else:
        dtype, rng_ = spec_or_type, (None, None)
    return rand_q(np.random.default_rng(seed), shape, np.dtype(dtype), *rng_)


# ---------------------------------------------------------------------------------------------
# A multi-layer stack of QDQ groups, activations re-quantized between layers.
# ---------------------------------------------------------------------------------------------


def build_qdq_stack(
    dims=(64, 128, 64, 32), act_type=np.int8, per_channel=True, float_output=True, seed=7, x_dims=("M", None)
) -> onnx.ModelProto:
    """x_q -> [DQ, DQ(W), MatMul, Add, Q] x (L-1) -> [DQ, DQ(W), MatMul, Add] (-> Q) -> y."""
    rng = np.random.default_rng(seed)
    act_type = np.dtype(act_type)
    lo, hi = qrange(act_type)
    mid = (lo + hi + 1) // 2
    nodes, inits = [], []
    cur = "x_q"
    cur_scale = np.float32(0.021)
    inits += [init("l0_x_scale", cur_scale), init("l0_x_zero_point", np.array(mid + 2, act_type))]
    cur_scale_name, cur_zp_name = "l0_x_scale", "l0_x_zero_point"
    n_layers = len(dims) - 1
    for i in range(n_layers):
        K, N = dims[i], dims[i + 1]
        p = f"l{i}_"
        w = rand_q(rng, (K, N), np.int8)
        if per_channel:
            w_scale = rng.uniform(0.003, 0.012, size=N).astype(np.float32)
            w_zp = np.zeros(N, np.int8)
        else:
            w_scale = np.float32(0.0067)
            w_zp = np.array(0, np.int8)
        sw = np.broadcast_to(np.asarray(w_scale, np.float64), (N,))
        typical = np.float64(cur_scale) * sw * ACC_STD_PER_SQRT_K * np.sqrt(K)
        bias = (rng.standard_normal(N) * typical * 0.5).astype(np.float32)
        inits += [
            init(p + "w_q", w),
            init(p + "w_scale", w_scale),
            init(p + "w_zero_point", w_zp),
            init(p + "bias", bias),
        ]
        nodes += [
            helper.make_node("DequantizeLinear", [cur, cur_scale_name, cur_zp_name], [p + "x_f"], name=p + "dq_x"),
            helper.make_node(
                "DequantizeLinear",
                [p + "w_q", p + "w_scale", p + "w_zero_point"],
                [p + "w_f"],
                name=p + "dq_w",
                **({"axis": 1} if per_channel else {}),
            ),
            helper.make_node("MatMul", [p + "x_f", p + "w_f"], [p + "mm"], name=p + "matmul"),
        ]
        last = i == n_layers - 1
        out_f = "y" if (last and float_output) else p + "y_f"
        nodes.append(helper.make_node("Add", [p + "mm", p + "bias"], [out_f], name=p + "add"))
        if not (last and float_output):
            y_scale = np.float32(float(typical.mean()) * 2.8 / 127.0)
            q_out = "y" if last else p + "y_q"
            nxt = f"l{i + 1}_"
            inits += [init(nxt + "x_scale", y_scale), init(nxt + "x_zero_point", np.array(mid - 3, act_type))]
            nodes.append(
                helper.make_node(
                    "QuantizeLinear", [out_f, nxt + "x_scale", nxt + "x_zero_point"], [q_out], name=p + "q_y"
                )
            )
            cur, cur_scale, cur_scale_name, cur_zp_name = q_out, y_scale, nxt + "x_scale", nxt + "x_zero_point"
    xd = [dims[0] if d is None else d for d in x_dims]
    out_t = TP.FLOAT if float_output else NP_TO_ONNX[act_type]
    inputs = [helper.make_tensor_value_info("x_q", NP_TO_ONNX[act_type], xd)]
    outputs = [helper.make_tensor_value_info("y", out_t, xd[:-1] + [dims[-1]])]
    return make_model(nodes, inputs, outputs, inits, name="qdq_stack")


# ---------------------------------------------------------------------------------------------
# QLinearMatMul and MatMulInteger with constant B.
# ---------------------------------------------------------------------------------------------


def build_qlinear_matmul(
    K=40,
    N=24,
    a_type=np.uint8,
    b_type=np.int8,
    opset=21,
    b_per_column=False,
    batched_b=None,
    a_dims=("M", None),
    scale_type=np.float32,
    seed=11,
):
    """QLinearMatMul(a, const scales/zps, const b). batched_b=B makes b [B, K, N]; a's batch dims then
    broadcast against [B] (ONNX MatMul rules), so y's shape is left for ORT to infer."""
    rng = np.random.default_rng(seed)
    a_type, b_type, st = np.dtype(a_type), np.dtype(b_type), np.dtype(scale_type)
    b_shape = (K, N) if batched_b is None else (batched_b, K, N)
    b = rand_q(rng, b_shape, b_type)
    a_scale = np.array([0.0123], st)
    a_zp = np.array([9 if a_type == np.int8 else 131], a_type)
    if b_per_column:
        b_scale = rng.uniform(0.003, 0.012, size=N).astype(st)
        b_zp = np.zeros(N, b_type) if b_type == np.int8 else np.full(N, 128, b_type)
    else:
        b_scale = np.array([0.0089], st)
        b_zp = np.array([-4 if b_type == np.int8 else 121], b_type)
    y_scale = np.array([0.0123 * 0.0089 * ACC_STD_PER_SQRT_K * np.sqrt(K) * 2.8 / 127], st)
    y_zp = np.array([2 if a_type == np.int8 else 126], a_type)
    inits = [
        init("a_scale", a_scale),
        init("a_zero_point", a_zp),
        init("b", b),
        init("b_scale", b_scale),
        init("b_zero_point", b_zp),
        init("y_scale", y_scale),
        init("y_zero_point", y_zp),
    ]
    node = helper.make_node(
        "QLinearMatMul",
        ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"],
        ["y"],
        name="qlinear_matmul",
    )
    ad = [K if d is None else d for d in a_dims]
    inputs = [helper.make_tensor_value_info("a", NP_TO_ONNX[a_type], ad)]
    y_dims = ad[:-1] + [N]
    if batched_b is not None:  # y's batch dims: a's broadcast against [B] (a symbolic dim stays open)
        batch = list(ad[:-2]) or [1]
        batch[-1] = batched_b if batch[-1] in (1, batched_b) else "y_batch"
        y_dims = batch + [ad[-2], N]
    outputs = [helper.make_tensor_value_info("y", NP_TO_ONNX[a_type], y_dims)]
    return make_model([node], inputs, outputs, inits, opset=opset, name="qlinear_matmul")


def build_matmul_integer(
    K=40, N=24, a_type=np.uint8, b_type=np.int8, a_zp=True, b_zp="tensor", a_dims=("M", None), seed=12, opset=21
):
    """MatMulInteger(A, const B [, const a_zero_point, const b_zero_point]) -> int32."""
    rng = np.random.default_rng(seed)
    a_type, b_type = np.dtype(a_type), np.dtype(b_type)
    B = rand_q(rng, (K, N), b_type)
    inits = [init("B", B)]
    ins = ["A", "B"]
    if a_zp:
        inits.append(init("a_zero_point", np.array(5 if a_type == np.int8 else 133, a_type)))
        ins.append("a_zero_point")
    elif b_zp is not None:
        ins.append("")
    if b_zp == "tensor":
        inits.append(init("b_zero_point", np.array(-3 if b_type == np.int8 else 125, b_type)))
        ins.append("b_zero_point")
    elif b_zp == "column":
        lo, hi = qrange(b_type)
        inits.append(init("b_zero_point", rng.integers(lo + 30, hi - 30 + 1, size=N).astype(b_type)))
        ins.append("b_zero_point")
    node = helper.make_node("MatMulInteger", ins, ["Y"], name="matmul_integer")
    ad = [K if d is None else d for d in a_dims]
    inputs = [helper.make_tensor_value_info("A", NP_TO_ONNX[a_type], ad)]
    outputs = [helper.make_tensor_value_info("Y", TP.INT32, ad[:-1] + [N])]
    return make_model([node], inputs, outputs, inits, opset=opset, name="matmul_integer")


# ---------------------------------------------------------------------------------------------
# A float MLP for onnxruntime.quantization.quantize_static.
# ---------------------------------------------------------------------------------------------


def build_float_mlp(dims=(32, 64, 48, 16), seed=21, relu_last=False) -> onnx.ModelProto:
    """x (float [batch, d0]) -> (MatMul + Add + Relu) per layer; the last layer has no Relu."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    cur = "x"
    n = len(dims) - 1
    for i in range(n):
        last = i == n - 1
        K, N = dims[i], dims[i + 1]
        w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
        b = (rng.standard_normal(N) * 0.1).astype(np.float32)
        inits += [init(f"fc{i}_w", w), init(f"fc{i}_b", b)]
        add_out = "y" if (last and not relu_last) else f"fc{i}_add"
        nodes += [
            helper.make_node("MatMul", [cur, f"fc{i}_w"], [f"fc{i}_mm"], name=f"fc{i}_matmul"),
            helper.make_node("Add", [f"fc{i}_mm", f"fc{i}_b"], [add_out], name=f"fc{i}_add"),
        ]
        cur = add_out
        if not last or relu_last:
            relu_out = "y" if last else f"fc{i}_relu"
            nodes.append(helper.make_node("Relu", [cur], [relu_out], name=f"fc{i}_relu"))
            cur = relu_out
    inputs = [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", dims[0]])]
    outputs = [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", dims[-1]])]
    return make_model(nodes, inputs, outputs, inits, opset=17, ir_version=8, name="float_mlp")


def float_mlp_inputs(rows, d0=32, seed=33):
    return np.random.default_rng(seed).standard_normal((rows, d0)).astype(np.float32)
