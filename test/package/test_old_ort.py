# SPDX-License-Identifier: Apache-2.0
"""An onnxruntime older than the library supports (1.23.2: ORT API 23, plugin EPs already
registrable) gets a clear error at registration -- from the library itself when registered by
path, and from register() before it tries -- and the process lives on."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import OLD_ORT, header_define

SCRIPT = """
import json
import onnxruntime as ort, onnxruntime_ep_onebit as onebit
errors = {}
try:
    ort.register_execution_provider_library("onebit", onebit.get_library_path())
except Exception as e:
    errors["by_path"] = str(e)
try:
    onebit.register("onebit_helper")
except RuntimeError as e:
    errors["helper"] = str(e)
errors["ours_listed"] = [d.ep_name for d in ort.get_ep_devices() if d.ep_name in onebit.get_ep_names()]
errors["cpu_still_runs"] = "CPUExecutionProvider" in ort.get_available_providers()
print(json.dumps(errors))
"""


@pytest.fixture(scope="module")
def old_ort_run(venvs):
    result = subprocess.run([venvs[OLD_ORT], "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_library_refuses_an_older_ort_at_registration(old_ort_run):
    version = header_define("ONEBIT_EP_VERSION")
    assert "by_path" in old_ort_run, old_ort_run
    assert (
        f"onebit: OnebitExecutionProvider {version} needs ORT 1.24 or newer (ORT API 24); "
        f"this process runs ORT {OLD_ORT.split('==')[1]}"
    ) in old_ort_run["by_path"], old_ort_run["by_path"]
    assert old_ort_run["ours_listed"] == [] and old_ort_run["cpu_still_runs"], old_ort_run


def test_register_helper_checks_the_version_first(old_ort_run):
    assert old_ort_run.get("helper") == (
        f"onnxruntime-ep-onebit {header_define('ONEBIT_EP_VERSION')} needs onnxruntime 1.24 or newer "
        f"(ORT API 24); this process has onnxruntime {OLD_ORT.split('==')[1]}: pip install -U onnxruntime"
    ), old_ort_run
