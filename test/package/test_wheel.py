# SPDX-License-Identifier: Apache-2.0
"""The wheel onnxruntime-ep-onebit: what it holds, its manylinux tag, and the README's Python
example run exactly in fresh virtual environments next to real onnxruntime releases."""

from __future__ import annotations

import email.parser
import json
import re
import subprocess
import zipfile

import numpy as np
import pytest
from conftest import REPO, SEEN, SUPPORTED_ORT, header_define

GLIBC_FLOOR = (2, 28)  # what ORT itself needs: the wheel must not need more


def readme_python_example() -> str:
    """The first python block of the README's "Use it from Python" section, verbatim."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Use it from Python", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_wheel_holds_the_library_and_nothing_of_ort(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = email.parser.Parser().parsestr(
            z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        )
    package = sorted(n for n in names if n.startswith("onnxruntime_ep_onebit/") and not n.endswith("/"))
    assert package == [
        "onnxruntime_ep_onebit/__init__.py",
        "onnxruntime_ep_onebit/libonebit_ep.so",
        "onnxruntime_ep_onebit/py.typed",
    ], names
    assert not [n for n in names if "onnxruntime.so" in n or "libonnxruntime" in n], names
    assert metadata["Name"] == "onnxruntime-ep-onebit"
    assert metadata["Version"] == header_define("ONEBIT_EP_VERSION")
    assert metadata.get_all("Requires-Dist") is None, metadata.get_all("Requires-Dist")


def test_auditwheel_confirms_the_manylinux_tag(wheel):
    """auditwheel reads the library's versioned symbols: the tag in the file name must be the one
    they allow, and no newer than the glibc ORT itself needs."""
    result = subprocess.run(
        [REPO / "build" / "wheel-tools" / "bin" / "auditwheel", "show", wheel],
        capture_output=True,
        text=True,
        check=True,
    )
    text = " ".join(result.stdout.split())
    allowed = re.search(r'consistent with the following platform tag: "(manylinux_(\d+)_(\d+)_x86_64)"', text)
    assert allowed, text
    assert wheel.name.endswith(f"-py3-none-{allowed.group(1)}.whl"), (wheel.name, text)
    assert (int(allowed.group(2)), int(allowed.group(3))) <= GLIBC_FLOOR, text
    SEEN.append(f"auditwheel: {wheel.name} is consistent with {allowed.group(1)}")


@pytest.mark.parametrize("ort_requirement", SUPPORTED_ORT)
def test_readme_example_runs_exactly_in_a_fresh_venv(tmp_path, venvs, qdq_case, ort_requirement):
    python = venvs[ort_requirement]
    script = tmp_path / "readme_example.py"
    script.write_text(readme_python_example() + "\n" + (REPO / "test/package/after_readme.py").read_text())
    result = subprocess.run([python, script], cwd=qdq_case.folder, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout.splitlines()[-1])

    np.testing.assert_array_equal(np.array(run["output"], dtype=run["dtype"]), qdq_case.expected)
    assert run["dtype"] == "int8"
    # The EP ran the group (its trace line, printed when the session is released) ...
    assert re.search(r"^onebit: group_runs=1 groups=1 ", result.stderr, re.M), result.stderr
    assert run["providers"][0] == header_define("ONEBIT_EP_NAME"), run["providers"]
    # ... in the onnxruntime asked for; one device, named and versioned as the package says.
    if ort_requirement != "onnxruntime":
        assert run["ort_version"] == ort_requirement.split("==")[1]
    version = header_define("ONEBIT_EP_VERSION")
    assert run["package_version"] == run["library_version"] == version
    assert run["ep_names"] == [run["ep_name"]] == [header_define("ONEBIT_EP_NAME")]
    [device] = run["devices"]
    assert (device["ep_name"], device["vendor"], device["type"]) == (
        run["ep_name"],
        "onebit-ep",
        "OrtHardwareDeviceType.CPU",
    ), device
    assert device["metadata"]["version"] == version, device  # the factory's GetVersion
    assert run["library_path"].startswith(str(python.parent.parent)) and run["library_path"].endswith(
        "/libonebit_ep.so"
    )
    assert device["metadata"].get("library_path", run["library_path"]) == run["library_path"], device
    SEEN.append(
        f"{ort_requirement}: onnxruntime {run['ort_version']} ran the README example exactly on "
        f"{run['providers'][0]} {version}"
    )
    assert tuple(run["min_ort_version"]) == (1, run["library_api"]), (run["min_ort_version"], run["library_api"])
