# SPDX-License-Identifier: Apache-2.0
"""Running models with the onebit EP (and with ORT's own CPU EP) from Python onnxruntime.

Every test that runs the EP goes through `run_with_ep`: it creates a session with the EP's
device and the requested provider options, runs it, releases it, and returns the outputs
together with the EP's trace counters (the line the EP prints to stderr when a session with
trace=1 is released) and the provider assignment ORT records for the session.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import pathlib
import re
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper


def header_define(name: str) -> str:
    """A string #define of the library's public header (include/onebit_ep.h): written once there."""
    header = pathlib.Path(__file__).resolve().parents[2] / "include" / "onebit_ep.h"
    match = re.search(rf'^#define {name} "([^"]*)"', header.read_text(), re.MULTILINE)
    if match is None:
        raise LookupError(f"{header} defines no {name}")
    return match.group(1)


EP_NAME = header_define("ONEBIT_EP_NAME")
REGISTRATION_NAME = header_define("ONEBIT_EP_REGISTRATION_NAME")
TRACE_RE = re.compile(r"^onebit: (.*)$", re.MULTILINE)

_registered_path: str | None = None

# Lines describing measured ORT-CPU-vs-exact differences; conftest prints them at the end.
MEASUREMENTS: list[str] = []


def record_measurement(line: str) -> None:
    print(line)
    MEASUREMENTS.append(line)


def pss_bytes() -> int:
    """This process's proportional set size (each page divided among the processes mapping it)."""
    for line in pathlib.Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/self/smaps_rollup has no Pss line")


def ep_lib_path() -> str:
    """The EP library named by ONEBIT_EP_LIB; fails the calling test if it is unusable."""
    path = os.environ.get("ONEBIT_EP_LIB")
    if not path:
        pytest.fail("ONEBIT_EP_LIB is not set: point it at the built libonebit_ep.so (absolute path)", pytrace=False)
    if not os.path.isabs(path):
        pytest.fail(
            f"ONEBIT_EP_LIB must be an absolute path (ORT resolves relative paths against its own folder): {path!r}",
            pytrace=False,
        )
    if not os.path.isfile(path):
        pytest.fail(f"ONEBIT_EP_LIB names a file that does not exist: {path!r} (build the EP first)", pytrace=False)
    return path


def ensure_registered() -> str:
    """Register the EP library once per process; returns its path."""
    global _registered_path
    path = ep_lib_path()
    if _registered_path is None:
        ort.register_execution_provider_library(REGISTRATION_NAME, path)
        _registered_path = path
    return _registered_path


def ep_devices():
    ensure_registered()
    return [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]


def model_bytes(model) -> bytes:
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, str):
        with open(model, "rb") as f:
            return f.read()
    return model.SerializeToString()


@contextlib.contextmanager
def captured_stderr():
    """Capture what native code writes to file descriptor 2 (the EP's trace line)."""
    box = {"text": ""}
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")


def parse_trace(text: str) -> list[dict]:
    """All `onebit: key=value ...` lines in text, as dicts of ints (keys as printed)."""
    lines = []
    for m in TRACE_RE.finditer(text):
        counters = {}
        for key, value in re.findall(r"\s*([^=]+?)=(\S+)", m.group(1)):
            counters[key.strip()] = int(value) if re.fullmatch(r"-?\d+", value) else value
        lines.append(counters)
    return lines


@dataclass
class EpRun:
    outputs: list  # outputs of each run: outputs[run][output index]
    counters: dict  # the session's trace counters ("group_runs", "groups", ...)
    assignment: dict = field(default_factory=dict)  # EP name -> [(node name, op type)]
    stderr: str = ""
    fused_nodes: int = 0  # the EP's fused nodes (a group, or sibling groups of one input)

    @property
    def groups(self) -> int:
        return self.counters["groups"]

    @property
    def group_runs(self) -> int:
        return self.counters["group_runs"]

    def ep_nodes(self, ep=EP_NAME):
        return self.assignment.get(ep, [])


def _session_options(level=None, disabled_optimizers=None, threads=None, config=None):
    so = ort.SessionOptions()
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, value)
    if level is not None:
        so.graph_optimization_level = level
    if disabled_optimizers:
        so.add_session_config_entry("optimization.disable_specified_optimizers", ",".join(disabled_optimizers))
    if threads:
        so.intra_op_num_threads = threads
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return so


def _assignment(sess) -> dict:
    out: dict = {}
    for sub in sess.get_provider_graph_assignment_info():
        out.setdefault(sub.ep_name, []).extend((n.name, n.op_type) for n in sub.get_nodes())
    return out


def fused_nodes(sess) -> int:
    """How many fused nodes of the EP the session runs."""
    return sum(sub.ep_name == EP_NAME for sub in sess.get_provider_graph_assignment_info())


def create_ep_session(model, options=None, level=None):
    """An InferenceSession with the EP and `options`. Python's InferenceSession by default catches
    a failing EP and silently retries on the CPU EP alone (printing "EP Error" to stdout);
    enable_fallback=0 makes such failures raise, as they do in the C/C++ API."""
    so = _session_options(level)
    so.add_provider_for_devices(ep_devices(), {k: str(v) for k, v in (options or {}).items()})
    # A path is passed as a path, so that ORT finds the model's external data beside it.
    source = str(model) if isinstance(model, pathlib.Path) else model_bytes(model)
    return ort.InferenceSession(source, sess_options=so, enable_fallback=0)


def run_with_ep(
    model, feeds, options=None, level=None, disabled_optimizers=None, trace=True, threads=None, config=None
) -> EpRun:
    """Run `model` with the onebit EP once per feeds dict (feeds: dict or list of dicts).

    options: provider options for the EP (strings); trace=1 is added unless trace=False.
    level: graph optimization level (default: ORT's default, ORT_ENABLE_ALL).
    config: session config entries (ORT's own keys), key to value.
    Returns EpRun; counters come from the trace line printed when the session is released.
    """
    ensure_registered()
    devices = ep_devices()
    assert len(devices) == 1, f"expected one {EP_NAME} device, got {len(devices)}"
    opts = {k: str(v) for k, v in (options or {}).items()}
    if trace:
        opts.setdefault("trace", "1")
    feeds_list = [feeds] if isinstance(feeds, dict) else list(feeds)
    data = model_bytes(model)
    gc.collect()  # an earlier test's session released inside the capture would print its line in it
    with captured_stderr() as err:
        so = _session_options(level, disabled_optimizers, threads, config)
        so.add_provider_for_devices(devices, opts)
        sess = ort.InferenceSession(data, sess_options=so, enable_fallback=0)
        try:
            assignment, fused = _assignment(sess), fused_nodes(sess)
            outputs = [_run(sess, f) for f in feeds_list]
        finally:
            del sess
            gc.collect()
    lines = parse_trace(err["text"])
    if trace:
        assert len(lines) == 1, (
            f"expected exactly one 'onebit:' trace line when the session was released, got {len(lines)}; "
            f"stderr was:\n{err['text']}"
        )
    return EpRun(outputs, lines[0] if lines else {}, assignment, err["text"], fused)


def run_cpu(model, feeds, level=None, disabled_optimizers=None, threads=None) -> list:
    """Outputs of ORT's own CPU EP (no plugin EP) for one feeds dict."""
    so = _session_options(level, disabled_optimizers, threads)
    sess = ort.InferenceSession(model_bytes(model), sess_options=so, providers=["CPUExecutionProvider"])
    return _run(sess, feeds)


@dataclass
class RawTensor:
    """An output whose element type numpy cannot hold (float8, int4, ...): its bit patterns."""

    onnx_type: int
    shape: tuple
    elements: np.ndarray  # one uint8 bit pattern per element


def _run(sess, feeds):
    """session.run, or run_with_ort_values when a feed is an OrtValue (exotic element types)."""
    if not any(isinstance(v, ort.OrtValue) for v in feeds.values()):
        return sess.run(None, feeds)
    ov_feeds = {k: v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(v) for k, v in feeds.items()}
    outs = sess.run_with_ort_values(None, ov_feeds)
    result = []
    for ov in outs:
        if np.dtype(onnx.helper.tensor_dtype_to_np_dtype(ov.element_type())) in NUMPY_FEEDABLE:
            result.append(ov.numpy())
        else:
            raw = ctypes.string_at(ov.data_ptr(), ov.tensor_size_in_bytes())
            shape = tuple(ov.shape())
            result.append(
                RawTensor(
                    ov.element_type(), shape, unpack_elements(np.frombuffer(raw, np.uint8), ov.element_type(), shape)
                )
            )
    return result


BITS = {TensorProto.INT4: 4, TensorProto.UINT4: 4, TensorProto.FLOAT4E2M1: 4}
for _name in ("INT2", "UINT2"):
    if hasattr(TensorProto, _name):
        BITS[getattr(TensorProto, _name)] = 2


def unpack_elements(packed: np.ndarray, onnx_type: int, shape) -> np.ndarray:
    """Per-element bit patterns of a (possibly sub-byte packed, low bits first) tensor."""
    n = int(np.prod(shape)) if len(shape) else 1
    bits = BITS.get(onnx_type, 8)
    if bits == 8:
        return packed[:n].copy()
    per = 8 // bits
    mask = (1 << bits) - 1
    out = np.empty(len(packed) * per, np.uint8)
    for j in range(per):
        out[j::per] = (packed >> (bits * j)) & mask
    return out[:n]


NUMPY_FEEDABLE = {
    np.dtype(t)
    for t in (
        np.float32,
        np.float16,
        np.float64,
        np.int8,
        np.uint8,
        np.int16,
        np.uint16,
        np.int32,
        np.uint32,
        np.int64,
        np.uint64,
        np.bool_,
    )
}


def tensor_feed(t: onnx.TensorProto):
    """A feed value for a TensorProto: a numpy array, or an OrtValue for float8/int4/int2/float4."""
    a = numpy_helper.to_array(t)
    if a.dtype in NUMPY_FEEDABLE:
        return a
    ov = ort.OrtValue.ortvalue_from_shape_and_type(list(t.dims), t.data_type)
    data = tensor_packed_bytes(t)
    assert len(data) == ov.tensor_size_in_bytes(), (t.name, len(data), ov.tensor_size_in_bytes())
    ctypes.memmove(ov.data_ptr(), data, len(data))
    return ov


def tensor_packed_bytes(t: onnx.TensorProto) -> bytes:
    if t.raw_data:
        return bytes(t.raw_data)
    # float8 / int4 / int2 / float4 are stored one byte (or one packed byte) per int32_data entry.
    return bytes(np.asarray(t.int32_data, dtype=np.int64).astype(np.uint8))


def expected_value(t: onnx.TensorProto):
    """Expected output as numpy (or RawTensor for element types numpy cannot hold)."""
    a = numpy_helper.to_array(t)
    if a.dtype in NUMPY_FEEDABLE:
        return a
    shape = tuple(t.dims)
    return RawTensor(
        t.data_type, shape, unpack_elements(np.frombuffer(tensor_packed_bytes(t), np.uint8), t.data_type, shape)
    )


# ORT 1.30's CPU EP cannot create a session, at optimisation level >= 2, for a static rank>2 int8
# QDQ MatMul+Add: QDQS8ToU8Transformer turns zero points to uint8 while the QuantizeLinear that
# QDQPropagation inserted around the Gemm's Reshape keeps output_dtype=INT8.
ORT_S8U8_BUG = "output_dtype INT8 does not match y_zero_point type UINT8"


def run_cpu_default(model, feeds) -> tuple[list, str]:
    """ORT CPU EP at default optimisation; works around ORT_S8U8_BUG (returned note says so)."""
    try:
        return run_cpu(model, feeds), "default"
    except Exception as e:  # noqa: BLE001 - ORT raises its own Fail type
        if ORT_S8U8_BUG not in str(e):
            raise
        return run_cpu(
            model, feeds, disabled_optimizers=["QDQS8ToU8Transformer"]
        ), "default minus QDQS8ToU8Transformer (ORT bug)"


def level1_model(model, disabled_optimizers=None) -> onnx.ModelProto:
    """The graph after ORT's level-1 (basic) optimisations: the form a plugin EP is offered."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "level1.onnx")
        so = _session_options(ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, disabled_optimizers)
        so.optimized_model_filepath = path
        ort.InferenceSession(model_bytes(model), sess_options=so, providers=["CPUExecutionProvider"])
        return onnx.load(path)


def profile_providers(model, feeds, options=None) -> dict:
    """Node name -> provider, from an ORT profile of one run with the EP (second proof)."""
    ensure_registered()
    with tempfile.TemporaryDirectory() as d, captured_stderr():
        so = _session_options()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(d, "prof")
        so.add_provider_for_devices(ep_devices(), {k: str(v) for k, v in (options or {}).items()})
        sess = ort.InferenceSession(model_bytes(model), sess_options=so, enable_fallback=0)
        sess.run(None, feeds)
        prof = sess.end_profiling()
        del sess
        gc.collect()
        with open(prof) as f:
            events = json.load(f)
    out = {}
    for ev in events:
        args = ev.get("args", {})
        if ev.get("cat") == "Node" and "provider" in args:
            out[ev["name"].rsplit("_kernel_time", 1)[0]] = args["provider"]
    return out


# ---------------------------------------------------------------------------------------------
# Comparison helpers
# ---------------------------------------------------------------------------------------------


def assert_exact(actual, expected, what=""):
    """Same dtype, same shape, bit-identical values (with a readable report of differences)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != expected {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    if actual.dtype.kind == "f":
        same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    else:
        same = actual == expected
    if not same.all():
        idx = np.argwhere(~same)
        first = [tuple(int(i) for i in ix) for ix in idx[:5]]
        details = ", ".join(f"{ix}: got {actual[ix]!r} expected {expected[ix]!r}" for ix in first)
        raise AssertionError(f"{what}: {len(idx)} of {actual.size} elements differ; first: {details}")


@dataclass
class Diff:
    n: int
    frac_diff: float  # fraction of elements that differ
    max_abs: float  # max |a - b| (LSB for integer outputs)
    max_ref: float = 0.0  # max |expected|, to put max_abs in proportion

    @property
    def max_rel(self) -> float:
        return self.max_abs / self.max_ref if self.max_ref else 0.0

    def __str__(self):
        s = f"n={self.n} differing={self.frac_diff:.4%} max_abs={self.max_abs:g}"
        if self.max_ref and self.max_abs and not float(self.max_abs).is_integer():
            s += f" (max|exact|={self.max_ref:g}, rel={self.max_rel:.3g})"
        return s


def diff_stats(actual, expected) -> Diff:
    a = np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
    if a.size == 0:
        return Diff(0, 0.0, 0.0)
    if a.dtype.kind == "f":
        d = np.abs(a.astype(np.float64) - e.astype(np.float64))
    else:
        d = np.abs(a.astype(np.int64) - e.astype(np.int64)).astype(np.float64)
    return Diff(a.size, float(np.count_nonzero(d) / a.size), float(d.max()), float(np.abs(e.astype(np.float64)).max()))


def assert_matches_expected(actual, expected, what=""):
    """ONNX backend-test comparison: exact for integer and bit-pattern outputs, else
    numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7)."""
    if isinstance(expected, RawTensor):
        assert isinstance(actual, RawTensor), f"{what}: expected a {expected.onnx_type} tensor, got {type(actual)}"
        assert actual.onnx_type == expected.onnx_type and actual.shape == expected.shape, (
            f"{what}: {actual.onnx_type}{actual.shape} != {expected.onnx_type}{expected.shape}"
        )
        np.testing.assert_array_equal(actual.elements, expected.elements, err_msg=what)
        return
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "iub":
        assert_exact(actual, expected, what)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-7, err_msg=what)
