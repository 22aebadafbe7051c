// SPDX-License-Identifier: Apache-2.0
// The package as a user gets it: `npm pack`, installed into a fresh folder next to onnxruntime-node,
// then a QDQ model through executionProviders: ['onebit'] (CJS and ESM) and the onebit-run bin.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { exactQdq, qdqGroup } from './helpers/models.js';
import { repoRoot, runNode } from './helpers/package.js';

const group = qdqGroup();
const consumer = mkdtempSync(path.join(os.tmpdir(), 'onebit-packed-'));
// The installed package must find its own EP library, not one a developer pointed at.
const ownLibrary = { ONEBIT_EP_LIB: '' };
const model = path.join(consumer, 'group.onnx');

function npm(args: string[], cwd: string): string {
  const result = spawnSync('npm', args, {
    cwd,
    encoding: 'utf8',
    timeout: 240_000,
    // onnxruntime-node's postinstall would try to download CUDA libraries.
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', npm_config_audit: 'false', npm_config_fund: 'false' },
  });
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe('packed package in a fresh consumer', () => {
  beforeAll(() => {
    // dist/ and prebuilds/ are fresh (scripts/test.sh builds them): pack without re-running prepack.
    const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', consumer], repoRoot));
    const files: string[] = packed[0].files.map((f: { path: string }) => f.path);
    expect(files).toContain('prebuilds/linux-x64/onebit-ep.node');
    expect(files).toContain('prebuilds/linux-x64/libonebit_ep.so');
    expect(files).toContain('dist/index.mjs');
    expect(files).toContain('dist/index.d.ts');
    expect(files.some((f) => f.startsWith('test/ts') || f.startsWith('build/'))).toBe(false);
    writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    // From the npm cache that npm ci filled; the registry only for metadata the cache lacks.
    npm(['install', '--prefer-offline', path.join(consumer, packed[0].filename), 'onnxruntime-node@1.30.0'], consumer);
    writeFileSync(model, group.bytes);
    for (const script of ['consumer.cjs', 'consumer.mjs'])
      copyFileSync(path.join(repoRoot, 'test', 'ts', 'fixtures', script), path.join(consumer, script));
  }, 300_000);

  it('installs the prebuild and uses it', () => {
    const installed = path.join(consumer, 'node_modules', 'onebit-ep');
    expect(readdirSync(path.join(installed, 'prebuilds', 'linux-x64')).sort()).toEqual([
      'libonebit_ep.so',
      'onebit-ep.node',
    ]);
    expect(existsSync(path.join(installed, 'build'))).toBe(false); // nothing was compiled
    const ran = runNode(
      ['-e', "const {onebit} = require('onebit-ep'); onebit.register(); console.log(onebit.epLibraryPath())"],
      consumer,
      ownLibrary,
    );
    expect(ran.stdout.trim()).toBe(path.join(installed, 'prebuilds', 'linux-x64', 'libonebit_ep.so'));
  });

  for (const script of ['consumer.cjs', 'consumer.mjs']) {
    it(`runs a QDQ model on the onebit EP (${script})`, () => {
      const rows = 2;
      const ran = runNode([script, model, String(rows), String(group.k)], consumer, ownLibrary);
      expect(ran.stderr).toBe('');
      const result = JSON.parse(ran.stdout);
      expect(result.counters).toMatchObject({ groupRuns: 1, groups: 1 }); // our EP ran the group
      const x = Int8Array.from({ length: rows * group.k }, (_, i) => ((i * 37 + 11) % 256) - 128);
      const exact = Array.from(exactQdq(group, x, rows));
      expect(Math.max(...result.y.map((v: number, i: number) => Math.abs(v - exact[i])))).toBeLessThanOrEqual(1);
    });
  }

  it('ships onebit-run as a bin', () => {
    const bin = path.join(consumer, 'node_modules', '.bin', 'onebit-run');
    const ran = spawnSync(
      bin,
      ['--model', 'stack', '--json', '--layers', '1', '--lens', '1', '--warmup', '0', '--repeat', '1'],
      {
        cwd: consumer,
        encoding: 'utf8',
        env: { ...process.env, ...ownLibrary, ONEBIT_CACHE_DIR: path.join(consumer, 'cache') },
      },
    );
    expect(ran.status).toBe(0);
    expect(JSON.parse(ran.stdout).counters).toMatchObject({ groupRuns: 7, groups: 7, deviceCalls: 0 });
  });

  it('ships ep-probe and ep-trace as bins', () => {
    const probe = spawnSync(
      path.join(consumer, 'node_modules', '.bin', 'ep-probe'),
      ['--shape', '16x8', '--rows', '2', '--repeat', '1', '--device', 'none', '--json'],
      {
        cwd: consumer,
        encoding: 'utf8',
      },
    );
    expect(probe.status).toBe(0);
    expect(JSON.parse(probe.stdout).rows.map((r: { rows: number }) => r.rows)).toEqual([2]);
    const trace = spawnSync(
      path.join(consumer, 'node_modules', '.bin', 'ep-trace'),
      [path.join(consumer, 'missing.json')],
      { cwd: consumer, encoding: 'utf8' },
    );
    expect(trace.status).toBe(1);
    expect(trace.stderr).toMatch(/no such trace file/);
  });
});
