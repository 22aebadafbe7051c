#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lint and format checks over the tracked sources (CI runs it after setup.sh): clang-format for the
# C++, prettier and eslint for the TypeScript and Node scripts, ruff for the Python. The tools
# come from setup.sh (npm devDependencies; scripts/requirements-lint.txt in .venv), pinned, so
# every machine formats alike. `bash scripts/lint.sh --fix` rewrites the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
fix=false
[ "${1:-}" = "--fix" ] && fix=true

mapfile -t cxx < <(git ls-files '*.cpp' '*.h')
mapfile -t js < <(git ls-files '*.ts' '*.mts' '*.mjs' '*.cjs')
mapfile -t py < <(git ls-files '*.py')

if $fix; then
  .venv/bin/clang-format -i "${cxx[@]}"
  npx prettier --log-level warn --write "${js[@]}"
  npx eslint --fix "${js[@]}"
  .venv/bin/ruff check --fix "${py[@]}"
  .venv/bin/ruff format "${py[@]}"
else
  .venv/bin/clang-format --dry-run --Werror "${cxx[@]}"
  npx prettier --log-level warn --check "${js[@]}"
  npx eslint "${js[@]}"
  .venv/bin/ruff check "${py[@]}"
  .venv/bin/ruff format --check "${py[@]}"
fi
echo "lint: ${#cxx[@]} C++, ${#js[@]} TypeScript/JavaScript and ${#py[@]} Python files clean"
