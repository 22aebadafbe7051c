#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shipped binaries must load wherever ORT itself does: no glibc symbol newer than 2.28 and no
# libstdc++ symbol newer than GLIBCXX_3.4.22 (what onnxruntime-node's libonnxruntime needs).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for binary in prebuilds/linux-x64/libonebit_ep.so prebuilds/linux-x64/onebit-ep.node; do
  [ -f "$binary" ] || { echo "missing $binary (run npm run prebuild)"; status=1; continue; }
  glibc=$(objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
  glibcxx=$(objdump -T "$binary" | grep -o 'GLIBCXX_[0-9.]*' | sed 's/GLIBCXX_//' | sort -V | tail -1)
  echo "$binary: needs GLIBC_$glibc, GLIBCXX_$glibcxx"
  if [ "$(printf '%s\n2.28\n' "$glibc" | sort -V | tail -1)" != "2.28" ]; then
    echo "  too new a glibc symbol:"; objdump -T "$binary" | grep -E "GLIBC_$glibc\b"; status=1
  fi
  if [ "$(printf '%s\n3.4.22\n' "$glibcxx" | sort -V | tail -1)" != "3.4.22" ]; then
    echo "  too new a libstdc++ symbol:"; objdump -T "$binary" | grep -E "GLIBCXX_$glibcxx\b"; status=1
  fi
done
exit $status
