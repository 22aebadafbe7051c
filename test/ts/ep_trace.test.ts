// SPDX-License-Identifier: Apache-2.0
// ep-trace on hand-written trace files in the EP's format; malformed files give clear errors.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { pkg, repoRoot, runNode } from './helpers/package.js';

const cli = path.join(repoRoot, 'dist', 'cli', 'ep_trace.js');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-trace-'));

function event(K: number, N: number, rows: number, route: string, reason: string, ts: number, dur: number, launches = 0) {
  const device = route === 'device';
  return {
    name: `gemm_q8 ${K}x${N}`,
    cat: route,
    ph: 'X',
    ts,
    dur,
    pid: 7,
    tid: 1,
    args: { node: `group_${K}`, K, N, rows, route, reason, launches, a_bytes: device ? rows * K : 0, c_bytes: device ? rows * N * 4 : 0, c_whole: false },
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
  otherData: { onebit: { qdq_runs: 6, groups: 2, host_rows_policy: 1, device_busy: 1, host_routes: 1, device_calls: 3, device_launches: 5 } },
};
const file = path.join(tmp, 'trace.json');
writeFileSync(file, JSON.stringify(trace));

describe('ep-trace', () => {
  it('summarises per shape and route (JSON)', () => {
    const ran = runNode([cli, file, '--json']);
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    const s = JSON.parse(ran.stdout);
    expect(s).toMatchObject({ file, events: 6, droppedEvents: 0 });
    expect(s.groups).toEqual([
      { shape: '64x48', K: 64, N: 48, route: 'device', calls: 3, rowsTotal: 76, totalMs: 0.9, medianMs: 0.3, launches: 5, aBytes: 76 * 64, cBytes: 76 * 48 * 4, reasons: { device: 3 } },
      { shape: '64x48', K: 64, N: 48, route: 'host', calls: 2, rowsTotal: 3, totalMs: 0.06, medianMs: 0.03, launches: 0, aBytes: 0, cBytes: 0, reasons: { 'rows<min_device_rows': 1, 'device-busy': 1 } },
      { shape: '1024x2048', K: 1024, N: 2048, route: 'host', calls: 1, rowsTotal: 8, totalMs: 1, medianMs: 1, launches: 0, aBytes: 0, cBytes: 0, reasons: { routes: 1 } },
    ]);
    expect(s.counters).toMatchObject({ qdqRuns: 6, groups: 2, hostRowsPolicy: 1, deviceBusy: 1, hostRoutes: 1, deviceCalls: 3, deviceLaunches: 5, deviceFallbacks: 0 });
  });

  it('prints a table and the counters', () => {
    const ran = runNode([cli, file]);
    expect(ran.status).toBe(0);
    expect(ran.stdout).toMatch(/^.*trace.json: 6 gemm_q8 calls$/m);
    expect(ran.stdout).toMatch(/^shape +route +calls +rows +total ms +median ms +launches +A synced +C synced +reasons$/m);
    expect(ran.stdout).toMatch(/^64x48 +device +3 +76 +0\.900 +0\.300 +5 +4\.8 KiB +14\.3 KiB +device=3$/m);
    expect(ran.stdout).toMatch(/^64x48 +host +2 +3 +0\.060 +0\.030 +0 +0 B +0 B +rows<min_device_rows=1 device-busy=1$/m);
    expect(ran.stdout).toMatch(/^counters: qdqRuns=6 groups=2 hostRowsPolicy=1 hostRoutes=1 deviceFallbacks=0 deviceBusy=1 deviceBreakerSkips=0 deviceCalls=3 deviceLaunches=5 /m);
  });

  it('gives a clear error for a missing or malformed file', () => {
    const cases: [string, string, RegExp][] = [
      ['missing.json', '', /no such trace file: .*missing.json \(write one with ONEBIT_EP_TRACE=<file>/],
      ['truncated.json', JSON.stringify(trace).slice(0, 100), /truncated.json is not an onebit trace file: invalid JSON/],
      ['array.json', '[]', /array.json is not an onebit trace file: expected an object with a "traceEvents" array/],
      ['route.json', JSON.stringify({ traceEvents: [{ ...event(8, 8, 1, 'gpu', 'x', 0, 1) }] }), /traceEvents\[0\].args.route must be "host" or "device", got "gpu"/],
      ['dur.json', JSON.stringify({ traceEvents: [{ ...event(8, 8, 1, 'host', 'x', 0, 1), dur: 'long' }] }), /traceEvents\[0\].dur must be a number >= 0, got "long"/],
      ['counters.json', JSON.stringify({ traceEvents: [], otherData: { onebit: { qdq_runs: 'x' } } }), /otherData.onebit must be an object of numeric counters/],
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
