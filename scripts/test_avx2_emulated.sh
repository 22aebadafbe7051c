#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tests that compare with ORT's CPU EP, on an emulated AVX2 CPU without VNNI (qemu-user,
# -cpu Haswell), whatever CPU this machine has: ORT's MLAS and the EP both choose their kernels by
# CPUID, so ORT runs its saturating uint8 x int8 kernel and the EP its avx2 one, as on a real
# AVX2-only CPU (same wrong ORT outputs, checked on one). Correctness only: no timing means
# anything under emulation. Expects scripts/setup.sh's build, virtualenv and dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

# Haswell less the features qemu's TCG does not implement (it warns about each one otherwise).
cpu="Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm"
export ONEBIT_EMULATED_CPU=avx2
export ONEBIT_EP_LIB="${ONEBIT_EP_LIB:-$PWD/build/native/libonebit_ep.so}"

# The 2-layer SmolLM2 through onebit-run: only the node process is emulated (the model builder it
# starts runs natively, as qemu-user leaves programs a process executes to the host; CI's shared
# ONEBIT_TEST_CACHE_DIR already holds the model); its report is then checked natively with the
# native suite's bounds.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ONEBIT_CACHE_DIR="${ONEBIT_TEST_CACHE_DIR:-$work}" qemu-x86_64 -cpu "$cpu" "$(command -v node)" dist/apps/cli/onebit_run.js --layers 2 \
  --max-tokens 12 --prompt 'Name a colour.' --json > "$work/report.json"
ONEBIT_EMULATED_REPORT="$work/report.json" npx vitest run test/ts/emulated_avx2.test.ts

# The Python tests that compare with ORT, in one emulated process (pytest's summary line last).
t=test/python
qemu-x86_64 -cpu "$cpu" .venv/bin/python -m pytest -q -p no:cacheprovider \
  $t/test_ort_int8.py $t/test_activation_matmul.py $t/test_qdq_models.py $t/test_dynamic_quant.py \
  $t/test_static_quantize.py $t/test_conformance.py "$@"
