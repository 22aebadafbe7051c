#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layers point one way (DESIGN.md): ts -> bindings -> (ep, probes) ; ep -> engine ;
# probes -> engine ; engine -> kernels + npu. kernels/, npu/ and engine/ know nothing of ORT,
# nothing of Node, and nothing of the layers above them. Fails on any include that breaks that.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

# forbid FOLDER PATTERN WHY: no source in FOLDER may include a header matching PATTERN.
forbid() {
  local folder=$1 pattern=$2 why=$3 hits
  hits=$(git ls-files --cached --others --exclude-standard -- "$folder/*.cpp" "$folder/*.h" |
    xargs -r grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($pattern)" || true)
  if [ -n "$hits" ]; then
    echo "layering: $folder/ $why:"
    echo "$hits"
    status=1
  fi
}

ort='onnxruntime|onebit_ep\.h'
node='napi\.h|node_api|node\.h'
forbid kernels "$ort|$node|npu/|engine/|ep/|probes/|bindings/" "is the bottom layer (kernels only)"
forbid npu "$ort|$node|kernels/|engine/|ep/|probes/|bindings/" "is the device runtime (no ORT, no kernels, nothing above)"
forbid engine "$ort|$node|ep/|probes/|bindings/" "is ORT-free (kernels and npu only)"
forbid probes "$ort|$node|ep/|bindings/" "is ORT-free (it calls the engine)"
forbid ep "$node|probes/|bindings/" "is ORT glue (no Node, no probes)"

[ $status -eq 0 ] && echo "layers: kernels, npu, engine and probes are ORT-free; includes point one way"
exit $status
