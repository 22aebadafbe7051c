#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Builds the addon and the EP library with cmake-js into build/Release, using its own CMake build
// folder (build/addon) so the plain native build in build/native is left alone. prebuildify calls
// this in place of node-gyp (`rebuild --target=... --release`): those arguments are ignored.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [root] });
const hasNinja = spawnSync('ninja', ['--version'], { stdio: 'ignore' }).status === 0;

const args = [
  cmakeJs,
  'build',
  '--out',
  path.join('build', 'addon'),
  '--config',
  'Release',
  '--CDONEBIT_BUILD_TESTS=OFF',
];
if (hasNinja) args.push('--generator', 'Ninja');
if (process.env.ORT_INCLUDE_DIR) args.push(`--CDORT_INCLUDE_DIR=${process.env.ORT_INCLUDE_DIR}`);

const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
process.exit(result.status === null ? 1 : result.status);
