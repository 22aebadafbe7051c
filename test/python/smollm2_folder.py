# SPDX-License-Identifier: Apache-2.0
"""The 2-layer SmolLM2 model folder the tests share, built by the builder's command (models/)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "models"))
import build_smollm2  # noqa: E402

LAYERS = 2


def builder_env() -> dict:
    """This environment without the sanitizer job's preload: the builder runs no code of the EP, and
    ORT's quantization under ASan's allocator took minutes."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def build(tmp_path_factory) -> tuple[pathlib.Path, dict]:
    """(model folder, manifest) of the 2-layer model with all its models, built by the builder's
    command in ONEBIT_TEST_CACHE_DIR when set (CI's test jobs share one fresh folder: built once per
    run), else in a temporary folder."""
    cache = os.environ.get("ONEBIT_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("smollm2"))
    command = [
        sys.executable,
        build_smollm2.__file__,
        "--cache-dir",
        cache,
        "--layers",
        str(LAYERS),
        "--activations",
        "int8",
        "--weights",
        "int4",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=builder_env(), timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    out = pathlib.Path(done.stdout.strip().splitlines()[-1])
    return out, json.loads((out / build_smollm2.MANIFEST).read_text())
