// SPDX-License-Identifier: Apache-2.0
// onebit-run --cost-model on the one-layer projection stack: the host arm and the device arm
// with the route policy on and off, whose device calls carry their modelled times (checked
// against the cost model worked by hand), labelled as modelled; its usage error.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { PROJECTIONS } from '../../ts/model/projection_stack.js';
import { repoRoot, runNode } from './helpers/package.js';

const cli = path.join(repoRoot, 'dist', 'cli', 'onebit_run.js');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-modelled-arm-'));
// A private model cache, design cache and device lock.
const env = { ONEBIT_CACHE_DIR: path.join(tmp, 'models'), XDG_CACHE_HOME: path.join(tmp, 'cache'), XDG_RUNTIME_DIR: tmp, ONEBIT_DEVICE: '' };

// One call of `rows` <= 4 rows on xdna1, by hand: two syncs of 10 µs plus rows × (K + 4N) bytes
// at 20 GB/s, a 50 µs launch, one m4 launch streaming the K×N weights and 4 rows of A and C at
// 51.2 GB/s (these shapes fill the design's tiles exactly). In ms.
function xdna1SmallCallMs(K: number, N: number, rows: number): number {
  return (20 + (rows * (K + 4 * N)) / 20e3 + 50 + (K * N + 4 * K + 16 * N) / 51.2e3) / 1000;
}

describe('onebit-run --cost-model', () => {
  it('reports the host arm and the modelled device arm per phase, policy on and off', () => {
    const ran = runNode([cli, '--device', 'emu', '--cost-model', 'xdna1', '--layers', '1', '--lens', '1,4', '--warmup', '0', '--repeat', '1', '--json'], repoRoot, env);
    // The traced device sessions print their counter lines at release (the trace option's way).
    for (const line of ran.stderr.trimEnd().split('\n')) expect(line).toMatch(/^onebit: qdq runs=7 groups=7 /);
    expect(ran.status).toBe(0);
    const { modelled } = JSON.parse(ran.stdout);
    expect(modelled.costModel).toBe('xdna1');
    expect(modelled.phases.map((p: { len: number; phase: string }) => [p.len, p.phase])).toEqual([[1, 'decode'], [4, 'prefill']]);
    for (const p of modelled.phases) {
      expect(p.hostMs).toBeGreaterThan(0);
      // Policy on: fewer rows than min_device_rows (8): nothing goes to the device.
      expect(p.policyOn).toMatchObject({ deviceCallsPerRun: 0, emulatedDeviceMs: 0, modelledDeviceMs: 0 });
      // Policy off: every group on the device, each call modelled.
      expect(p.policyOff.deviceCallsPerRun).toBe(PROJECTIONS.length);
      const expected = PROJECTIONS.reduce((s, g) => s + xdna1SmallCallMs(g.k, g.n, p.len), 0);
      expect(p.policyOff.modelledDeviceMs).toBeCloseTo(expected, 4);
      for (const arm of [p.policyOn, p.policyOff])
        expect(arm.modelledMs).toBeCloseTo(Math.max(0, arm.measuredMs - arm.emulatedDeviceMs) + arm.modelledDeviceMs, 9);
    }
    const text = runNode([cli, '--device', 'emu', '--cost-model', 'xdna1', '--layers', '1', '--lens', '1', '--warmup', '0', '--repeat', '1'], repoRoot, env);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/modelled device arm on xdna1, per run \(median\): MODELLED device calls/);
    expect(text.stdout).toMatch(/^ +1 +decode +[\d.]+ +[\d.]+ +0 +[\d.]+ +7$/m);
  });

  it('needs the emulated device and a known generation', () => {
    const none = runNode([cli, '--cost-model', 'xdna1']);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/--cost-model models the emulated device: use it with --device emu/);
    const bad = runNode([cli, '--device', 'emu', '--cost-model', 'tpu']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--cost-model takes xdna1, xdna2 or a cost file ending in .json, got 'tpu'/);
  });
});
