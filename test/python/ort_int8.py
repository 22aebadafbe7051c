# SPDX-License-Identifier: Apache-2.0
"""What ORT's CPU EP computes for uint8 x int8 on this CPU, measured rather than read from CPU flags.

MLAS multiplies u8·s8 with vpmaddubsw on AVX2-only CPUs, which saturates 16-bit sums of two
products; on VNNI CPUs (vpdpbusd) nothing saturates. CPU flags are not a reliable guide: under
`qemu-x86_64 -cpu Haswell` /proc/cpuinfo still shows the host's flags while ORT's CPUID sees no
VNNI. So the tests ask ORT: one MatMulInteger whose every pair sum (2·255·127) overflows int16.
"""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

K, N = 64, 16


def saturating_matmul_integer() -> bytes:
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [1, K])
    y = helper.make_tensor_value_info("y", TensorProto.INT32, [1, N])
    b = numpy_helper.from_array(np.full((K, N), 127, np.int8), "b")
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "probe", [a], [y], [b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


@functools.cache
def ort_u8s8_wrong_outputs() -> int:
    """How many of the probe's N outputs ORT's CPU EP gets wrong (0 where its kernel is exact)."""
    sess = ort.InferenceSession(saturating_matmul_integer(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"a": np.full((1, K), 255, np.uint8)})
    return int((y != 255 * 127 * K).sum())


def ort_u8s8_saturates() -> bool:
    """True where ORT's uint8 x int8 integer kernels saturate (AVX2 without VNNI)."""
    return ort_u8s8_wrong_outputs() > 0
