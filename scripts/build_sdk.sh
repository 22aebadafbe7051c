#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the C/C++ SDK tarball into dist-sdk/: libonebit_ep.so (glibc-portable symbols), its public
# header, the CMake package (find_package(onebit_ep) -> onebit::ep) and the pkg-config file.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^#define ONEBIT_EP_VERSION "\(.*\)"$/\1/p' include/onebit_ep.h)
name="onebit_ep-$version-linux-x86_64"
# The wheel's build tree (pyproject.toml), with its options: after `npm run wheel` nothing recompiles.
build=build/dist
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DONEBIT_BUILD_TESTS=OFF -DONEBIT_BUILD_TOOLS=OFF -DONEBIT_PORTABLE_GLIBC=ON >/dev/null
cmake --build "$build"
rm -rf build/sdk-stage && mkdir -p dist-sdk
cmake --install "$build" --component sdk --prefix "build/sdk-stage/$name" --strip >/dev/null
tar -C build/sdk-stage -czf "dist-sdk/$name.tar.gz" "$name"
echo "dist-sdk/$name.tar.gz"
