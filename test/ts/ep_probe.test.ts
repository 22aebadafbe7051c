// SPDX-License-Identifier: Apache-2.0
// ep-probe on a small shape: output fields, the JSON schema, exactness, routes files (not timings).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import type { ProbeReport } from '../../ts/apps/cli/probe_report.js';
import { HOST_KERNELS } from '../../ts/names.js';
import { pkg, repoRoot, runNode } from './helpers/package.js';

const cli = path.join(repoRoot, 'dist', 'apps', 'cli', 'ep_probe.js');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-probe-'));
// A private design cache and device lock: never the user's, never another test file's.
const env = { XDG_RUNTIME_DIR: tmp, XDG_CACHE_HOME: path.join(tmp, 'cache'), ONEBIT_DEVICE: '' };
const small = ['--shape', '64x48', '--rows', '1,4,36', '--repeat', '3'];

interface SpreadJson {
  medianMs: number;
  minMs: number;
  maxMs: number;
}

function expectSpread(s: SpreadJson, extra: string[] = []): void {
  expect(Object.keys(s).sort()).toEqual(['maxMs', 'medianMs', 'minMs', ...extra].sort());
  expect(s.minMs).toBeGreaterThanOrEqual(0);
  expect(s.minMs).toBeLessThanOrEqual(s.medianMs);
  expect(s.medianMs).toBeLessThanOrEqual(s.maxMs);
}

function probeJson(args: string[]) {
  const ran = runNode([cli, ...args, '--json'], repoRoot, env);
  expect(ran.stderr).toBe('');
  expect(ran.status).toBe(0);
  return JSON.parse(ran.stdout);
}

describe('ep-probe', () => {
  it('prints the JSON document: shape, device, per-rows host and device timings, exact', () => {
    const report = probeJson(small);
    expect(Object.keys(report).sort()).toEqual(
      [
        'K',
        'N',
        'device',
        'deviceCounters',
        'deviceTimings',
        'hostKernel',
        'hostThreads',
        'modelledDeviceWinsFromRows',
        'repeat',
        'routesChosenOn',
        'routesFile',
        'rows',
        'schemaVersion',
        'seed',
        'shape',
        'tool',
      ].sort(),
    );
    expect(report).toMatchObject({
      tool: 'ep-probe',
      schemaVersion: 1,
      shape: '64x48',
      K: 64,
      N: 48,
      repeat: 3,
      seed: 1,
      hostThreads: 1,
      deviceTimings: 'emulated',
      routesFile: null,
      routesChosenOn: 'measured',
      modelledDeviceWinsFromRows: null,
    });
    expect(HOST_KERNELS).toContain(report.hostKernel);
    expect(report.device).toMatchObject({
      requested: 'emu',
      selected: 'emu',
      reason: 'option device=emu',
      name: 'emu',
      emulated: true,
      error: null,
      designsDir: path.join(tmp, 'cache', 'onebit-ep', 'designs'),
      designsBuilt: 2, // m32 and m4, into the fresh cache
      designsLoaded: 2,
      costModel: null,
    });
    expect(report.device.weightBytes).toBeGreaterThanOrEqual(64 * 48);
    expect(report.rows.map((r: { rows: number }) => r.rows)).toEqual([1, 4, 36]);
    const launches = [1, 1, 2]; // 1 and 4 rows: one m4 launch; 36 = m32 + m4
    report.rows.forEach((r: ProbeReport['rows'][number], i: number) => {
      expect(Object.keys(r).sort()).toEqual(['device', 'exact', 'host', 'modelledRatio', 'ratio', 'route', 'rows']);
      expectSpread(r.host);
      expectSpread(r.device, ['aBytes', 'breakdown', 'cBytes', 'cWhole', 'launches', 'modelled', 'paddedRows']);
      expect(r.device.modelled).toBeNull();
      expect(r.modelledRatio).toBeNull();
      for (const part of ['upload', 'launchWait', 'cSync', 'epilogue']) expectSpread(r.device.breakdown[part]);
      expect(r.device).toMatchObject({
        launches: launches[i],
        aBytes: r.rows * 64,
        cBytes: r.rows * 48 * 4,
        cWhole: false,
      });
      expect(r.device.paddedRows).toBe(i === 0 ? 3 : 0);
      expect(r.exact).toBe(true);
      expect(r.ratio).toBeCloseTo(r.host.medianMs / r.device.medianMs, 9);
      expect(r.route).toBe(r.device.medianMs < r.host.medianMs ? 'device' : 'host');
    });
    // The second probe of the shape reads the designs the first one cached.
    expect(probeJson(small).device).toMatchObject({ designsBuilt: 0, designsLoaded: 2 });
  });

  it('prints the rows table with the breakdown, labelled as emulated', () => {
    const ran = runNode([cli, ...small], repoRoot, env);
    expect(ran.status).toBe(0);
    expect(ran.stdout).toMatch(
      new RegExp(
        `^ep-probe 64x48: host gemm_q8 \\((${HOST_KERNELS.join('|')}), 1 thread\\) vs device emu -- device timings are EMULATED`,
      ),
    );
    expect(ran.stdout).toMatch(
      /rows {2}host ms +device ms \(emulated\) +host\/device +A upload\+sync +launches\+wait +C sync +epilogue +launches +exact +faster/,
    );
    for (const [rows, launches] of [
      [1, 1],
      [4, 1],
      [36, 2],
    ])
      expect(ran.stdout).toMatch(
        new RegExp(
          `^ +${rows}  [\\d.]+ \\([\\d.]+-[\\d.]+\\) +[\\d.]+ \\([\\d.]+-[\\d.]+\\) +[\\d.]+x( +[\\d.]+){4} +${launches} +true +(host|device)$`,
          'm',
        ),
      );
    expect(ran.stdout).toMatch(/Emulated timings measure the emulator, not an NPU/);
  });

  it('--device none prints the host column only', () => {
    const report = probeJson([...small, '--device', 'none']);
    expect(report.deviceTimings).toBeNull();
    expect(report.device).toMatchObject({ requested: 'none', selected: 'none', error: null, designsLoaded: 0 });
    for (const r of report.rows) {
      expectSpread(r.host);
      expect(r).toMatchObject({ device: null, ratio: null, exact: null, route: 'host' });
    }
    const text = runNode([cli, ...small, '--device', 'none'], repoRoot, env);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^rows {2}host ms$/m);
    expect(text.stdout).not.toMatch(/emulated|EMULATED/);
  });

  it('--save-routes writes the faster route per rows and merges with other shapes', () => {
    const file = path.join(tmp, 'routes.txt');
    writeFileSync(
      file,
      '# onebit routes v1\n# 1024x2048 from an earlier probe\n1024 2048 1 host\n1024 2048 32 device\n64 48 8 device\n',
    );
    const first = probeJson([...small, '--save-routes', file]);
    expect(first.routesFile).toBe(file);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const ours = first.rows.map((r: { rows: number; route: string }) => `64 48 ${r.rows} ${r.route}`);
    expect(lines).toEqual([
      '# onebit routes v1: K N rows route (host|device); the largest listed rows <= M decides',
      expect.stringMatching(/^# 64x48 from ep-probe on emu \(emulated timings\), 3 calls per rows, \d{4}-\d\d-\d\d$/),
      ...ours, // the old '64 48 8 device' line is replaced, not kept
      '# 1024x2048 from an earlier probe',
      '1024 2048 1 host',
      '1024 2048 32 device',
    ]);
    // Another shape is added; probing 64x48 again replaces its lines, never duplicates them.
    probeJson(['--shape', '16x8', '--rows', '2', '--repeat', '1', '--save-routes', file]);
    const again = probeJson([...small, '--save-routes', file]);
    const data = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /^\d/.test(l));
    expect(data).toEqual([
      expect.stringMatching(/^16 8 2 (host|device)$/),
      ...again.rows.map((r: { rows: number; route: string }) => `64 48 ${r.rows} ${r.route}`),
      '1024 2048 1 host',
      '1024 2048 32 device',
    ]);
    // What was written parses back to the same routes.
    expect(pkg.parseRoutes(readFileSync(file, 'utf8')).entries).toHaveLength(6);
    expect(pkg.routeFor(pkg.parseRoutes(readFileSync(file, 'utf8')).entries, 1024, 2048, 40)).toBe('device');
    expect(pkg.routeFor(pkg.parseRoutes(readFileSync(file, 'utf8')).entries, 1024, 2048, 31)).toBe('host');
  });

  it('refuses to overwrite a malformed routes file, and to save without device timings', () => {
    const file = path.join(tmp, 'bad-routes.txt');
    writeFileSync(file, '64 48 one host\n');
    const bad = runNode([cli, ...small, '--save-routes', file], repoRoot, env);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(
      /bad-routes.txt' line 1: expected 'K N rows host\|device' with K, N, rows >= 1, got '64 48 one host'/,
    );
    expect(readFileSync(file, 'utf8')).toBe('64 48 one host\n');
    const none = runNode(
      [cli, ...small, '--device', 'none', '--save-routes', path.join(tmp, 'none.txt')],
      repoRoot,
      env,
    );
    expect(none.status).toBe(1);
    expect(none.stderr).toMatch(/--save-routes needs device timings for every rows value; device none: nothing saved/);
  });

  it('--cost-model adds the modelled device time per rows value, the rows it wins from, and routes chosen on it', () => {
    const file = path.join(tmp, 'modelled-routes.txt');
    const args = ['--shape', '1024x1024', '--rows', '1,64', '--repeat', '2', '--cost-model', 'xdna1'];
    const report = probeJson([...args, '--save-routes', file]);
    expect(report.device.costModel).toBe('xdna1');
    expect(report.routesChosenOn).toBe('modelled');
    for (const r of report.rows) {
      const m = r.device.modelled;
      expect(Object.keys(m).sort()).toEqual(['arrayMs', 'launchMs', 'syncMs', 'totalMs']);
      expect(m.totalMs).toBeCloseTo(m.syncMs + m.launchMs + m.arrayMs, 12);
      expect(r.modelledRatio).toBeCloseTo(r.host.medianMs / m.totalMs, 9);
      expect(r.route).toBe(m.totalMs < r.host.medianMs ? 'device' : 'host');
      expect(r.exact).toBe(true);
    }
    // 1 row on xdna1, by hand (test/npu/cost_model_test.cpp): 2 × 10 µs + 5120 B at 20 GB/s, a
    // 50 µs launch, one m4 launch streaming 1 MiB + 20 KiB at 51.2 GB/s.
    expect(report.rows[0].device.modelled.totalMs).toBeCloseTo(0.091136, 6);
    expect(report.rows[0].device.modelled.launchMs).toBeCloseTo(0.05, 12);
    expect(report.rows[1].device.modelled.launchMs).toBeCloseTo(0.1, 12); // 64 rows: two m32 launches
    const wins = report.rows
      .filter((r: { route: string }) => r.route === 'device')
      .map((r: { rows: number }) => r.rows);
    expect(report.modelledDeviceWinsFromRows).toBe(wins.includes(1) ? 1 : wins.includes(64) ? 64 : null);
    expect(readFileSync(file, 'utf8')).toMatch(
      /^# 1024x1024 from ep-probe on emu \(routes chosen on MODELLED xdna1 device times against host times measured on this CPU\)/m,
    );

    const text = runNode([cli, ...args], repoRoot, env);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(
      /rows {2}host ms +device ms \(emulated\) +host\/device +device ms \(modelled xdna1\) +host\/modelled +A upload/,
    );
    expect(text.stdout).toMatch(
      /modelled xdna1: device time on that NPU from a cost model .* not measured; host times are measured on this CPU/,
    );
    expect(text.stdout).toMatch(/faster: chosen on the modelled device time/);
  });

  it('--cost-model: a bad cost file is a usage error naming the key (read before probing); so is no device', () => {
    const file = path.join(tmp, 'cost.json');
    writeFileSync(
      file,
      '{"generation": "mine", "launch_us": 50, "sync_call_us": 10, "sync_gbps": 20, "dram_gbps": 50}',
    );
    const bad = runNode([cli, ...small, '--cost-model', file], repoRoot, env);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--cost-model .*cost.json: cost model .*cost.json: missing key "int8_tops"/);
    const none = runNode([cli, ...small, '--device', 'none', '--cost-model', 'xdna2'], repoRoot, env);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/--cost-model models the device calls: use it with --device emu/);
    const unknown = runNode([cli, ...small, '--cost-model', 'xdna9'], repoRoot, env);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/--cost-model takes xdna1, xdna2 or a cost file ending in .json, got 'xdna9'/);
  });

  it('still takes the old name --model for one release, with a deprecation warning', () => {
    const old = runNode([cli, ...small, '--device', 'none', '--model', 'xdna2'], repoRoot, env);
    expect(old.status).toBe(2); // read as --cost-model: the same usage error
    expect(old.stderr).toMatch(/DeprecationWarning: ep-probe --model is deprecated: use --cost-model/);
    expect(old.stderr).toMatch(/--cost-model models the device calls: use it with --device emu/);
    const both = runNode([cli, ...small, '--model', 'xdna2', '--cost-model', 'xdna1'], repoRoot, env);
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/--model is the old name of --cost-model: give one of them/);
  });

  it('says what is wrong with its arguments', () => {
    const cases: [string[], RegExp][] = [
      [[], /--shape KxN is required/],
      [['--shape', '64by48'], /--shape takes KxN, e.g. 1024x2048, got '64by48'/],
      [['--shape', '64x48', '--rows', '1,0'], /--rows needs an integer >= 1, got '0'/],
      [['--shape', '64x48', '--device', 'xrt'], /--device takes auto, emu, none, got 'xrt'/],
      [['--shape', '64x48', '--fast'], /unknown argument --fast/],
    ];
    for (const [args, message] of cases) {
      const ran = runNode([cli, ...args], repoRoot, env);
      expect(ran.status).toBe(2);
      expect(ran.stderr).toMatch(message);
    }
    const tooDeep = runNode([cli, '--shape', '40000x8'], repoRoot, env);
    expect(tooDeep.status).toBe(1);
    expect(tooDeep.stderr).toMatch(/probe option K=40000 is invalid: use an integer in 1..33025/);
    expect(runNode([cli, '--help']).stdout).toMatch(/^usage: ep-probe --shape KxN/);
  });

  it('the API resolves off the JS thread with the same result structure', async () => {
    const result = await pkg.probe({
      K: 33,
      N: 7,
      rows: [3],
      repeat: 2,
      device: 'emu',
      designsDir: path.join(tmp, 'api-designs'),
      lockPath: path.join(tmp, 'api.lock'),
    });
    expect(result.rows[0]).toMatchObject({ rows: 3, exact: true });
    expect(result.rows[0].device?.launches).toBe(1);
    await expect(pkg.probe({ K: 8, N: 8, device: 'gpu' as never })).rejects.toThrow(
      /device="gpu" is invalid: use 'auto', 'emu' or 'none'/,
    );
  });
});
