// SPDX-License-Identifier: Apache-2.0
// Inputs are safe whatever the caller does with their buffers while a run is in flight: the addon
// copies numeric inputs when run() is called (all but earlier outputs fed back, which it reads in
// place: output_buffers.test.ts), so a transferred (detached) or overwritten buffer cannot change
// or crash the run. A buffer detached before run() is a typed error; a
// SharedArrayBuffer input works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { exactQdq, int8Input, qdqGroup } from './helpers/models.js';
import { ort, pkg } from './helpers/package.js';

const group = qdqGroup(256, 64);
const ROWS = 512; // a run long enough that the caller acts while it is in flight

describe('input buffers', () => {
  let session: import('onnxruntime-node').InferenceSession;
  beforeAll(async () => {
    session = await ort.InferenceSession.create(group.bytes, {
      executionProviders: [{ name: 'onebit', device: 'none' } as never],
    });
  });
  afterAll(async () => session.release());

  it('a buffer transferred and overwritten while the run is in flight does not change its result', async () => {
    const x = int8Input(ROWS * group.k, 11);
    const expected = exactQdq(group, x, ROWS);
    for (let trial = 0; trial < 4; ++trial) {
      const data = Int8Array.from(x);
      const pending = session.run({ x_q: new ort.Tensor('int8', data, [ROWS, group.k]) });
      // The transfer detaches `data` and hands its memory to `moved`, which then overwrites it.
      const moved = new Int8Array(structuredClone(data.buffer, { transfer: [data.buffer] }));
      expect(data.byteLength).toBe(0);
      moved.fill(-128);
      const out = await pending;
      expect(Array.from(out.y_q.data as Int8Array)).toEqual(Array.from(expected));
    }
  });

  it('a buffer detached before run() is a typed input error that says what to do', async () => {
    const data = int8Input(group.k);
    const tensor = new ort.Tensor('int8', data, [1, group.k]);
    structuredClone(data.buffer, { transfer: [data.buffer] });
    const attempt = session.run({ x_q: tensor });
    await expect(attempt).rejects.toThrow(pkg.OnebitInputError);
    await expect(attempt).rejects.toThrow(
      /input 'x_q' is backed by a detached ArrayBuffer \(transferred away, e.g. by postMessage or structuredClone\): keep the data in this thread until run\(\) returns, or pass a copy/,
    );
  });

  it('a SharedArrayBuffer input runs and gives the exact result', async () => {
    const x = int8Input(3 * group.k, 12);
    const shared = new Int8Array(new SharedArrayBuffer(x.byteLength + 8), 8, x.length); // with an offset
    shared.set(x);
    const out = await session.run({ x_q: new ort.Tensor('int8', shared, [3, group.k]) });
    expect(Array.from(out.y_q.data as Int8Array)).toEqual(Array.from(exactQdq(group, x, 3)));
  });
});
