#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test: license lines, C++ unit tests (ctest), the Node package (vitest), a smoke run
# of the benchmark harness, and the cross-runtime Python tests (pytest, last: its summary line
# closes the output).
set -euo pipefail
cd "$(dirname "$0")/.."

cmake --build build/native
bash scripts/check_spdx.sh
bash scripts/check_layers.sh
bash scripts/check_readmes.sh
node scripts/check_ts_imports.mjs
ctest --test-dir build/native --output-on-failure

# The Node package: rebuild what changed, then the vitest suites (public API against ORT's CPU EP,
# dtypes, concurrency, errors, CJS/ESM consumers, the packed package, onebit-run, device tools).
npm run build:ts
npm run prebuild
bash scripts/check_symbol_versions.sh
npx vitest run  # the package finds its own EP library

export ONEBIT_EP_LIB="$PWD/build/native/libonebit_ep.so"
export ONEBIT_C_HOST="$PWD/build/native/onebit_c_host"
export ONEBIT_ORT_LIB="$PWD/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"

# The benchmark harness on tiny sizes: it runs end to end (its numbers mean nothing).
.venv/bin/python bench/bench_ort.py --smoke
.venv/bin/python bench/bench_dynamic.py --smoke
node bench/calls.bench.mjs --smoke

.venv/bin/python -m pytest test/python -q
