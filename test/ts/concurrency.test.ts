// SPDX-License-Identifier: Apache-2.0
// Concurrent runs on one session and on several sessions give each caller its own right answer.
import { describe, expect, it } from 'vitest';

import { exactQdq, int8Input, qdqGroup } from './helpers/models.js';
import { ort, pkg } from './helpers/package.js';

const group = qdqGroup(128, 96, 21);

function maxDiff(a: Int8Array, b: Int8Array): number {
  let max = 0;
  for (let i = 0; i < a.length; ++i) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

describe('concurrent runs', () => {
  it('on one session: 12 runs in flight, each with its own rows', async () => {
    const session = await ort.InferenceSession.create(group.bytes, {
      executionProviders: ['onebit'],
      intraOpNumThreads: 1,
    });
    const inputs = Array.from({ length: 12 }, (_, i) => ({ rows: 1 + i, x: int8Input((1 + i) * group.k, 100 + i) }));
    const outputs = await Promise.all(
      inputs.map(({ rows, x }) => session.run({ x_q: new ort.Tensor('int8', x, [rows, group.k]) })),
    );
    outputs.forEach((out, i) => {
      expect(out.y_q.dims).toEqual([inputs[i].rows, group.n]);
      expect(maxDiff(out.y_q.data as Int8Array, exactQdq(group, inputs[i].x, inputs[i].rows))).toBeLessThanOrEqual(1);
    });
    expect(pkg.onebit.counters(session).groupRuns).toBe(12);
    await session.release();
  });

  it('on several sessions at once, with separate counters', async () => {
    const sessions = await Promise.all(
      [1, 2, 3].map(() =>
        ort.InferenceSession.create(group.bytes, { executionProviders: ['onebit'], intraOpNumThreads: 1 }),
      ),
    );
    const x = int8Input(4 * group.k, 77);
    const exact = exactQdq(group, x, 4);
    const runs = sessions.flatMap((session, s) =>
      Array.from({ length: s + 1 }, () => session.run({ x_q: new ort.Tensor('int8', x, [4, group.k]) })),
    );
    for (const out of await Promise.all(runs)) expect(maxDiff(out.y_q.data as Int8Array, exact)).toBeLessThanOrEqual(1);
    sessions.forEach((session, s) =>
      expect(pkg.onebit.counters(session)).toMatchObject({ groupRuns: s + 1, groups: 1 }),
    );
    await Promise.all(sessions.map((s) => s.release()));
  });

  it('a release while runs are in flight lets them finish', async () => {
    const session = await ort.InferenceSession.create(group.bytes, { executionProviders: ['onebit'] });
    const x = int8Input(64 * group.k, 5);
    const pending = [1, 2, 3].map(() => session.run({ x_q: new ort.Tensor('int8', x, [64, group.k]) }));
    await session.release();
    for (const out of await Promise.all(pending)) expect(out.y_q.dims).toEqual([64, group.n]);
    await expect(session.run({ x_q: new ort.Tensor('int8', x, [64, group.k]) })).rejects.toThrow(
      pkg.OnebitSessionDisposedError,
    );
  });
});
