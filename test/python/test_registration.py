# SPDX-License-Identifier: Apache-2.0
"""Registration, devices, provider options and the trace line of the onebit EP."""

from __future__ import annotations

import os
import re
import tempfile

import ep_session as es
import numpy as np
import onnxruntime as ort
import pytest
import qdq_models as qm
import reference
from conftest import REPO
from qdq_models import QdqSpec

VALID_KEYS = ("device", "min_device_rows", "trace")


@pytest.fixture(scope="module")
def small_model():
    spec = QdqSpec(bias="float", out_type=np.int8, K=32, N=16)
    model = qm.build_qdq_group(spec)
    feeds = {"x_q": qm.random_activation(spec, (5, 32), seed=9)}
    return model, feeds, reference.reference_run(es.level1_model(model), feeds)


def test_register_lists_exactly_one_cpu_device(ep_lib):
    devices = [d for d in ort.get_ep_devices() if d.ep_name == es.EP_NAME]
    assert len(devices) == 1, [(d.ep_name, d.device.type) for d in ort.get_ep_devices()]
    assert devices[0].device.type == ort.OrtHardwareDeviceType.CPU
    # ORT's own CPU EP is still listed next to ours.
    assert any(d.ep_name == "CPUExecutionProvider" for d in ort.get_ep_devices())


def test_second_registration_with_same_name_raises(ep_lib):
    with pytest.raises(Exception) as info:
        ort.register_execution_provider_library(es.REGISTRATION_NAME, ep_lib)
    assert "already registered" in str(info.value), str(info.value)
    # The first registration is intact.
    assert len(es.ep_devices()) == 1


def test_missing_library_path_raises_and_process_lives_on(ep_lib, small_model):
    with tempfile.TemporaryDirectory() as d:
        missing = os.path.join(d, "no-such-dir", "libonebit_ep.so")
        with pytest.raises(Exception) as info:
            ort.register_execution_provider_library("onebit_missing", missing)
    assert missing in str(info.value), str(info.value)
    # Nothing was registered under that name, and the real EP still works in this process.
    with pytest.raises(Exception):
        ort.unregister_execution_provider_library("onebit_missing")
    model, feeds, ref = small_model
    run = es.run_with_ep(model, feeds)
    assert run.groups == 1
    es.assert_exact(run.outputs[0][0], ref[0], "after a failed registration")


def test_unknown_option_fails_listing_valid_keys(ep_lib, small_model):
    with pytest.raises(Exception) as info:
        es.create_ep_session(small_model[0], {"bogus_key": "1"})
    msg = str(info.value)
    assert "bogus_key" in msg, msg
    for key in VALID_KEYS:
        assert key in msg, f"valid key {key!r} not listed in: {msg}"


@pytest.mark.parametrize("value", ["gpu", "", "AUTO_x"])
def test_bad_device_value_fails_clearly(ep_lib, small_model, value):
    with pytest.raises(Exception) as info:
        es.create_ep_session(small_model[0], {"device": value})
    msg = str(info.value)
    assert "device" in msg and f"'{value}'" in msg and "auto" in msg and "none" in msg, msg


@pytest.mark.parametrize("value", ["-1", "abc", "1.5"])
def test_bad_min_device_rows_fails_clearly(ep_lib, small_model, value):
    with pytest.raises(Exception) as info:
        es.create_ep_session(small_model[0], {"min_device_rows": value})
    msg = str(info.value)
    assert "min_device_rows" in msg and value in msg, msg


def test_bad_trace_value_fails_clearly(ep_lib, small_model):
    with pytest.raises(Exception) as info:
        es.create_ep_session(small_model[0], {"trace": "2"})
    assert "trace" in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "options",
    [{"device": "none"}, {"device": "auto"}, {"min_device_rows": "0"}, {"min_device_rows": "64", "device": "auto"}],
)
def test_valid_options_run_and_stay_exact(ep_lib, small_model, options):
    model, feeds, ref = small_model
    run = es.run_with_ep(model, [feeds, feeds], options)
    assert run.groups == 1 and run.group_runs == 2, run.counters
    for outs in run.outputs:
        es.assert_exact(outs[0], ref[0], f"options {options}")


TRACE_KEYS = [
    "group_runs",
    "groups",
    "host_rows_policy",
    "host_routes",
    "device_fallbacks",
    "device_busy",
    "device_breaker_skips",
    "device_calls",
    "device_launches",
    "a_bytes_synced",
    "c_bytes_synced",
    "c_syncs_narrowed",
    "c_syncs_whole",
    "designs_built",
    "designs_loaded",
    "designs_failed",
    "device_weight_bytes",
    "host_only_kind",
    "packed_cache_hits",
    "packed_cache_writes",
    "host_ns",
    "device_ns",
    "attention_runs",
    "gate_runs",
    "norm_runs",
]


def test_trace_line_names_every_counter(ep_lib, small_model):
    """`onebit: group_runs=R groups=G host_rows_policy=0 ...`: every counter, in a fixed order."""
    model, feeds, _ = small_model
    run = es.run_with_ep(model, [feeds] * 3, options={"device": "none"})
    line = next(line for line in run.stderr.splitlines() if line.startswith("onebit:"))
    assert list(run.counters) == TRACE_KEYS, line
    assert run.counters["group_runs"] == 3 and run.counters["groups"] == 1, line
    assert run.counters["host_ns"] > 0, line
    assert all(
        run.counters[k] == 0 for k in TRACE_KEYS[2:-5] + ["device_ns", "attention_runs", "gate_runs", "norm_runs"]
    ), line


def test_trace_off_prints_nothing(ep_lib, small_model, monkeypatch):
    monkeypatch.delenv("ONEBIT_EP_TRACE", raising=False)
    model, feeds, ref = small_model
    run = es.run_with_ep(model, feeds, options={"trace": "0"}, trace=False)
    assert es.parse_trace(run.stderr) == [], run.stderr
    es.assert_exact(run.outputs[0][0], ref[0], "trace=0")


def test_trace_env_var_turns_tracing_on(ep_lib, small_model, monkeypatch):
    monkeypatch.setenv("ONEBIT_EP_TRACE", "1")
    model, feeds, _ = small_model
    run = es.run_with_ep(model, [feeds, feeds], trace=False)
    lines = es.parse_trace(run.stderr)
    assert len(lines) == 1 and lines[0]["group_runs"] == 2 and lines[0]["groups"] == 1, run.stderr


def test_counters_are_per_session(ep_lib, small_model):
    model, feeds, _ = small_model
    first = es.run_with_ep(model, [feeds] * 4)
    second = es.run_with_ep(model, feeds)
    assert first.group_runs == 4 and second.group_runs == 1, (first.counters, second.counters)


def test_whole_model_on_ep_without_cpu_fallback(ep_lib, small_model):
    """Every node of a single-group model is claimed: ORT's `session.disable_cpu_ep_fallback=1`
    (fail if any node would go to the CPU EP) accepts the session."""
    model, feeds, ref = small_model
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(es.ep_devices(), {})
    sess = ort.InferenceSession(es.model_bytes(model), sess_options=so, enable_fallback=0)
    es.assert_exact(sess.run(None, feeds)[0], ref[0], "disable_cpu_ep_fallback")


def cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


# The CPU flags (as Linux names them) each SIMD host kernel needs.
KERNEL_FLAGS = {
    "amx": {"amx_tile", "amx_int8", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"},
    "avx512vnni": {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"},
    "avxvnni": {"avx_vnni"},
    "avx2": {"avx2"},
}


def test_unknown_forced_kernel_fails_session_creation(ep_lib, small_model, monkeypatch):
    monkeypatch.setenv("ONEBIT_KERNEL", "avx9000")
    with pytest.raises(Exception) as info:
        es.create_ep_session(small_model[0])
    msg = str(info.value)
    # The names the message lists are the C++ table's; the package's HOST_KERNELS must be the same.
    names = re.search(r"HOST_KERNELS = \[([^\]]*)\]", (REPO / "ts" / "names.ts").read_text()).group(1)
    listed = "|".join(n.strip().strip("'") for n in names.split(","))
    assert "ONEBIT_KERNEL='avx9000'" in msg and listed in msg, msg


@pytest.mark.parametrize("kernel", sorted(KERNEL_FLAGS))
def test_forced_kernel_the_cpu_lacks_fails_session_creation(ep_lib, small_model, monkeypatch, kernel):
    if KERNEL_FLAGS[kernel] <= cpu_flags():
        pytest.skip(f"this CPU runs the {kernel} kernel")
    monkeypatch.setenv("ONEBIT_KERNEL", kernel)
    with pytest.raises(Exception) as info:
        es.create_ep_session(small_model[0])
    msg = str(info.value)
    assert f"ONEBIT_KERNEL={kernel}: this CPU (or its OS) cannot run that kernel" in msg, msg


@pytest.mark.parametrize("kernel", ["portable"] + sorted(KERNEL_FLAGS))
def test_forced_kernel_the_cpu_runs_is_accepted_and_exact(ep_lib, small_model, monkeypatch, kernel):
    if not KERNEL_FLAGS.get(kernel, set()) <= cpu_flags():
        pytest.skip(f"this CPU cannot run the {kernel} kernel")
    monkeypatch.setenv("ONEBIT_KERNEL", kernel)
    model, feeds, ref = small_model
    run = es.run_with_ep(model, feeds)
    assert run.groups == 1, run.counters
    es.assert_exact(run.outputs[0][0], ref[0], f"ONEBIT_KERNEL={kernel}")
