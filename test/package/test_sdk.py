# SPDX-License-Identifier: Apache-2.0
"""The C/C++ SDK tarball (scripts/build_sdk.sh): unpacked into a temporary prefix, the C host
(test/host) builds against it with find_package(onebit_ep) and with pkg-config, registers the
installed library in ORT 1.30 and runs a QDQ model; its output must equal exact arithmetic."""

from __future__ import annotations

import os
import re
import subprocess
import tarfile

import numpy as np
import pytest
import qdq_models as qm
import reference
from conftest import REPO, header_define
from test_c_host import deterministic_input  # the input the C host feeds

M = 5


def ort_include_dir() -> str:
    default = REPO / (
        "node_modules/ort-headers/Plugins/iOS~/onnxruntime.xcframework/"
        "ios-arm64_x86_64-simulator/onnxruntime.framework/Headers"
    )
    return os.environ.get("ORT_INCLUDE_DIR", str(default))


@pytest.fixture(scope="module")
def prefix(tmp_path_factory, sdk_tarball):
    """The SDK unpacked where no build path points: everything in it must be relocatable."""
    folder = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdk_tarball) as tar:
        tar.extractall(folder, filter="data")
    [root] = folder.iterdir()
    return root


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    spec = qm.QdqSpec(K=48, N=20, x_type=np.int8, out_type=np.int8, bias="dq_int32", w_per_channel=True, name="sdk")
    model = qm.build_qdq_group(spec)
    path = tmp_path_factory.mktemp("sdk_model") / "model.onnx"
    path.write_bytes(model.SerializeToString())
    x = deterministic_input(M, spec.K, np.int8)
    return path, reference.reference_run(model, {model.graph.input[0].name: x})[0].reshape(-1)


def run_host(host, prefix, ort_runtime_lib, model_path):
    path, expected = model_path
    result = subprocess.run(
        [host, ort_runtime_lib, prefix / "lib" / "libonebit_ep.so", path, str(M), "48"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "devices: 1", result.stdout
    np.testing.assert_array_equal(np.array(lines[2].split()[1:], dtype=np.int64), expected.astype(np.int64))
    assert lines[3] == f"library: {header_define('ONEBIT_EP_NAME')} {header_define('ONEBIT_EP_VERSION')}"
    assert "onebit: group_runs=1 groups=1 " in result.stderr, result.stderr
    # The host was linked against the unpacked library, not a build tree's.
    ldd = subprocess.run(["ldd", host], capture_output=True, text=True, check=True).stdout
    assert re.search(rf"libonebit_ep\.so => {re.escape(str(prefix))}/lib/libonebit_ep\.so", ldd), ldd


def test_sdk_holds_library_header_cmake_package_and_pkg_config(prefix):
    files = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*") if p.is_file())
    assert files == [
        "include/onebit_ep.h",
        "lib/cmake/onebit_ep/onebit_ep-config-version.cmake",
        "lib/cmake/onebit_ep/onebit_ep-config.cmake",
        "lib/cmake/onebit_ep/onebit_ep-targets-release.cmake",
        "lib/cmake/onebit_ep/onebit_ep-targets.cmake",
        "lib/libonebit_ep.so",
        "lib/pkgconfig/onebit_ep.pc",
        "share/doc/onebit_ep/LICENSE",
    ], files
    assert (prefix / "include/onebit_ep.h").read_bytes() == (REPO / "include/onebit_ep.h").read_bytes()
    needed = subprocess.run(
        ["readelf", "-d", prefix / "lib/libonebit_ep.so"], capture_output=True, text=True, check=True
    ).stdout
    assert "libonnxruntime" not in needed, needed


def test_c_host_builds_with_find_package_and_runs_exactly(tmp_path, prefix, ort_runtime_lib, model_path):
    build = tmp_path / "build"
    subprocess.run(
        [
            "cmake",
            "-S",
            REPO / "test/host",
            "-B",
            build,
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={prefix}",
            f"-DORT_INCLUDE_DIR={ort_include_dir()}",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True, timeout=300)
    run_host(build / "onebit_c_host", prefix, ort_runtime_lib, model_path)


def test_c_host_builds_with_pkg_config_and_runs_exactly(tmp_path, prefix, ort_runtime_lib, model_path):
    env = {**os.environ, "PKG_CONFIG_PATH": str(prefix / "lib/pkgconfig")}

    def pkg_config(*args):
        return subprocess.run(
            ["pkg-config", *args, "onebit_ep"], env=env, capture_output=True, text=True, check=True
        ).stdout.split()

    assert pkg_config("--modversion") == [header_define("ONEBIT_EP_VERSION")]
    [libdir] = pkg_config("--variable=libdir")
    host = tmp_path / "onebit_c_host"
    subprocess.run(
        [
            "g++",
            "-std=c++20",
            "-O2",
            REPO / "test/host/onebit_c_host.cpp",
            "-o",
            host,
            f"-I{ort_include_dir()}",
            *pkg_config("--cflags", "--libs"),
            "-ldl",
            f"-Wl,-rpath,{os.path.realpath(libdir)}",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    run_host(host, prefix, ort_runtime_lib, model_path)
