#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packages as users get them (CI runs this after npm test): builds the wheel and the SDK tarball,
# then test/package installs the wheel in fresh virtual environments next to real onnxruntime
# releases (and an older one it must refuse), and builds the C host against the unpacked SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build_wheel.sh
bash scripts/build_sdk.sh
export ONEBIT_ORT_LIB="$PWD/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
.venv/bin/python -m pytest test/package -q
