#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sanitizer job: the library, the C host and the C++ tests built with ASan + UBSan, including
# float-cast-overflow (GCC's -fsanitize=undefined leaves it out: it is what caught a NaN bias cast
# to int8), any report fatal. Runs ctest, then the Python suite against the sanitized library with
# libasan preloaded (the Python interpreter and ORT are not instrumented; their allocations go
# through ASan's allocator all the same). Leak checks are off: ORT and Python keep process-lifetime
# allocations. test_memory.py is left out: its address-space limits cannot hold ASan's shadow
# memory, and its RSS bounds do not apply to an instrumented build. The model builder's own tests
# (marker builder) are left out: they run no EP code; so are other memory bounds (marker memory),
# and test_genai.py: onnxruntime-genai's own engine is not ours, and the EP paths it drives are
# those of the SmolLM2 tests. Then the Node addon's binding tests, against the addon so built.
# Speed numbers never come from this build.
set -euo pipefail
cd "$(dirname "$0")/.."

flags="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer"
# -O1 -g1: quicker to build than -O2 -g, and line numbers in every report.
cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG"
cmake --build build/sanitize

export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build/sanitize --output-on-failure

export ONEBIT_EP_LIB="$PWD/build/sanitize/libonebit_ep.so"
export ONEBIT_C_HOST="$PWD/build/sanitize/onebit_c_host"
export ONEBIT_ORT_LIB="$PWD/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
# Reports also go to files: the tests capture the stderr of the sessions they run, so a report
# would otherwise show only as "Fatal Python error: Aborted".
reports="$PWD/build/sanitize/reports"
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$reports/asan"
export UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$reports/ubsan"
# libstdc++ is preloaded with libasan: Python does not link it, and ASan's __cxa_throw interceptor
# must find it at start-up (else the EP's first exception aborts in an ASan CHECK).
status=0
LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libstdc++.so)" \
  .venv/bin/python -m pytest test/python -q -p no:cacheprovider --ignore=test/python/test_memory.py --ignore=test/python/test_genai.py -m "not builder and not memory" \
  || status=$?

# The Node addon and its EP library, built by cmake-js with the same sanitizers, under the binding
# tests (runs crossing to the addon, kept values, pre-allocated and fed-back buffers, worker
# teardown). Node is not instrumented; libasan and libubsan are preloaded, and ASan leaves SIGSEGV
# to Node (V8 uses it). ONEBIT_ADDON makes the package load this build instead of the prebuild.
node node_modules/cmake-js/bin/cmake-js build --out build/addon-sanitize --config Release \
  --CDONEBIT_BUILD_TESTS=OFF --generator Ninja --CDCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG $flags" \
  --CDCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" --CDONEBIT_ADDON_OUTPUT_DIR="$PWD/build/addon-sanitize/out"
export ONEBIT_ADDON="$PWD/build/addon-sanitize/out/onebit-ep.node"
export ONEBIT_EP_LIB="$PWD/build/addon-sanitize/out/libonebit_ep.so"
node_preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
LD_PRELOAD="$node_preload" ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0" node -e '
  require("./dist/native.js").loadNative();
  const maps = require("fs").readFileSync("/proc/self/maps", "utf8");
  if (!maps.includes(process.env.ONEBIT_ADDON)) throw new Error("the sanitized addon is not the one loaded");'
LD_PRELOAD="$node_preload" ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0" npx vitest run \
  test/ts/run_plan.test.ts test/ts/preallocated_outputs.test.ts test/ts/output_buffers.test.ts \
  test/ts/input_buffers.test.ts test/ts/concurrency.test.ts test/ts/api.test.ts test/ts/errors.test.ts \
  || status=$?
if compgen -G "$reports/*" >/dev/null; then
  cat "$reports"/*
  status=1
fi
exit $status
