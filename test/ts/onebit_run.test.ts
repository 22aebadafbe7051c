// SPDX-License-Identifier: Apache-2.0
// onebit-run on the default model: its report's fields (not its timings), and its usage errors.
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { HOST_KERNELS } from '../../ts/names.js';
import { repoRoot, runNode } from './helpers/package.js';

const cli = path.join(repoRoot, 'dist', 'apps', 'cli', 'onebit_run.js');
const cache = mkdtempSync(path.join(os.tmpdir(), 'onebit-cache-'));
const env = { ONEBIT_CACHE_DIR: cache };

describe('onebit-run', () => {
  it('runs the default model and reports speed, agreement, memory and counters (JSON)', () => {
    const ran = runNode(
      [cli, '--model', 'stack', '--json', '--lens', '1,4', '--warmup', '1', '--repeat', '2', '--layers', '1'],
      repoRoot,
      env,
    );
    expect(ran.stderr).toBe(''); // not a TTY: no progress output
    expect(ran.status).toBe(0);
    const report = JSON.parse(ran.stdout);
    expect(report.model).toMatchObject({ defaultModel: true, layers: 1, groups: 7 });
    const name = path.basename(report.model.path);
    expect(readdirSync(cache).sort()).toEqual([name, `${name}.data`]); // the weights in an external-data file
    expect(report.ortVersion).toBe('1.30.0');
    // ORT's uint8 x int8 kernel checked on this CPU: all 16 outputs of the check right, or some wrong.
    expect(report.ortInt8.outputs).toBe(16);
    expect(report.ortInt8.exact).toBe(report.ortInt8.wrongOutputs === 0);
    expect(report.lengths.map((l: { len: number }) => l.len)).toEqual([1, 4]);
    for (const l of report.lengths) {
      for (const arm of [l.onebit, l.cpu]) {
        expect(arm.runs).toBe(2);
        expect(arm.minMs).toBeLessThanOrEqual(arm.medianMs);
        expect(arm.medianMs).toBeLessThanOrEqual(arm.maxMs);
      }
      expect(l.speedup).toBeCloseTo(l.cpu.medianMs / l.onebit.medianMs, 6);
      expect(l.agreement.int8DifferingFraction).toBeGreaterThanOrEqual(0);
      expect(l.agreement.int8DifferingFraction).toBeLessThan(0.05); // exact int32 vs ORT's float path: rare 1-LSB ties
      expect(l.agreement.klDivergence).toBeNull(); // int8 outputs only
    }
    expect(report.peakRssMiB.total).toBeGreaterThanOrEqual(report.peakRssMiB.onebitPhase);
    expect(report.peakRssMiB.onebitPhase).toBeGreaterThan(10);
    // 7 groups x 2 lengths x (1 warm-up + 2 timed runs): every claimed group ran on every call.
    expect(report.counters).toMatchObject({ groupRuns: 42, groups: 7, deviceCalls: 0 }); // device auto: none in this build
    expect(report.expectedGroupRuns).toBe(42);
  });

  it('prints a table by default, reusing the cached model', () => {
    const ran = runNode(
      [cli, '--model', 'stack', '--lens', '2', '--repeat', '1', '--warmup', '0', '--layers', '1'],
      repoRoot,
      env,
    );
    expect(ran.status).toBe(0);
    expect(ran.stdout).toMatch(/projection stack, 1 layers, 7 A8W8 QDQ groups/);
    expect(ran.stdout).toMatch(new RegExp(`host kernel (${HOST_KERNELS.join('|')}), `));
    expect(ran.stdout).toMatch(/^\s+2\s+[\d.]+ ms/m);
    expect(ran.stdout).toMatch(
      /ORT's uint8 x int8 kernel on this CPU: (exact \(VNNI\)|SATURATING \(AVX2 without VNNI)/,
    );
    expect(ran.stdout).toMatch(/peak RSS: [\d.]+ MiB/);
    expect(ran.stdout).toMatch(/counters: groupRuns=7 groups=7 .*\(expected groupRuns=7/);
    expect(readdirSync(cache)).toHaveLength(2);
  });

  it('says what is wrong with its arguments', () => {
    const unknown = runNode([cli, '--fast']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown option --fast; run onebit-run --help/);
    const device = runNode([cli, '--device', 'gpu']);
    expect(device.status).toBe(2);
    expect(device.stderr).toMatch(/--device takes auto, emu, none/);
    const missing = runNode([cli, '/nonexistent/model.onnx']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/model file not found: \/nonexistent\/model.onnx/);
    for (const [flag, value] of [
      ['--activations', 'int8'],
      ['--prompt-tokens', '40'],
    ]) {
      const smollm2Only = runNode([cli, '--model', 'stack', flag, value]);
      expect(smollm2Only.status).toBe(2);
      expect(smollm2Only.stderr).toMatch(new RegExp(`${flag} is a smollm2 option; --model stack does not take it`));
    }
    const help = runNode([cli, '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/usage: onebit-run \[--model smollm2\|stack \| model.onnx\]/);
  });
});

describe('onebit-run --warmup', () => {
  it('defaults to 0 for smollm2 (one timed generation, whatever --bench says) and to 1, or 3 with --bench, otherwise', async () => {
    const { parseArgs } = (await import('../../ts/apps/cli/args.js')) as typeof import('../../ts/apps/cli/args.js');
    expect(parseArgs([]).warmup).toBe(0);
    expect(parseArgs(['--bench']).warmup).toBe(0);
    expect(parseArgs(['--model', 'smollm2', '--warmup', '2']).warmup).toBe(2);
    expect(parseArgs(['--model', 'stack']).warmup).toBe(1);
    expect(parseArgs(['--model', 'stack', '--bench']).warmup).toBe(3);
    expect(parseArgs(['model.onnx']).warmup).toBe(1);
    expect(() => parseArgs(['--warmup', '-1'])).toThrow("--warmup needs an integer >= 0, got '-1'");
  });
});
