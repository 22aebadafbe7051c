#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// npm install hook: use the prebuild for this platform if there is one that loads, otherwise build
// the addon and the EP library from source with cmake-js. (node-gyp-build's own fallback would run
// node-gyp, which knows nothing of this CMake project.)
'use strict';
const { existsSync } = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');

// A source checkout builds through scripts/setup.sh (npm ci runs this hook before anything is built).
if (existsSync(path.join(root, 'scripts', 'setup.sh'))) {
  console.log('onebit-ep: source checkout, the addon is built by scripts/setup.sh');
  process.exit(0);
}

function usablePrebuild() {
  try {
    const file = require('node-gyp-build').resolve(root);
    if (!existsSync(path.join(path.dirname(file), 'libonebit_ep.so'))) return null;
    require(file); // loads only the addon itself (glibc, Node-API version); ORT is loaded later
    return file;
  } catch {
    return null;
  }
}

const prebuild = usablePrebuild();
if (prebuild) {
  console.log(`onebit-ep: using ${path.relative(root, prebuild)}`);
  process.exit(0);
}

console.log('onebit-ep: no usable prebuild for this platform, building from source with cmake-js');
const result = spawnSync(process.execPath, [path.join(__dirname, 'cmake-js-build.cjs')], {
  cwd: root,
  stdio: 'inherit',
});
if (result.status !== 0) {
  console.error(
    'onebit-ep: the source build failed. It needs cmake >= 3.20, a C++20 compiler and ONNX Runtime C headers ' +
      '(API 29): set ORT_INCLUDE_DIR to the folder holding onnxruntime_c_api.h and run `npm rebuild onebit-ep`.',
  );
  process.exit(1);
}
