// SPDX-License-Identifier: Apache-2.0
// The package under test, as Node loads it (compiled CommonJS in dist/), and process helpers.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const require = createRequire(import.meta.url);

export const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');
export const pkg = require(path.join(repoRoot, 'dist', 'index.js')) as typeof import('../../../ts/index.js');

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs node with `args` in `cwd`, extra environment `env`; never throws. */
export function runNode(args: string[], cwd = repoRoot, env: Record<string, string> = {}, timeout = 120_000): Ran {
  const result = spawnSync(process.execPath, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
