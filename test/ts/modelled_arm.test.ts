// SPDX-License-Identifier: Apache-2.0
// onebit-run --cost-model: the arms' arithmetic on hand-written traces (each timed run's span with
// its device calls' emulated times swapped for their modelled times; warm-ups left out), then the
// CLI on the one-layer projection stack (host arm, policy on and off, labelled as modelled) and
// its usage errors.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { InferenceSession } from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';

import { modelledArms, type ArmRunner } from '../../ts/apps/cli/modelled_arm.js';
import { PROJECTIONS } from '../../ts/apps/model/projection_stack.js';
import { repoRoot, runNode } from './helpers/package.js';

const cli = path.join(repoRoot, 'dist', 'apps', 'cli', 'onebit_run.js');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-modelled-arm-'));
// A private model cache, design cache and device lock.
const env = {
  ONEBIT_CACHE_DIR: path.join(tmp, 'models'),
  XDG_CACHE_HOME: path.join(tmp, 'cache'),
  XDG_RUNTIME_DIR: tmp,
  ONEBIT_DEVICE: '',
};

// One call of `rows` <= 4 rows on xdna1, by hand: two syncs of 10 µs plus rows × (K + 4N) bytes
// at 20 GB/s, a 50 µs launch, one m4 launch streaming the K×N weights and 4 rows of A and C at
// 51.2 GB/s (these shapes fill the design's tiles exactly). In ms.
function xdna1SmallCallMs(K: number, N: number, rows: number): number {
  return (20 + (rows * (K + 4 * N)) / 20e3 + 50 + (K * N + 4 * K + 16 * N) / 51.2e3) / 1000;
}

// A runner whose sessions write a trace of two calls a run at release: a host call of 100 µs,
// then 50 µs later, when the session has a device and min_device_rows 0, a device call whose
// device part took `deviceUs[run]` (plus 40 µs on the host; modelled 30 µs), else a second host
// call of 200 µs.
function fakeRunner(deviceUs: number[]): ArmRunner {
  return {
    warmup: 1,
    repeat: deviceUs.length - 1,
    feeds: () => ({}),
    run: async () => undefined,
    create: async (options) =>
      ({
        release: async () => {
          const onDevice = options.device === 'emu' && options.minDeviceRows === 0;
          const traceEvents = deviceUs.flatMap((dur, run) => {
            const t = run * 10_000;
            const call = (ts: number, d: number, route: string, extra = {}) => ({
              name: 'gemm_q8 8x8',
              ph: 'X',
              ts,
              dur: d,
              args: { K: 8, N: 8, rows: 1, route, reason: route, ...extra },
            });
            return [
              call(t, 100, 'host'),
              onDevice
                ? call(t + 150, dur + 40, 'device', { device_us: dur, modelled_us: 30 })
                : call(t + 150, 200, 'host'),
            ];
          });
          writeFileSync(options.trace as string, JSON.stringify({ traceEvents, otherData: { cost_model: 'xdna1' } }));
        },
      }) as unknown as InferenceSession,
  };
}

describe('onebit-run --cost-model', () => {
  it("swaps each timed run's emulated device time for its modelled time, paired within the run", async () => {
    // Warm-up run 5000 µs (left out), timed runs 1000, 3000, 2000 µs of emulated device time.
    const arms = await modelledArms(fakeRunner([5000, 1000, 3000, 2000]), [1, 8], 'xdna1');
    expect(arms.costModel).toBe('xdna1');
    expect(arms.phases.map((p) => [p.len, p.phase])).toEqual([
      [1, 'decode'],
      [8, 'prefill'],
    ]);
    for (const p of arms.phases) {
      expect(p.hostMs).toBeCloseTo(0.35, 12); // span: 150 + 200 µs
      expect(p.policyOn).toEqual({ deviceCallsPerRun: 0, modelledMs: 0.35, measuredMs: 0.35 });
      // Spans 150 + 40 + 1000/3000/2000 µs: median 2190 µs; with the device part modelled:
      // 150 + 40 + 30 µs.
      expect(p.policyOff.deviceCallsPerRun).toBe(1);
      expect(p.policyOff.measuredMs).toBeCloseTo(2.19, 12);
      expect(p.policyOff.modelledMs).toBeCloseTo(0.22, 12);
    }
  });

  it('reports the host arm and the modelled device arm per phase, policy on and off', () => {
    const ran = runNode(
      [
        cli,
        '--model',
        'stack',
        '--device',
        'emu',
        '--cost-model',
        'xdna1',
        '--layers',
        '1',
        '--lens',
        '1,4',
        '--warmup',
        '1',
        '--repeat',
        '2',
        '--json',
      ],
      repoRoot,
      env,
    );
    // The traced sessions print their counter lines at release (the trace option's way).
    for (const line of ran.stderr.trimEnd().split('\n')) expect(line).toMatch(/^onebit: group_runs=\d+ groups=7 /);
    expect(ran.status).toBe(0);
    const { modelled } = JSON.parse(ran.stdout);
    expect(modelled.costModel).toBe('xdna1');
    expect(modelled.phases.map((p: { len: number; phase: string }) => [p.len, p.phase])).toEqual([
      [1, 'decode'],
      [4, 'prefill'],
    ]);
    for (const p of modelled.phases) {
      expect(p.hostMs).toBeGreaterThan(0);
      // Policy on: fewer rows than min_device_rows (8), nothing goes to the device.
      expect(p.policyOn.deviceCallsPerRun).toBe(0);
      expect(p.policyOn.modelledMs).toBe(p.policyOn.measuredMs);
      // Policy off: every group on the device; the modelled span holds at least the seven
      // modelled calls and less than the emulated run.
      expect(p.policyOff.deviceCallsPerRun).toBe(PROJECTIONS.length);
      const calls = PROJECTIONS.reduce((s, g) => s + xdna1SmallCallMs(g.k, g.n, p.len), 0);
      expect(p.policyOff.modelledMs).toBeGreaterThanOrEqual(calls - 1e-9);
      expect(p.policyOff.modelledMs).toBeLessThan(p.policyOff.measuredMs);
    }
    const text = runNode(
      [
        cli,
        '--model',
        'stack',
        '--device',
        'emu',
        '--cost-model',
        'xdna1',
        '--layers',
        '1',
        '--lens',
        '1',
        '--warmup',
        '0',
        '--repeat',
        '1',
      ],
      repoRoot,
      env,
    );
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/modelled device arm on xdna1, gemm_q8 span per run .*: MODELLED device calls/);
    expect(text.stdout).toMatch(/^ +1 +decode +[\d.]+ +[\d.]+ +0 +[\d.]+ +7$/m);
  });

  it('needs the emulated device and a known generation', () => {
    const none = runNode([cli, '--cost-model', 'xdna1']);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/--cost-model models the emulated device: use it with --device emu/);
    const bad = runNode([cli, '--device', 'emu', '--cost-model', 'tpu']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--cost-model takes xdna1, xdna2 or a cost file ending in .json, got 'tpu'/);
    const llm = runNode([cli, '--device', 'emu', '--cost-model', 'xdna1']);
    expect(llm.status).toBe(2);
    expect(llm.stderr).toMatch(/--cost-model runs the stack or a model file: add --model stack/);
  });

  it('refuses a bad cost file before anything runs (no model built, no arm run)', () => {
    const file = path.join(tmp, 'bad-cost.json');
    writeFileSync(file, '{"generation": "g", "launch_us": 50}');
    const models = path.join(tmp, 'models-untouched');
    const bad = runNode(
      [cli, '--model', 'stack', '--device', 'emu', '--cost-model', file, '--layers', '1', '--lens', '1'],
      repoRoot,
      { ...env, ONEBIT_CACHE_DIR: models },
    );
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(
      /^onebit-run: --cost-model .*bad-cost\.json: cost model .*bad-cost\.json: missing key "sync_call_us"/,
    );
    expect(bad.stdout).toBe('');
    expect(existsSync(models)).toBe(false); // the stack was never built: nothing ran before the check
  });
});
