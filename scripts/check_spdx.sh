#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file must carry an SPDX license line in its first three lines.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while IFS= read -r file; do
  if ! head -n 3 "$file" | grep -q "SPDX-License-Identifier:"; then
    echo "missing SPDX line: $file"
    status=1
  fi
done < <(git ls-files --cached --others --exclude-standard -- \
  '*.cpp' '*.h' '*.py' '*.sh' '*.ts' '*.js' '*.mjs' '*.cjs' '*.cmake' 'CMakeLists.txt' '*/CMakeLists.txt' '.ci/run')
[ $status -eq 0 ] && echo "spdx: all source files carry a license line"
exit $status
