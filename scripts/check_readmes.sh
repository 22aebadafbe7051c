#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Folder READMEs stay true: every folder holding source or test files has a README.md that names
# each of them (its base name, as a whole word). A newcomer reads a folder's README first; a file
# it does not mention is one they cannot find. Fails listing every file a README leaves out.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
while IFS= read -r file; do
  name=${file##*/}
  case $file in
    */*) folder=${file%/*} ;;
    *) folder=. ;;
  esac
  case $folder in
    # The wheel ships this folder whole, so no README may sit there: python/README.md names its files.
    python/onnxruntime_ep_onebit) readme=python/README.md ;;
    *) readme=$folder/README.md ;;
  esac
  if [ ! -f "$readme" ]; then
    echo "readmes: $readme is missing (it must name $name)"
    status=1
  elif ! grep -qwF -- "$name" "$readme"; then
    echo "readmes: $readme does not name $name"
    status=1
  fi
done < <(git ls-files --cached --others --exclude-standard -- \
           '*.cpp' '*.h' '*.ts' '*.mts' '*.py' '*.mjs' '*.sh' ':!:node_modules/**' | sort -u)

[ $status -eq 0 ] && echo "readmes: every source and test file is named in its folder's README.md"
exit $status
