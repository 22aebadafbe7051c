// SPDX-License-Identifier: Apache-2.0
// Tensors given in run()'s fetches are pre-allocated outputs, as onnxruntime-common defines them:
// run() fills them and returns those same objects. Over JS memory they are filled when the run
// resolves (JS memory can be detached or resized while a run is in flight: that is an error then,
// never a write into freed memory); over memory of the addon's (onebit.allocateTensor, an earlier
// output) ORT writes them in place, and an input inside one is read in place (smollm2.test.ts: the
// shared past/present KV buffers). A fetch that does not fit is a clear error naming the output.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DataType, model, node, tensor, valueInfo } from '../../ts/apps/model/onnx_graph.js';
import { exactQdq, int8Input, qdqGroup, qdqGroupModel } from './helpers/models.js';
import { ort, pkg, runNode } from './helpers/package.js';

const group = qdqGroup(64, 64);
const onebit = { executionProviders: [{ name: 'onebit', device: 'none' } as never] };

describe('pre-allocated outputs', () => {
  let session: import('onnxruntime-node').InferenceSession;
  beforeAll(async () => {
    session = await ort.InferenceSession.create(group.bytes, onebit);
  });
  afterAll(async () => session?.release());

  it("over JS memory or the addon's, are filled and returned as the same tensors, run after run", async () => {
    const js = new ort.Tensor('int8', new Int8Array(5 * group.n).fill(77), [5, group.n]);
    const ours = pkg.onebit.allocateTensor('int8', [5, group.n]);
    expect(Array.from(ours.data as Int8Array).every((v) => v === 0)).toBe(true);
    for (const [seed, y] of [
      [1, js],
      [2, js],
      [3, ours],
      [4, ours],
    ] as const) {
      const x = int8Input(5 * group.k, seed);
      const out = await session.run({ x_q: new ort.Tensor('int8', x, [5, group.k]) }, { y_q: y });
      expect(out.y_q).toBe(y);
      expect(Array.from(y.data as Int8Array)).toEqual(Array.from(exactQdq(group, x, 5)));
    }
  });

  it('an input in the same buffer as the output gives the result of its values', async () => {
    // x and y one buffer (the group is square): copied in for JS memory, read in place for ours
    // (the EP reads its whole activation before it writes).
    for (const make of [
      (b: Int8Array) => new ort.Tensor('int8', b, [3, group.k]),
      (b: Int8Array) => {
        const t = pkg.onebit.allocateTensor('int8', [3, group.k]);
        (t.data as Int8Array).set(b);
        return t;
      },
    ]) {
      const values = int8Input(3 * group.k, 4);
      const expected = Array.from(exactQdq(group, values, 3));
      const shared = make(values);
      await session.run({ x_q: shared }, { y_q: shared });
      expect(Array.from(shared.data as Int8Array)).toEqual(expected);
    }
  });

  it('of the wrong type, shape or kind, or sharing memory, are refused, naming the output', async () => {
    const x = new ort.Tensor('int8', int8Input(2 * group.k), [2, group.k]);
    await expect(
      session.run({ x_q: x }, { y_q: new ort.Tensor('float32', new Float32Array(2 * group.n), [2, group.n]) }),
    ).rejects.toThrow(/pre-allocated output 'y_q' is float32, but the model expects int8/);
    await expect(
      session.run({ x_q: x }, { y_q: new ort.Tensor('int8', new Int8Array(3 * group.n), [3, group.n]) }),
    ).rejects.toThrow(/output 'y_q' has shape \[2, 64\] in this run, but its pre-allocated tensor has \[3, 64\]/);
    await expect(session.run({ x_q: x }, { y_q: pkg.onebit.allocateTensor('int8', [3, group.n]) })).rejects.toThrow(
      /output 'y_q' has shape \[2, 64\] in this run, but its pre-allocated tensor has \[3, 64\]/,
    );
    await expect(
      session.run({ x_q: x }, { y_q: new ort.Tensor('int8', new Int8Array(2 * group.n), [2, group.n, 1]) }),
    ).rejects.toThrow(/pre-allocated output 'y_q' has shape \[2, 64, 1\], but the model expects/);
    const detached = new ort.Tensor('int8', new Int8Array(2 * group.n), [2, group.n]);
    structuredClone((detached.data as Int8Array).buffer, { transfer: [(detached.data as Int8Array).buffer] });
    await expect(session.run({ x_q: x }, { y_q: detached })).rejects.toThrow(/pre-allocated output 'y_q'.*detached/);
    // Two outputs over one buffer: the group's output and its dequantized input.
    const twoOutputs = await ort.InferenceSession.create(
      qdqGroupModel(group, { extraOutputs: [valueInfo('x_f', DataType.FLOAT, ['rows', group.k])] }),
      onebit,
    );
    const buffer = new ArrayBuffer(4 * 2 * group.k);
    await expect(
      twoOutputs.run(
        { x_q: x },
        {
          y_q: new ort.Tensor('int8', new Int8Array(buffer, 0, 2 * group.n), [2, group.n]),
          x_f: new ort.Tensor('float32', new Float32Array(buffer), [2, group.k]),
        },
      ),
    ).rejects.toThrow(/pre-allocated output 'x_f' shares memory with another pre-allocated output/);
    await twoOutputs.release();
    // The session is still usable after each refusal.
    expect(Array.from((await session.run({ x_q: x })).y_q.data as Int8Array)).toEqual(
      Array.from(exactQdq(group, x.data as Int8Array, 2)),
    );
  });

  it("whose rows do not fit the run: one input error over either memory, nothing of ORT's", async () => {
    // Over the addon's memory ORT is handed the tensor to write in place, and refused it with its
    // internal op_kernel.cc text (an OnebitRuntimeError) and an [E:onnxruntime] line on stderr.
    const message =
      "output 'y_q' has shape [2, 64] in this run, but its pre-allocated tensor has [3, 64]: " +
      "pre-allocate it with the output's shape for this run, or pass null for it";
    const x = new ort.Tensor('int8', int8Input(2 * group.k, 6), [2, group.k]);
    for (const y of [
      pkg.onebit.allocateTensor('int8', [3, group.n]),
      new ort.Tensor('int8', new Int8Array(3 * group.n).fill(9), [3, group.n]),
    ]) {
      const refused = await session.run({ x_q: x }, { y_q: y }).then(
        () => null,
        (e: Error) => e,
      );
      expect(refused).toBeInstanceOf(pkg.OnebitInputError);
      expect(refused?.message).toBe(message);
      expect(new Set(y.data as Int8Array).size).toBe(1); // not written
    }
    // In a process of its own: nothing of ORT's on stderr either.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-prealloc-'));
    writeFileSync(path.join(dir, 'group.onnx'), group.bytes);
    const script = `
      const pkg = require('onebit-ep'); const ort = require('onnxruntime-node');
      (async () => {
        const s = await ort.InferenceSession.create(${JSON.stringify(path.join(dir, 'group.onnx'))}, { executionProviders: [{ name: 'onebit', device: 'none' }] });
        const x = new ort.Tensor('int8', new Int8Array(2 * ${group.k}), [2, ${group.k}]);
        try { await s.run({ x_q: x }, { y_q: pkg.onebit.allocateTensor('int8', [3, ${group.n}]) }); console.log('ran'); }
        catch (e) { console.log(e.name + ': ' + e.message); }
      })();`;
    const ran = runNode(['-e', script]);
    expect(ran.stdout.trim()).toBe(`OnebitInputError: ${message}`);
    expect(ran.stderr).toBe('');
  });

  it('over JS memory detached or shrunk while the run is in flight: an error, no write into it', async () => {
    const rows = 4096;
    const x = new ort.Tensor('int8', int8Input(rows * group.k), [rows, group.k]);
    const moved = new ort.Tensor('int8', new Int8Array(rows * group.n), [rows, group.n]);
    const running = session.run({ x_q: x }, { y_q: moved });
    const taken = structuredClone((moved.data as Int8Array).buffer, { transfer: [(moved.data as Int8Array).buffer] });
    await expect(running).rejects.toThrow(/pre-allocated output 'y_q' \(after the run\).*detached/);
    expect(new Int8Array(taken).every((v) => v === 0)).toBe(true);
    const resizable = new ArrayBuffer(rows * group.n, { maxByteLength: rows * group.n });
    const shrunk = new ort.Tensor('int8', new Int8Array(resizable, 0, rows * group.n), [rows, group.n]);
    const shrinking = session.run({ x_q: x }, { y_q: shrunk });
    resizable.resize(16);
    await expect(shrinking).rejects.toThrow(/pre-allocated output 'y_q' \(after the run\)/);
  });

  it('a graph input that is also an output is filled with the input', async () => {
    const passthrough = model({
      name: 'passthrough',
      node: [node('Add', ['x', 'one'], ['y'])],
      initializer: [tensor('one', DataType.FLOAT, [], new Uint8Array(new Float32Array([1]).buffer))],
      input: [valueInfo('x', DataType.FLOAT, [3])],
      output: [valueInfo('x', DataType.FLOAT, [3]), valueInfo('y', DataType.FLOAT, [3])],
    });
    const s = await ort.InferenceSession.create(passthrough, onebit);
    for (const given of [
      new ort.Tensor('float32', new Float32Array(3).fill(-1), [3]),
      pkg.onebit.allocateTensor('float32', [3]),
    ]) {
      const out = await s.run(
        { x: new ort.Tensor('float32', Float32Array.from([1, 2, 3]), [3]) },
        { x: given, y: null },
      );
      expect(Array.from(given.data as Float32Array)).toEqual([1, 2, 3]);
      expect(Array.from(out.y.data as Float32Array)).toEqual([2, 3, 4]);
    }
    await s.release();
  });

  it('allocateTensor refuses what it cannot allocate, with an input error', () => {
    const refused = (type: string, dims: unknown, message: RegExp) => {
      expect(() => pkg.onebit.allocateTensor(type as never, dims as never)).toThrow(message);
      expect(() => pkg.onebit.allocateTensor(type as never, dims as never)).toThrow(pkg.OnebitInputError);
    };
    refused('string', [2], /type string is not one onebit-ep allocates/);
    refused('float32', [2, -1], /must be an array of non-negative integers/);
    refused('float32', 5, /must be an array of non-negative integers/);
    // More than one ArrayBuffer holds, also where the byte count would wrap around to 0.
    refused('float32', [2 ** 30 + 1], /4294967300 bytes is more than a JS ArrayBuffer holds/);
    refused('float64', [2 ** 31, 2 ** 31], /more elements than a JS ArrayBuffer holds/);
    expect(pkg.onebit.allocateTensor('float32', [0, 4]).dims).toEqual([0, 4]);
  });

  it('dims whose element count wraps around are refused for an input too', async () => {
    // 2^58 x 64 elements: 2^64 bytes, 0 in 64 bits, which an empty buffer would have matched.
    await expect(
      session.run({
        x_q: { type: 'int8', dims: [2 ** 58, group.k], data: new Int8Array(0), location: 'cpu' } as never,
      }),
    ).rejects.toThrow(/input 'x_q' has more elements than a JS ArrayBuffer holds/);
  });
});
