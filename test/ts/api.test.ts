// SPDX-License-Identifier: Apache-2.0
// The public API end to end: the onebit backend against exact arithmetic and ORT's CPU EP.
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { exactQdq, identityModel, int8Input, qdqGroup, qdqGroupWithCpuTail } from './helpers/models.js';
import { ort, pkg } from './helpers/package.js';

const { onebit } = pkg;
const group = qdqGroup();

function diffStats(a: Int8Array, b: Int8Array): { max: number; differing: number } {
  let max = 0;
  let differing = 0;
  for (let i = 0; i < a.length; ++i) {
    const d = Math.abs(a[i] - b[i]);
    max = Math.max(max, d);
    if (d) ++differing;
  }
  return { max, differing: differing / a.length };
}

describe('onebit backend', () => {
  it('registers idempotently and names absolute library paths', () => {
    const first = onebit.register();
    expect(onebit.register()).toEqual(first);
    expect(first.ortVersion).toBe('1.30.0');
    expect(path.isAbsolute(onebit.epLibraryPath())).toBe(true);
    expect(existsSync(onebit.epLibraryPath())).toBe(true);
    expect(first.epLibraryPath).toBe(onebit.epLibraryPath());
    expect(onebit.ortLibraryPath()).toContain(path.join('onnxruntime-node', 'bin'));
  });

  it('runs a QDQ group exactly, within 1 LSB of ORT CPU, and counts every run', async () => {
    const rows = 5;
    const x = int8Input(rows * group.k);
    const session = await ort.InferenceSession.create(group.bytes, {
      executionProviders: [{ name: 'onebit', minDeviceRows: 8, trace: false } as never],
    });
    const cpu = await ort.InferenceSession.create(group.bytes, {
      executionProviders: ['cpu'],
      graphOptimizationLevel: 'disabled',
    });
    const feeds = { x_q: new ort.Tensor('int8', x, [rows, group.k]) };
    const ours = await session.run(feeds);
    await session.run(feeds);
    const theirs = await cpu.run(feeds);

    expect(ours.y_q).toBeInstanceOf(ort.Tensor);
    expect(ours.y_q.type).toBe('int8');
    expect(ours.y_q.dims).toEqual([rows, group.n]);
    const exact = diffStats(ours.y_q.data as Int8Array, exactQdq(group, x, rows));
    expect(exact.max).toBe(0); // the EP's epilogue is exact: same operations, same order
    expect(diffStats(ours.y_q.data as Int8Array, theirs.y_q.data as Int8Array).max).toBeLessThanOrEqual(1);

    expect(onebit.counters(session)).toMatchObject({ groupRuns: 2, groups: 1 });
    await session.release();
    expect(onebit.counters(session)).toMatchObject({ groupRuns: 2, groups: 1 }); // final values
    await cpu.release();
  });

  it('creates sessions from a path and from bytes with the same metadata and results', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-api-'));
    const file = path.join(dir, 'group.onnx');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, group.bytes);
    const fromPath = await ort.InferenceSession.create(file, { executionProviders: ['onebit'] });
    const fromBytes = await ort.InferenceSession.create(group.bytes, { executionProviders: ['onebit'] });
    expect(fromPath.inputNames).toEqual(['x_q']);
    expect(fromPath.outputNames).toEqual(['y_q']);
    expect(fromPath.inputMetadata).toEqual([{ name: 'x_q', isTensor: true, type: 'int8', shape: ['rows', group.k] }]);
    expect(fromBytes.inputMetadata).toEqual(fromPath.inputMetadata);
    const feeds = { x_q: new ort.Tensor('int8', int8Input(group.k, 3), [1, group.k]) };
    const a = await fromPath.run(feeds);
    const b = await fromBytes.run(feeds);
    expect(Array.from(a.y_q.data as Int8Array)).toEqual(Array.from(b.y_q.data as Int8Array));
    await fromPath.release();
    await fromBytes.release();
  });

  it('maps session options to ORT: extra config entries and the optimized model path', async () => {
    const model = qdqGroupWithCpuTail(); // its Cast can only run on ORT's CPU EP
    const session = await ort.InferenceSession.create(model, {
      executionProviders: ['onebit'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'extended',
      logSeverityLevel: 3,
    });
    const out = await session.run({ x_q: new ort.Tensor('int8', int8Input(2 * 16), [2, 16]) });
    expect(out.y.type).toBe('float32');
    expect(onebit.counters(session).groupRuns).toBe(1);
    await session.release();

    await expect(
      ort.InferenceSession.create(model, {
        executionProviders: ['onebit'],
        extra: { session: { disable_cpu_ep_fallback: '1' } },
      }),
    ).rejects.toThrow(/CPU/i);

    // ORT cannot save a model holding compiled (fused) nodes: save one the EP claims nothing of.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-opt-'));
    const optimized = path.join(dir, 'optimized.onnx');
    const identity = await ort.InferenceSession.create(identityModel(1), {
      executionProviders: ['onebit'],
      optimizedModelFilePath: optimized,
    });
    expect(existsSync(optimized)).toBe(true);
    await identity.release();
    await expect(
      ort.InferenceSession.create(group.bytes, {
        executionProviders: ['onebit'],
        optimizedModelFilePath: path.join(dir, 'fused.onnx'),
      }),
    ).rejects.toThrow(pkg.OnebitRuntimeError);
  });

  it('sums counters over the process and refuses sessions of other backends', async () => {
    const before = onebit.processCounters().groupRuns;
    const session = await ort.InferenceSession.create(group.bytes, { executionProviders: ['onebit'] });
    await session.run({ x_q: new ort.Tensor('int8', int8Input(group.k), [1, group.k]) });
    expect(onebit.processCounters().groupRuns).toBe(before + 1);
    await session.release();

    const cpu = await ort.InferenceSession.create(group.bytes, { executionProviders: ['cpu'] });
    expect(() => onebit.counters(cpu)).toThrow(pkg.OnebitError);
    expect(() => onebit.counters(cpu)).toThrow(/executionProviders: \['onebit'\]/);
    await cpu.release();
  });

  it('keeps the event loop free while a run computes', async () => {
    const big = qdqGroup(1024, 2048, 11);
    const session = await ort.InferenceSession.create(big.bytes, {
      executionProviders: ['onebit'],
      intraOpNumThreads: 1,
    });
    let ticks = 0;
    const timer = setInterval(() => ++ticks, 0);
    for (let i = 0; i < 5; ++i) await session.run({ x_q: new ort.Tensor('int8', int8Input(256 * 1024), [256, 1024]) });
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
    await session.release();
  });
});
