// SPDX-License-Identifier: Apache-2.0
// Tensors given in run()'s fetches are pre-allocated outputs, as onnxruntime-common defines them:
// ORT writes into their memory and run() returns those same objects. An input lying inside one is
// read in place (the shared past/present KV buffers of smollm2.test.ts rely on it). A fetch that
// does not fit the output is a clear error before or from ORT, naming the output.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { exactQdq, int8Input, qdqGroup } from './helpers/models.js';
import { ort } from './helpers/package.js';

const group = qdqGroup(64, 64);
const onebit = { executionProviders: [{ name: 'onebit', device: 'none' } as never] };

describe('pre-allocated outputs', () => {
  let session: import('onnxruntime-node').InferenceSession;
  beforeAll(async () => {
    session = await ort.InferenceSession.create(group.bytes, onebit);
  });
  afterAll(async () => session?.release());

  it('are written in place and returned as the same tensors, run after run', async () => {
    const y = new ort.Tensor('int8', new Int8Array(5 * group.n).fill(77), [5, group.n]);
    for (const seed of [1, 2]) {
      const x = int8Input(5 * group.k, seed);
      const out = await session.run({ x_q: new ort.Tensor('int8', x, [5, group.k]) }, { y_q: y });
      expect(out.y_q).toBe(y);
      expect(Array.from(y.data as Int8Array)).toEqual(Array.from(exactQdq(group, x, 5)));
    }
  });

  it('an input inside a pre-allocated output is read in place, before the output is written', async () => {
    // x and y one buffer (the group is square): the result is still that of x's values.
    const buffer = int8Input(3 * group.k, 4);
    const expected = exactQdq(group, Int8Array.from(buffer), 3);
    const shared = new ort.Tensor('int8', buffer, [3, group.k]);
    await session.run({ x_q: shared }, { y_q: shared });
    expect(Array.from(buffer)).toEqual(Array.from(expected));
  });

  it('of the wrong type, shape or kind are refused, naming the output', async () => {
    const x = new ort.Tensor('int8', int8Input(2 * group.k), [2, group.k]);
    await expect(session.run({ x_q: x }, { y_q: new ort.Tensor('float32', new Float32Array(2 * group.n), [2, group.n]) }))
      .rejects.toThrow(/pre-allocated output 'y_q' is float32, but the model expects int8/);
    await expect(session.run({ x_q: x }, { y_q: new ort.Tensor('int8', new Int8Array(3 * group.n), [3, group.n]) }))
      .rejects.toThrow(/y_q/);
    await expect(session.run({ x_q: x }, { y_q: new ort.Tensor('int8', new Int8Array(2 * group.n), [2, group.n, 1]) }))
      .rejects.toThrow(/pre-allocated output 'y_q' has shape \[2, 64, 1\], but the model expects/);
    const detached = new ort.Tensor('int8', new Int8Array(2 * group.n), [2, group.n]);
    structuredClone((detached.data as Int8Array).buffer, { transfer: [(detached.data as Int8Array).buffer] });
    await expect(session.run({ x_q: x }, { y_q: detached }))
      .rejects.toThrow(/pre-allocated output 'y_q'.*detached/);
    // The session is still usable after each refusal.
    expect(Array.from((await session.run({ x_q: x })).y_q.data as Int8Array)).toEqual(Array.from(exactQdq(group, x.data as Int8Array, 2)));
  });
});
