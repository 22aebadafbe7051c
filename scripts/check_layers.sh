#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layers point one way: ts -> bindings -> (ep, probes) ; ep -> engine ; probes -> engine ;
# engine -> kernels + npu ; npu/emu -> npu -> base. kernels/, base/, npu/ and engine/ know nothing
# of ORT, nothing of Node, and nothing of the layers above them. Fails on any include (or, in ts/,
# any import) that breaks that. Each folder is checked alone: npu/ does not cover npu/emu/.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

# forbid FOLDER PATTERN WHY [FILE:HEADER...]: no C++ source directly in FOLDER may include a header
# matching PATTERN, except the FILE:HEADER pairs named (each one explained in FOLDER/README.md).
forbid() {
  local folder=$1 pattern=$2 why=$3 hits allowed
  shift 3
  hits=$(git ls-files --cached --others --exclude-standard -- "$folder/*.cpp" "$folder/*.h" |
    awk -v dir="$folder" '{ d = $0; sub(/\/[^\/]*$/, "", d); if (d == dir) print }' |
    xargs -r grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($pattern)" || true)
  for allowed in "$@"; do
    hits=$(grep -vE "^${allowed%%:*}:[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*\"${allowed#*:}\"" <<<"$hits" || true)
  done
  if [ -n "$hits" ]; then
    echo "layering: $folder/ $why:"
    echo "$hits"
    status=1
  fi
}

ort='onnxruntime|onebit_ep\.h'
node='napi\.h|node_api|node\.h'
forbid base "$ort|$node|kernels/|npu/|engine/|ep/|probes/|bindings/" "is the bottom utilities (base only)"
forbid kernels "$ort|$node|base/|npu/|engine/|ep/|probes/|bindings/" "is the bottom layer (kernels only)"
# The core reaches the emulator in two places, until a backend registry and a shared tiling rule
# cut them (npu/README.md, "Where the core still reaches the emulator").
forbid npu "$ort|$node|kernels/|npu/emu/|engine/|ep/|probes/|bindings/" \
  "is the device-facing core (base only; the emulator sits above it)" \
  npu/device_select.h:npu/emu/emu_device.h \
  npu/cost_model.cpp:npu/emu/design_builder.h
forbid npu/emu "$ort|$node|kernels/|engine/|ep/|probes/|bindings/" "is the emulator (npu and base only)"
# The engine holds the session's design cache (engine/README.md); it never opens the emulator itself.
forbid engine "$ort|$node|npu/emu/|ep/|probes/|bindings/" "is ORT-free (kernels, base and npu only)" \
  engine/session_device.h:npu/emu/design_cache.h
forbid probes "$ort|$node|npu/emu/|ep/|bindings/" "is ORT-free (it calls the engine)"
forbid ep "$node|npu/emu/|probes/|bindings/" "is ORT glue (no Node, no probes)"
forbid bindings "npu/emu/|ts/" "is the Node addon (the C++ layers' headers, not the emulator's)"

# ts/ reaches native code only through the addon, which ts/native.ts loads: no relative import
# leaves ts/, and nothing else loads a .node file or node-gyp-build.
ts_hits=""
while IFS=: read -r file line spec; do
  target=$(realpath -m --relative-to=. "$(dirname "$file")/$spec")
  case "$target" in ts/*) ;; *) ts_hits+="$file:$line: '$spec' leaves ts/"$'\n' ;; esac
done < <(git ls-files --cached --others --exclude-standard -- 'ts/*.ts' 'ts/*.mts' 'ts/*.cts' |
  xargs -r grep -noE "(from|import|require)[[:space:]]*\(?[[:space:]]*['\"]\.[^'\"]*['\"]" |
  sed -E "s/:(from|import|require)[[:space:]]*\(?[[:space:]]*['\"]([^'\"]*)['\"]$/:\2/")
ts_hits+=$(git ls-files --cached --others --exclude-standard -- 'ts/*.ts' 'ts/*.mts' 'ts/*.cts' |
  grep -vx 'ts/native.ts' | xargs -r grep -nE "node-gyp-build|\.node['\"]" || true)
if [ -n "$ts_hits" ]; then
  echo "layering: ts/ loads native code only through ts/native.ts (the addon):"
  echo "$ts_hits"
  status=1
fi

[ $status -eq 0 ] && echo "layers: kernels, base, npu, engine and probes are ORT-free; includes point one way"
exit $status
