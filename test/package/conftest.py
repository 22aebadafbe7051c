# SPDX-License-Identifier: Apache-2.0
"""pytest configuration for the package tests: the wheel (dist-py/) in fresh virtual environments,
the C/C++ SDK tarball (dist-sdk/) in a temporary prefix. scripts/check_package.sh builds both first."""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import subprocess
import sys
import venv

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "test" / "python"))  # the model builders and the exact reference

import qdq_models as qm  # noqa: E402
import reference  # noqa: E402


def header_define(name: str) -> str:
    """A string #define of include/onebit_ep.h, the one place the EP's name and version are written."""
    for line in (REPO / "include" / "onebit_ep.h").read_text().splitlines():
        if line.startswith(f"#define {name} "):
            return line.split('"')[1]
    raise KeyError(name)


def only_file(folder: str, pattern: str) -> pathlib.Path:
    found = sorted((REPO / folder).glob(pattern))
    if len(found) != 1:
        pytest.fail(f"expected one {folder}/{pattern}, found {[f.name for f in found]}: run scripts/check_package.sh")
    return found[0]


@pytest.fixture(scope="session")
def wheel() -> pathlib.Path:
    return only_file("dist-py", "onnxruntime_ep_onebit-*.whl")


@pytest.fixture(scope="session")
def sdk_tarball() -> pathlib.Path:
    return only_file("dist-sdk", "onebit_ep-*.tar.gz")


# Each onnxruntime the tests install beside the wheel: the lowest the library supports (it asks for
# API 24), the one onnxruntime-node ships, the newest on the package index (unpinned), and an older
# one that must refuse it (1.23.2: API 23, plugin EPs already registrable).
SUPPORTED_ORT = ["onnxruntime==1.24.4", "onnxruntime==1.30.0", "onnxruntime"]
OLD_ORT = "onnxruntime==1.23.2"


# What each fresh environment ran, printed at the end of the run (the unpinned one's version changes).
SEEN: list[str] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if SEEN:
        terminalreporter.section("package checks")
        for line in SEEN:
            terminalreporter.write_line(line)


def make_venv(folder: pathlib.Path, *requirements: str) -> pathlib.Path:
    """A fresh virtual environment with exactly `requirements` (and their dependencies) installed;
    returns its python. This interpreter's pip installs into it: no pip bootstrap, no .pyc compile."""
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-compile",
            "--disable-pip-version-check",
            *requirements,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(requirements)} into {folder} failed:\n{result.stderr}")
    return python


@pytest.fixture(scope="session")
def venvs(tmp_path_factory, wheel) -> dict[str, pathlib.Path]:
    """One fresh virtual environment per onnxruntime requirement, each with the wheel; created
    concurrently (mostly downloads and unpacking) to keep CI short."""
    root = tmp_path_factory.mktemp("venvs")
    requirements = SUPPORTED_ORT + [OLD_ORT]
    with concurrent.futures.ThreadPoolExecutor(len(requirements)) as pool:
        # Installed as the README says: by name, found in dist-py/ (pinned, so nothing else of that name).
        ours = [f"onnxruntime-ep-onebit=={header_define('ONEBIT_EP_VERSION')}", "--find-links", str(wheel.parent)]
        pythons = pool.map(lambda i_r: make_venv(root / f"venv{i_r[0]}", i_r[1], *ours), enumerate(requirements))
        return dict(zip(requirements, pythons))


class QdqCase:
    """One exact QDQ group written as model.onnx, its input x.npy, and the exact expected output."""

    def __init__(self, folder: pathlib.Path, M: int = 5):
        self.spec = qm.QdqSpec(
            K=48, N=20, x_type=np.int8, out_type=np.int8, bias="dq_int32", w_per_channel=True, name="package"
        )
        self.model = qm.build_qdq_group(self.spec)
        self.folder = folder
        (folder / "model.onnx").write_bytes(self.model.SerializeToString())
        self.x = qm.random_activation(self.spec, (M, self.spec.K), seed=12)
        np.save(folder / "x.npy", self.x)
        self.input_name = self.model.graph.input[0].name
        self.expected = reference.reference_run(self.model, {self.input_name: self.x})[0]


@pytest.fixture(scope="session")
def qdq_case(tmp_path_factory) -> QdqCase:
    return QdqCase(tmp_path_factory.mktemp("qdq_case"))


@pytest.fixture(scope="session")
def ort_runtime_lib() -> str:
    """ORT 1.30 as onnxruntime-node ships it, for the C host (scripts/test.sh exports the path)."""
    path = os.environ.get("ONEBIT_ORT_LIB") or str(
        REPO / "node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
    )
    if not os.path.isfile(path):
        pytest.fail(f"ORT library {path} not found: set ONEBIT_ORT_LIB")
    return path
