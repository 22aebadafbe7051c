// SPDX-License-Identifier: Apache-2.0
// A run reaches the addon as a plan (ts/run_plan.ts, bindings/run_plan.h): every value's metadata
// index, element type and dims in one Float64Array, the data beside it. The session keeps the
// OrtValue of each input and output over memory of ours from one run to the next
// (bindings/kept_values.h); a kept value serves only the same bytes, type and dims, and does not
// keep that memory alive. A malformed plan, however it reaches the addon, is an ONEBIT_INPUT error,
// and the addon reads the plan as it was given even if the caller's JavaScript detaches it meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DataType, model, node, valueInfo } from '../../ts/apps/model/onnx_graph.js';
import { runPlan } from '../../ts/run_plan.js';
import type { NativeSession } from '../../ts/addon_types.js';
import { loadNative } from '../../ts/native.js';
import { nativeSessionConfig } from '../../ts/session_options.js';
import { ort, pkg, repoRoot, runNode } from './helpers/package.js';

const onebit = { executionProviders: [{ name: 'onebit', device: 'none' } as never] };
const FLOAT = 1; // ONNX element types
const INT64 = 7;

// y = x (float, any shape); s = Shape(x), which reads no element.
const echo = model({
  name: 'echo',
  node: [node('Identity', ['x'], ['y']), node('Shape', ['x'], ['s'])],
  input: [valueInfo('x', DataType.FLOAT, ['a', 'b'])],
  output: [valueInfo('y', DataType.FLOAT, ['a', 'b']), valueInfo('s', DataType.INT64, [2])],
});
// s = Shape(x) alone: a run allocates nothing the size of x.
const shapeOnly = model({
  name: 'shape',
  node: [node('Shape', ['x'], ['s'])],
  input: [valueInfo('x', DataType.FLOAT, ['a', 'b'])],
  output: [valueInfo('s', DataType.INT64, [2])],
});

describe('run plans', () => {
  it('lay out counts, then index, type, rank and dims of each input and output', () => {
    const x = { type: FLOAT, dims: [2, 3], data: new Float32Array(6) };
    const out = { type: INT64, dims: [2], data: new BigInt64Array(2) };
    const { plan, data } = runPlan([0], [x], [1, 0], [out, null]);
    expect(Array.from(plan)).toEqual([1, 2, 0, FLOAT, 2, 2, 3, 1, INT64, 1, 2, 0, -1, 0]);
    expect(data).toEqual([x.data, out.data, null]);
  });
});

describe('kept values', () => {
  let session: import('onnxruntime-node').InferenceSession;
  beforeAll(async () => {
    session = await ort.InferenceSession.create(echo, onebit);
  });
  afterAll(async () => session?.release());

  it('over one buffer of ours, follow its contents, other dims and views from run to run', async () => {
    const ours = pkg.onebit.allocateTensor('float32', [2, 6]);
    const values = ours.data as Float32Array;
    values.set(Array.from({ length: 12 }, (_, i) => i));
    const views: [Float32Array, number[]][] = [
      [values, [2, 6]],
      [values, [2, 6]],
      [values, [3, 4]],
      [values.subarray(6), [1, 6]],
      [values, [2, 6]],
    ];
    for (const [step, [data, dims]] of views.entries()) {
      values[0] = 100 + step; // written between runs: a run reads the buffer as it is then
      const out = await session.run({ x: new ort.Tensor('float32', data, dims) });
      expect(out.y.dims).toEqual(dims);
      expect(Array.from(out.y.data as Float32Array)).toEqual(Array.from(data));
      expect(Array.from(out.s.data as BigInt64Array)).toEqual(dims.map(BigInt));
    }
  });

  it('as pre-allocated outputs, are written with each run’s values', async () => {
    const ours = pkg.onebit.allocateTensor('float32', [2, 3]);
    for (const seed of [1, 2, 3]) {
      const x = Float32Array.from({ length: 6 }, (_, i) => seed * 10 + i);
      const y = new ort.Tensor('float32', ours.data as Float32Array, [2, 3]);
      await session.run({ x: new ort.Tensor('float32', x, [2, 3]) }, { y, s: null });
      expect(Array.from(ours.data as Float32Array)).toEqual(Array.from(x));
    }
  });

  it('do not keep the memory of a buffer a run read: dropped, it is given back', () => {
    // 512 MiB of ours read by one run (Shape reads no element), then dropped while the session
    // lives; with the memory kept the process would stay 512 MiB larger.
    const script = `
      const ort = require('onnxruntime-node'); const { onebit } = require('./dist/index.js');
      (async () => {
        const s = await ort.InferenceSession.create(Buffer.from(process.env.MODEL, 'base64'), { executionProviders: [{ name: 'onebit', device: 'none' }] });
        const mib = (n) => n / 2 ** 20;
        const before = process.memoryUsage().rss;
        let big = onebit.allocateTensor('float32', [1 << 17, 1024]);
        const shape = (await s.run({ x: big })).s.data;
        const held = process.memoryUsage().rss;
        big = null;
        global.gc();
        await new Promise((r) => setTimeout(r, 200));
        global.gc();
        await new Promise((r) => setTimeout(r, 200));
        console.log(JSON.stringify({ shape: Array.from(shape, Number), heldMiB: mib(held - before), leftMiB: mib(process.memoryUsage().rss - before) }));
        await s.release();
      })();`;
    const ran = runNode(['--expose-gc', '-e', script], repoRoot, { MODEL: Buffer.from(shapeOnly).toString('base64') });
    expect(ran.status, ran.stderr).toBe(0);
    const { shape, heldMiB, leftMiB } = JSON.parse(ran.stdout);
    expect(shape).toEqual([1 << 17, 1024]);
    expect(heldMiB).toBeGreaterThan(400); // the zeroed buffer was resident
    expect(leftMiB).toBeLessThan(100);
  });
});

describe('a malformed plan given to the addon directly', () => {
  let native: NativeSession;
  beforeAll(async () => {
    native = await loadNative().addon.createSession(echo, nativeSessionConfig(onebit));
  });
  afterAll(() => native?.dispose());

  const x = new Float32Array(6);
  const cases: [string, unknown, unknown[], RegExp][] = [
    ['not a Float64Array', [1, 0, 0, FLOAT, 2, 2, 3], [x], /not a Float64Array/],
    ['cut short', new Float64Array([1, 0, 0, FLOAT, 2, 2]), [x], /ends before a dimension/],
    ['numbers left over', new Float64Array([1, 0, 0, FLOAT, 2, 2, 3, 9]), [x], /1 numbers left over/],
    ['an index out of range', new Float64Array([1, 0, 5, FLOAT, 2, 2, 3]), [x], /no input at index 5/],
    ['a fractional dimension', new Float64Array([1, 0, 0, FLOAT, 2, 2.5, 3]), [x], /not a whole number/],
    ['a negative count', new Float64Array([-1, 0]), [], /the input count is -1/],
    ['data for fewer values', new Float64Array([1, 0, 0, FLOAT, 2, 2, 3]), [], /0 data for 1 values/],
    ['an input without a tensor', new Float64Array([1, 0, 0, -1, 0]), [null], /input 'x' has no tensor/],
    [
      'data that do not fit',
      new Float64Array([1, 0, 0, FLOAT, 2, 2, 4]),
      [x],
      /has 24 bytes of data, but its type and shape need 32/,
    ],
    [
      'a dimension of 2^63 or more',
      new Float64Array([1, 0, 0, FLOAT, 2, 1e300, 0]),
      [x],
      /input 'x' has more elements than/,
    ],
    [
      'an input given twice',
      new Float64Array([2, 0, 0, FLOAT, 2, 2, 3, 0, FLOAT, 2, 2, 3]),
      [x, x],
      /input 'x' given twice/,
    ],
    ['an output given twice', new Float64Array([0, 2, 0, -1, 0, 0, -1, 0]), [null, null], /output 'y' given twice/],
  ];
  it.each(cases)('%s: an ONEBIT_INPUT error', async (_, plan, data, message) => {
    const run = async () => native.run(plan as Float64Array, data as Float32Array[], {});
    await expect(run()).rejects.toMatchObject({ code: 'ONEBIT_INPUT', message: expect.stringMatching(message) });
  });

  it('is read as it was given, though reading the data detaches its buffer', async () => {
    // A getter on the data runs JavaScript while the addon reads the run: the plan is copied first.
    const plan = new Float64Array([1, 2, 0, FLOAT, 2, 2, 3, 0, -1, 0, 1, -1, 0]);
    const values = Float32Array.from({ length: 6 }, (_, i) => i);
    const data: unknown[] = [null, null, null];
    Object.defineProperty(data, 0, {
      get() {
        // The transfer moves the plan's memory to `moved`: overwritten, a plan read late is garbage.
        const moved = structuredClone(plan.buffer, { transfer: [plan.buffer] });
        new Float64Array(moved).fill(7777);
        return values;
      },
    });
    const [y, s] = (await native.run(plan, data as Float32Array[], {})) as { dims: number[]; data: ArrayBuffer }[];
    expect(plan.byteLength).toBe(0);
    expect(y.dims).toEqual([2, 3]);
    expect(Array.from(new Float32Array(y.data))).toEqual(Array.from(values));
    expect(Array.from(new BigInt64Array(s.data), Number)).toEqual([2, 3]);
  });
});

describe('values a run cannot take', () => {
  it('a string tensor element that is not a string, and dims that are not numbers: ONEBIT_INPUT errors', async () => {
    const strings = model({
      name: 'strings',
      node: [node('Identity', ['x'], ['y'])],
      input: [valueInfo('x', DataType.STRING, [2])],
      output: [valueInfo('y', DataType.STRING, [2])],
    });
    const session = await ort.InferenceSession.create(strings, onebit);
    const fine = await session.run({ x: new ort.Tensor('string', ['a', 'b'], [2]) });
    expect(fine.y.data).toEqual(['a', 'b']);
    const symbol = new ort.Tensor('string', ['a', 'b'], [2]);
    (symbol.data as unknown[])[1] = Symbol('b');
    await expect(session.run({ x: symbol })).rejects.toMatchObject({
      code: 'ONEBIT_INPUT',
      message: "input 'x' is a string tensor, but its element 1 is not a string",
    });
    const bigint = new ort.Tensor('string', ['a', 'b'], [2]);
    (bigint as unknown as { dims: unknown[] }).dims = [2n];
    await expect(session.run({ x: bigint })).rejects.toMatchObject({
      code: 'ONEBIT_INPUT',
      message: expect.stringMatching(/input 'x' has dims 2: they must be an array of numbers/),
    });
    await session.release();
  });
});
