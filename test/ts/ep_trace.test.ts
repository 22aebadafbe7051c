// SPDX-License-Identifier: Apache-2.0
// ep-trace on hand-written trace files in the EP's format; malformed files give clear errors.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { pkg, repoRoot, runNode } from './helpers/package.js';

const cli = path.join(repoRoot, 'dist', 'apps', 'cli', 'ep_trace.js');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-trace-'));

function event(
  K: number,
  N: number,
  rows: number,
  route: string,
  reason: string,
  ts: number,
  dur: number,
  launches = 0,
) {
  const device = route === 'device';
  return {
    name: `gemm_q8 ${K}x${N}`,
    cat: route,
    ph: 'X',
    ts,
    dur,
    pid: 7,
    tid: 1,
    args: {
      node: `group_${K}`,
      K,
      N,
      rows,
      route,
      reason,
      launches,
      a_bytes: device ? rows * K : 0,
      c_bytes: device ? rows * N * 4 : 0,
      c_whole: false,
    },
  };
}

const trace = {
  traceEvents: [
    event(64, 48, 36, 'device', 'device', 0, 300, 2),
    event(64, 48, 1, 'host', 'rows<min_device_rows', 400, 20),
    event(64, 48, 36, 'device', 'device', 500, 500, 2),
    event(64, 48, 4, 'device', 'device', 1100, 100, 1),
    event(64, 48, 2, 'host', 'device-busy', 1300, 40),
    event(1024, 2048, 8, 'host', 'routes', 1400, 1000),
    { name: 'process_name', ph: 'M', pid: 7, args: { name: 'not a call' } },
  ],
  otherData: {
    onebit: {
      group_runs: 6,
      groups: 2,
      host_rows_policy: 1,
      device_busy: 1,
      host_routes: 1,
      device_calls: 3,
      device_launches: 5,
    },
  },
};
const file = path.join(tmp, 'trace.json');
writeFileSync(file, JSON.stringify(trace));

describe('ep-trace', () => {
  it('summarises per shape and route (JSON)', () => {
    const ran = runNode([cli, file, '--json']);
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    const s = JSON.parse(ran.stdout);
    expect(s).toMatchObject({ file, events: 6, droppedEvents: 0, costModel: null });
    expect(s.groups).toEqual([
      {
        shape: '64x48',
        K: 64,
        N: 48,
        route: 'device',
        calls: 3,
        rowsTotal: 76,
        totalMs: 0.9,
        medianMs: 0.3,
        launches: 5,
        aBytes: 76 * 64,
        cBytes: 76 * 48 * 4,
        reasons: { device: 3 },
        modelledTotalMs: null,
        modelledMedianMs: null,
      },
      {
        shape: '64x48',
        K: 64,
        N: 48,
        route: 'host',
        calls: 2,
        rowsTotal: 3,
        totalMs: 0.06,
        medianMs: 0.03,
        launches: 0,
        aBytes: 0,
        cBytes: 0,
        reasons: { 'rows<min_device_rows': 1, 'device-busy': 1 },
        modelledTotalMs: null,
        modelledMedianMs: null,
      },
      {
        shape: '1024x2048',
        K: 1024,
        N: 2048,
        route: 'host',
        calls: 1,
        rowsTotal: 8,
        totalMs: 1,
        medianMs: 1,
        launches: 0,
        aBytes: 0,
        cBytes: 0,
        reasons: { routes: 1 },
        modelledTotalMs: null,
        modelledMedianMs: null,
      },
    ]);
    expect(s.counters).toMatchObject({
      groupRuns: 6,
      groups: 2,
      hostRowsPolicy: 1,
      deviceBusy: 1,
      hostRoutes: 1,
      deviceCalls: 3,
      deviceLaunches: 5,
      deviceFallbacks: 0,
    });
  });

  it('prints a table and the counters', () => {
    const ran = runNode([cli, file]);
    expect(ran.status).toBe(0);
    expect(ran.stdout).toMatch(/^.*trace.json: 6 gemm_q8 calls$/m);
    expect(ran.stdout).toMatch(
      /^shape +route +calls +rows +total ms +median ms +launches +A synced +C synced +reasons$/m,
    );
    expect(ran.stdout).toMatch(/^64x48 +device +3 +76 +0\.900 +0\.300 +5 +4\.8 KiB +14\.3 KiB +device=3$/m);
    expect(ran.stdout).toMatch(
      /^64x48 +host +2 +3 +0\.060 +0\.030 +0 +0 B +0 B +rows<min_device_rows=1 device-busy=1$/m,
    );
    expect(ran.stdout).toMatch(
      /^counters: groupRuns=6 groups=2 hostRowsPolicy=1 hostRoutes=1 deviceFallbacks=0 deviceBusy=1 deviceBreakerSkips=0 deviceCalls=3 deviceLaunches=5 /m,
    );
  });

  it('shows the modelled device time per shape when the session had a cost model, labelled as modelled', () => {
    const modelled = {
      traceEvents: [
        {
          ...event(64, 48, 36, 'device', 'device', 0, 300, 2),
          args: { ...event(64, 48, 36, 'device', 'device', 0, 300, 2).args, modelled_us: 120.5 },
        },
        {
          ...event(64, 48, 4, 'device', 'device', 400, 100, 1),
          args: { ...event(64, 48, 4, 'device', 'device', 400, 100, 1).args, modelled_us: 80 },
        },
        {
          ...event(64, 48, 8, 'device', 'device', 600, 100, 1),
          args: { ...event(64, 48, 8, 'device', 'device', 600, 100, 1).args, modelled_us: 90 },
        },
        event(64, 48, 1, 'host', 'rows<min_device_rows', 800, 20),
      ],
      otherData: { onebit: { group_runs: 4 }, cost_model: 'xdna1' },
    };
    const target = path.join(tmp, 'modelled.json');
    writeFileSync(target, JSON.stringify(modelled));
    const s = pkg.summarizeTrace(target);
    expect(s.costModel).toBe('xdna1');
    expect(
      s.groups.map((g: { route: string; modelledTotalMs: number | null; modelledMedianMs: number | null }) => [
        g.route,
        g.modelledTotalMs,
        g.modelledMedianMs,
      ]),
    ).toEqual([
      ['device', 0.2905, 0.09],
      ['host', null, null],
    ]);
    const ran = runNode([cli, target]);
    expect(ran.status).toBe(0);
    expect(ran.stdout).toMatch(
      /^shape +route +calls +rows +total ms +median ms +modelled total ms \(xdna1\) +modelled median ms +launches/m,
    );
    expect(ran.stdout).toMatch(/^64x48 +device +3 +48 +0\.500 +0\.100 +0\.29[01] +0\.090 +4 /m);
    expect(ran.stdout).toMatch(/^64x48 +host +1 +1 +0\.020 +0\.020 +- +- +0 /m);
    expect(ran.stdout).toMatch(
      /modelled: the device part of device calls \(A upload, launches, C sync\) on xdna1, from the cost model .* not measured/,
    );
    const bad = path.join(tmp, 'bad-modelled.json');
    writeFileSync(
      bad,
      JSON.stringify({
        traceEvents: [
          {
            ...event(8, 8, 1, 'device', 'device', 0, 1),
            args: { ...event(8, 8, 1, 'device', 'device', 0, 1).args, modelled_us: 'fast' },
          },
        ],
      }),
    );
    const failed = runNode([cli, bad]);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/traceEvents\[0\].args.modelled_us must be a number >= 0, got "fast"/);
  });

  it('gives a clear error for a missing or malformed file', () => {
    const cases: [string, string, RegExp][] = [
      ['missing.json', '', /no such trace file: .*missing.json \(write one with ONEBIT_EP_TRACE=<file>/],
      [
        'truncated.json',
        JSON.stringify(trace).slice(0, 100),
        /truncated.json is not an onebit trace file: invalid JSON/,
      ],
      ['array.json', '[]', /array.json is not an onebit trace file: expected an object with a "traceEvents" array/],
      [
        'route.json',
        JSON.stringify({ traceEvents: [{ ...event(8, 8, 1, 'gpu', 'x', 0, 1) }] }),
        /traceEvents\[0\].args.route must be "host" or "device", got "gpu"/,
      ],
      [
        'dur.json',
        JSON.stringify({ traceEvents: [{ ...event(8, 8, 1, 'host', 'x', 0, 1), dur: 'long' }] }),
        /traceEvents\[0\].dur must be a number >= 0, got "long"/,
      ],
      [
        'counters.json',
        JSON.stringify({ traceEvents: [], otherData: { onebit: { group_runs: 'x' } } }),
        /otherData.onebit must be an object of numeric counters/,
      ],
    ];
    for (const [name, content, message] of cases) {
      const target = path.join(tmp, name);
      if (content !== '') writeFileSync(target, content);
      const ran = runNode([cli, target]);
      expect(ran.status, name).toBe(1);
      expect(ran.stderr, name).toMatch(message);
      expect(ran.stdout, name).toBe('');
      expect(() => pkg.summarizeTrace(target)).toThrow(pkg.TraceFileError);
    }
    const usage = runNode([cli]);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/give exactly one trace file/);
  });
});
