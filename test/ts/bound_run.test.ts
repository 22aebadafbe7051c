// SPDX-License-Identifier: Apache-2.0
// onebit.bind (ts/bound_run.ts): runs with some inputs and pre-allocated outputs fixed, as ORT's IO
// binding. A bound run returns what a plain run of the same values returns, writes the bound
// outputs in place, and says what is wrong with a feed, a binding or a session by name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DataType, model, node, valueInfo } from '../../ts/apps/model/onnx_graph.js';
import { joinPlan, planSegment, runPlan } from '../../ts/run_plan.js';
import { ort, pkg } from './helpers/package.js';

const onebit = { executionProviders: [{ name: 'onebit', device: 'none' } as never] };

// y = x + w (returned), z = x · w (pre-allocated, bound); n free.
const addMul = model({
  name: 'add_mul',
  node: [node('Add', ['x', 'w'], ['y']), node('Mul', ['x', 'w'], ['z'])],
  input: [valueInfo('x', DataType.FLOAT, ['n']), valueInfo('w', DataType.FLOAT, ['n'])],
  output: [valueInfo('y', DataType.FLOAT, ['n']), valueInfo('z', DataType.FLOAT, ['n'])],
});

const tensor = (values: number[]) => new ort.Tensor('float32', Float32Array.from(values), [values.length]);

describe('bound runs', () => {
  let session: import('onnxruntime-node').InferenceSession;
  beforeAll(async () => {
    session = await ort.InferenceSession.create(addMul, onebit);
  });
  afterAll(async () => session?.release());

  it('return what a plain run returns and write the bound outputs in place, run after run', async () => {
    const w = pkg.onebit.allocateTensor('float32', [3]);
    (w.data as Float32Array).set([2, -1, 0.5]);
    const z = pkg.onebit.allocateTensor('float32', [3]);
    const bound = pkg.onebit.bind(session, { feeds: { w }, fetches: { z } });
    for (const x of [
      [1, 2, 3],
      [-4, 0, 8],
    ]) {
      const out = await bound.run({ x: tensor(x) });
      expect(Object.keys(out)).toEqual(['y']);
      expect(out.y).toBeInstanceOf(ort.Tensor);
      const plain = await session.run({ x: tensor(x), w });
      expect(Array.from(out.y.data as Float32Array)).toEqual(Array.from(plain.y.data as Float32Array));
      expect(out.y.dims).toEqual([3]);
      expect(Array.from(z.data as Float32Array)).toEqual(Array.from(plain.z.data as Float32Array));
    }
  });

  it('return tensors the next run takes, and bind nothing when given nothing', async () => {
    const bound = pkg.onebit.bind(session);
    const first = await bound.run({ x: tensor([1, 2]), w: tensor([3, 4]) });
    const second = await bound.run({ x: first.y, w: first.z });
    expect(Array.from(second.y.data as Float32Array)).toEqual([4 + 3, 6 + 8]);
    expect(second.z.size).toBe(2);
  });

  it('count only the own keys of feeds and fetches', async () => {
    // Inputs and an output named as members of Object.prototype: neither bound nor left out by it.
    const named = model({
      name: 'proto_names',
      node: [node('Add', ['constructor', 'toString'], ['valueOf'])],
      input: [valueInfo('constructor', DataType.FLOAT, ['n']), valueInfo('toString', DataType.FLOAT, ['n'])],
      output: [valueInfo('valueOf', DataType.FLOAT, ['n'])],
    });
    const s = await ort.InferenceSession.create(named, onebit);
    const out = await pkg.onebit.bind(s, { feeds: { toString: tensor([1]) } }).run({ constructor: tensor([2]) });
    expect(Object.keys(out)).toEqual(['valueOf']);
    expect(Array.from(out.valueOf.data as Float32Array)).toEqual([3]);
    await s.release();
  });

  it('say what is wrong with a feed or a binding, by name', async () => {
    const w = pkg.onebit.allocateTensor('float32', [3]);
    const z = pkg.onebit.allocateTensor('float32', [3]);
    const bound = pkg.onebit.bind(session, { feeds: { w }, fetches: { z } });
    await expect(bound.run({ x: tensor([1, 2, 3]), w })).rejects.toThrow(/input 'w' is bound/);
    await expect(bound.run({ v: tensor([1, 2, 3]) })).rejects.toThrow(/no input named 'v'/);
    await expect(bound.run({})).rejects.toThrow(/input 'x' is neither bound nor fed/);
    expect(() => pkg.onebit.bind(session, { fetches: { q: z } })).toThrow(/no output named 'q'/);
    await expect(bound.run(null as never)).rejects.toThrow(/run: feeds must be an object of tensors by name/);
    expect(() => pkg.onebit.bind(session, { feeds: new Map() as never })).toThrow(/bind: feeds must be an object/);
    expect(() => pkg.onebit.bind(session, { feeds: { w: new ort.Tensor('int32', new Int32Array(3), [3]) } })).toThrow(
      /input 'w' is int32, but the model expects float32/,
    );
  });

  it('need a session on the onebit backend, and a live one', async () => {
    const cpu = await ort.InferenceSession.create(addMul);
    expect(() => pkg.onebit.bind(cpu, {})).toThrow(/does not run on the onebit backend/);
    await cpu.release();
    const released = await ort.InferenceSession.create(addMul, onebit);
    const bound = pkg.onebit.bind(released, {});
    await released.release();
    await expect(bound.run({ x: tensor([1]), w: tensor([2]) })).rejects.toThrow(/released/);
  });
});

describe('plan segments', () => {
  it('join into the plan runPlan lays out at once', () => {
    const x = { type: 1, dims: [2, 3], data: new Float32Array(6) };
    const w = { type: 1, dims: [4], data: new Float32Array(4) };
    const z = { type: 7, dims: [2], data: new BigInt64Array(2) };
    const whole = runPlan([0, 2], [x, w], [1, 0], [null, z]);
    const joined = joinPlan(
      [planSegment([0], [x]), planSegment([2], [w])],
      [planSegment([1], [null]), planSegment([0], [z])],
    );
    expect(Array.from(joined.plan)).toEqual(Array.from(whole.plan));
    expect(joined.data).toEqual(whole.data);
  });
});
