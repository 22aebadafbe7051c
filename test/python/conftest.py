# SPDX-License-Identifier: Apache-2.0
"""pytest configuration for the cross-runtime tests (Python onnxruntime + the onebit EP)."""

from __future__ import annotations

import os
import pathlib
import sys

import ep_session
import onnxruntime as ort
import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
# The model builders (models/) for the SmolLM2 and genai tests: on the path before any test module is
# imported, so that no module's imports depend on the order of another's.
sys.path.insert(0, str(REPO / "models"))


def node_tests_dir() -> pathlib.Path:
    """The shared ONNX node-test cases: $ONNX_NODE_TESTS, else ../shared/onnx-node-tests from the repo."""
    env = os.environ.get("ONNX_NODE_TESTS")
    return pathlib.Path(env) if env else (REPO.parent / "shared" / "onnx-node-tests")


def pytest_report_header(config):
    lib = os.environ.get("ONEBIT_EP_LIB", "<unset>")
    return [f"onnxruntime {ort.__version__}; ONEBIT_EP_LIB={lib}; ONNX node tests: {node_tests_dir()}"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Print every measured ORT-CPU-vs-exact difference (also printed per test under -s)."""
    if ep_session.MEASUREMENTS:
        terminalreporter.section("ORT CPU EP vs exact reference (measured)")
        for line in ep_session.MEASUREMENTS:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def ep_lib():
    """Registers the EP library (once per process) and returns its path; fails if ONEBIT_EP_LIB is unusable."""
    return ep_session.ensure_registered()
