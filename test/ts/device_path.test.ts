// SPDX-License-Identifier: Apache-2.0
// The EP's device path from Node, on the emulated array: a one-layer projection stack (7 QDQ
// groups) with device 'emu' gives exactly the host run's outputs, its counters add up, a routes
// file keeps the shapes it says on the host, ep-trace summarises the trace file it wrote, and the
// sync profile prints once at exit.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PROJECTIONS, projectionStack } from '../../ts/apps/model/projection_stack.js';
import { HOST_KERNELS } from '../../ts/names.js';
import { int8Input, qdqGroup } from './helpers/models.js';
import { ort, pkg, repoRoot, runNode } from './helpers/package.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-device-'));
const stack = projectionStack(1);
const groups = PROJECTIONS.length;
const rowsList = [1, 4, 36]; // 1 and 4 rows: one m4 launch; 36 = m32 + m4
const launchesPerGroup = 1 + 1 + 2;
const designsDir = path.join(tmp, 'designs');
const saved: Record<string, string | undefined> = {};

function feedsFor(rows: number): Record<string, Tensor> {
  return { [stack.inputName]: new ort.Tensor('int8', int8Input(rows * 1024, rows), [rows, 1024]) };
}

async function runAll(
  options: Record<string, unknown>,
): Promise<{ outputs: Record<string, Tensor>[]; counters: ReturnType<typeof pkg.onebit.counters> }> {
  const session = await ort.InferenceSession.create(stack.bytes, {
    executionProviders: [{ name: 'onebit', ...options } as InferenceSession.ExecutionProviderConfig],
    intraOpNumThreads: 1,
  });
  const outputs: Record<string, Tensor>[] = [];
  for (const rows of rowsList) outputs.push((await session.run(feedsFor(rows))) as Record<string, Tensor>);
  await session.release();
  return { outputs, counters: pkg.onebit.counters(session) };
}

beforeAll(() => {
  // A private device lock (the EP opens it under XDG_RUNTIME_DIR) and no debugging override.
  const overrides = ['ONEBIT_DEVICE', 'ONEBIT_EP_TRACE', 'ONEBIT_NPU_NO_C_NARROW', 'ONEBIT_NPU_DBG'];
  const profile = ['ONEBIT_NPU_C_SYNC_PROF', 'NPU_C_SYNC_PROF', 'NPU_NO_C_NARROW', 'NPU_DBG'];
  for (const key of ['XDG_RUNTIME_DIR', ...overrides, ...profile]) saved[key] = process.env[key];
  process.env.XDG_RUNTIME_DIR = tmp;
  for (const key of [...overrides, ...profile]) delete process.env[key];
});

afterAll(() => {
  for (const [key, value] of Object.entries(saved))
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
});

describe('device path (emu) through the Node API', () => {
  it('runs every call on the device, bit-identical to the host, with counters and a trace file', async () => {
    const trace = path.join(tmp, 'trace.json');
    const device = await runAll({ device: 'emu', minDeviceRows: 1, trace, designsDir });
    const host = await runAll({ device: 'none' });

    for (const [i, run] of device.outputs.entries())
      for (const [name, tensor] of Object.entries(run)) {
        expect(tensor.dims, name).toEqual(host.outputs[i][name].dims);
        expect(
          Buffer.from((tensor.data as Int8Array).buffer).equals(
            Buffer.from((host.outputs[i][name].data as Int8Array).buffer),
          ),
          `${name} rows ${rowsList[i]}`,
        ).toBe(true);
      }

    const calls = groups * rowsList.length;
    const sumRows = rowsList.reduce((a, b) => a + b, 0);
    const sumK = PROJECTIONS.reduce((s, p) => s + p.k, 0);
    const sumN = PROJECTIONS.reduce((s, p) => s + p.n, 0);
    expect(device.counters).toMatchObject({
      groupRuns: calls,
      groups,
      deviceCalls: calls, // = groups x runs: every call went to the device
      deviceLaunches: groups * launchesPerGroup,
      hostRowsPolicy: 0,
      hostRoutes: 0,
      deviceFallbacks: 0,
      deviceBusy: 0,
      aBytesSynced: sumRows * sumK,
      cBytesSynced: sumRows * sumN * 4,
      cSyncsNarrowed: calls,
      cSyncsWhole: 0,
      designsBuilt: 2 * 5, // m32 and m4 for each of the 5 distinct shapes
      designsFailed: 0,
    });
    expect(device.counters.designsLoaded).toBeGreaterThanOrEqual(2 * 5);
    expect(device.counters.deviceNs).toBeGreaterThan(0);
    expect(host.counters).toMatchObject({
      groupRuns: calls,
      groups,
      deviceCalls: 0,
      deviceLaunches: 0,
      aBytesSynced: 0,
    });

    // The trace file, written at release, summarised by ep-trace.
    expect(existsSync(trace)).toBe(true);
    const ran = runNode([path.join(repoRoot, 'dist', 'apps', 'cli', 'ep_trace.js'), trace, '--json']);
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    const summary = JSON.parse(ran.stdout);
    expect(summary.events).toBe(calls);
    // The host kernel the EP ran is the one this process's addon selected (same CPU, same env).
    const probed = await pkg.probe({ K: 16, N: 16, rows: [1], repeat: 1, device: 'none' });
    expect(summary.hostKernel).toBe(probed.hostKernel);
    expect(HOST_KERNELS).toContain(summary.hostKernel);
    const byShape = new Map<string, number>();
    for (const p of PROJECTIONS) byShape.set(`${p.k}x${p.n}`, (byShape.get(`${p.k}x${p.n}`) ?? 0) + 1);
    expect(
      summary.groups.map(
        (g: {
          shape: string;
          route: string;
          calls: number;
          rowsTotal: number;
          launches: number;
          aBytes: number;
          reasons: object;
        }) => [g.shape, g.route, g.calls, g.rowsTotal, g.launches, g.aBytes, g.reasons],
      ),
    ).toEqual(
      [...byShape.entries()]
        .map(([shape, n]) => {
          const k = Number(shape.split('x')[0]);
          return [
            shape,
            'device',
            n * rowsList.length,
            n * sumRows,
            n * launchesPerGroup,
            n * sumRows * k,
            { device: n * rowsList.length },
          ];
        })
        .sort((a, b) => {
          const [ak, an] = (a[0] as string).split('x').map(Number);
          const [bk, bn] = (b[0] as string).split('x').map(Number);
          return ak - bk || an - bn;
        }),
    );
    expect(summary.counters).toMatchObject({
      groupRuns: calls,
      deviceCalls: calls,
      deviceLaunches: groups * launchesPerGroup,
    });
  });

  it("with costModel, the trace carries each device call's modelled time and ep-trace labels it", async () => {
    const trace = path.join(tmp, 'modelled-trace.json');
    await runAll({ device: 'emu', minDeviceRows: 1, trace, designsDir, costModel: 'xdna1' });
    const { calls, costModel } = pkg.readTrace(trace);
    expect(costModel).toBe('xdna1');
    expect(calls).toHaveLength(groups * rowsList.length);
    for (const c of calls) {
      expect(c.route).toBe('device');
      expect(c.modelledUs).not.toBeNull();
      expect(c.deviceUs).toBeGreaterThan(0);
      expect(c.deviceUs).toBeLessThanOrEqual(c.durUs + 1); // a part of the call (dur is whole µs)
      if (c.rows !== 1) continue;
      // One row on xdna1 by hand: two syncs of 10 µs + (K + 4N) bytes at 20 GB/s, a 50 µs launch,
      // one m4 launch streaming the K×N weights + 4 rows of A and C at 51.2 GB/s (these shapes
      // fill the design's tiles exactly).
      const expected = 20 + (c.K + 4 * c.N) / 20e3 + 50 + (c.K * c.N + 4 * c.K + 16 * c.N) / 51.2e3;
      expect(c.modelledUs).toBeCloseTo(expected, 2);
    }
    const ran = runNode([path.join(repoRoot, 'dist', 'apps', 'cli', 'ep_trace.js'), trace]);
    expect(ran.status).toBe(0);
    expect(ran.stdout).toMatch(/modelled total ms \(xdna1\)/);
  });

  it('keeps the shapes a routes file gives to the host on the host', async () => {
    const routes = path.join(tmp, 'routes.txt');
    writeFileSync(
      routes,
      '# q projection: host from 1 row, down projection: device from 32 rows\n1024 2048 1 host\n3072 1024 32 device\n3072 1024 1 host\n',
    );
    const run = await runAll({ device: 'emu', minDeviceRows: 1, routes, designsDir });
    // q: host for every call (3); down: host at 1 and 4 rows, device at 36 (2); the rest: device.
    expect(run.counters).toMatchObject({
      groupRuns: groups * 3,
      hostRoutes: 3 + 2,
      deviceCalls: groups * 3 - 5,
      deviceFallbacks: 0,
    });
  });

  it("ONEBIT_NPU_C_SYNC_PROF prints one report at exit, the one with the session's syncs", () => {
    // The addon links npu/ too (ep-probe drives the device itself) and so holds a profile of its
    // own, empty in a process that only runs sessions: that one must stay silent, and the old
    // name's deprecation warning must be printed once, not once per shared object.
    const model = path.join(tmp, 'sync_prof_group.onnx');
    writeFileSync(model, qdqGroup(64, 48).bytes);
    const child = `
      const ort = require('onnxruntime-node');
      require(${JSON.stringify(path.join(repoRoot, 'dist', 'index.js'))});
      (async () => {
        const session = await ort.InferenceSession.create(${JSON.stringify(model)}, {
          executionProviders: [{ name: 'onebit', device: 'emu', minDeviceRows: 1, designsDir: ${JSON.stringify(designsDir)} }],
          intraOpNumThreads: 1,
        });
        for (let i = 0; i < 3; ++i) await session.run({ x_q: new ort.Tensor('int8', new Int8Array(4 * 64).fill(1), [4, 64]) });
        await session.release();
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const reports = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('onebit-npu sync profile'));
    for (const name of ['ONEBIT_NPU_C_SYNC_PROF', 'NPU_C_SYNC_PROF']) {
      const ran = runNode(['-e', child], repoRoot, { [name]: '1' });
      expect(ran.status, ran.stderr).toBe(0);
      const lines = reports(ran.stderr);
      expect(lines, ran.stderr).toHaveLength(1);
      // 3 calls of 4 rows: A 4 x 64 bytes and C 4 x 48 int32 each, narrowed; the weights once.
      expect(lines[0]).toContain('(emulator timings)');
      expect(lines[0]).toContain(`A to device: 3 syncs, ${3 * 4 * 64} bytes`);
      expect(lines[0]).toContain('W to device: 1 syncs, ');
      expect(lines[0]).toContain(`C from device narrowed: 3 syncs, ${3 * 4 * 48 * 4} bytes`);
      expect(lines[0]).toContain('C from device whole: 0 syncs, 0 bytes');
      const warnings = ran.stderr.split('\n').filter((l) => l.includes('is deprecated'));
      expect(warnings, ran.stderr).toEqual(
        name === 'NPU_C_SYNC_PROF'
          ? [
              'onebit: NPU_C_SYNC_PROF is deprecated: set ONEBIT_NPU_C_SYNC_PROF (the old name goes in the next release)',
            ]
          : [],
      );
    }
  });

  it("ep-probe runs the EP's own code path: its device calls count exactly what a session counts", async () => {
    const rows = [4, 36];
    const repeat = 2;
    const probed = await pkg.probe({
      K: 64,
      N: 48,
      rows,
      repeat,
      device: 'emu',
      designsDir,
      lockPath: path.join(tmp, 'probe.lock'),
    });
    expect(probed.device.error).toBeNull();
    // The probe makes one warm-up call and `repeat` timed calls per rows value on the device.
    const group = qdqGroup(64, 48);
    const session = await ort.InferenceSession.create(group.bytes, {
      executionProviders: [
        { name: 'onebit', device: 'emu', minDeviceRows: 0, designsDir } as InferenceSession.ExecutionProviderConfig,
      ],
      intraOpNumThreads: 1,
    });
    for (const r of rows)
      for (let i = 0; i < repeat + 1; ++i)
        await session.run({ x_q: new ort.Tensor('int8', int8Input(r * 64, r), [r, 64]) });
    await session.release();
    const counters = pkg.onebit.counters(session);
    for (const key of [
      'deviceCalls',
      'deviceLaunches',
      'aBytesSynced',
      'cBytesSynced',
      'cSyncsNarrowed',
      'cSyncsWhole',
      'deviceFallbacks',
      'deviceBusy',
    ] as const)
      expect(probed.deviceCounters[key], key).toBe(counters[key]);
    expect(probed.deviceCounters.deviceCalls).toBe(rows.length * (repeat + 1));
  });
});
