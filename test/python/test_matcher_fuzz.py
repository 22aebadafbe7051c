# SPDX-License-Identifier: Apache-2.0
"""The matcher fuzzer (matcher_fuzz.py) over fixed seeds, each batch in its own process: no crash,
no hang, the EP never fails where ORT's CPU EP runs nor runs what ORT refuses, and the outputs
agree in shape and type. Seed 7 found a one-value weight zero point of rank 2 that the EP ran."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.parametrize("seed", [1, 2, 3, 7])
def test_mutated_models_are_claimed_safely_or_declined(seed, ep_lib):
    ran = subprocess.run(
        [sys.executable, str(HERE / "matcher_fuzz.py"), str(seed), "300"],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ,
    )
    assert ran.returncode in (0, 1), f"seed {seed}: the fuzz process died ({ran.returncode}): {ran.stderr[-2000:]}"
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert report["problems"] == [], report["problems"]
    stats = report["stats"]
    assert stats["mutants"] == 300 and stats["both_ran"] > 50, stats  # the mutants still exercise claims
