// SPDX-License-Identifier: Apache-2.0
// Outputs are not copied: each output's ArrayBuffer wraps the memory of ORT's OrtValue and releases
// it when collected. They keep their values after later runs and after the session is released;
// fed back as inputs (whole, or a view at an offset; into another session) they give the exact
// result; an output that is also a graph input is a copy of the feed, not the caller's buffer; a
// worker thread terminated mid-run does not take the process down; and dropped outputs give their
// memory back (a leak would grow the process by gigabytes here).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DataType, valueInfo } from '../../ts/apps/model/onnx_graph.js';
import { exactQdq, int8Input, qdqGroup, qdqGroupModel } from './helpers/models.js';
import { ort, repoRoot, runNode } from './helpers/package.js';

const group = qdqGroup(64, 48);
const onebit = { executionProviders: [{ name: 'onebit', device: 'none' } as never] };

describe('output buffers', () => {
  let session: import('onnxruntime-node').InferenceSession;
  beforeAll(async () => {
    session = await ort.InferenceSession.create(group.bytes, onebit);
  });
  afterAll(async () => session?.release());

  it('keep their values through later runs and after the session is released', async () => {
    const inputs = [1, 2, 3, 4].map((seed) => int8Input(5 * group.k, seed));
    const outputs = [];
    for (const x of inputs) outputs.push((await session.run({ x_q: new ort.Tensor('int8', x, [5, group.k]) })).y_q);
    await session.release();
    session = undefined as never;
    const churn = Array.from({ length: 200 }, () => new Uint8Array(1 << 16)); // allocations where freed memory would be reused
    inputs.forEach((x, i) =>
      expect(Array.from(outputs[i].data as Int8Array)).toEqual(Array.from(exactQdq(group, x, 5))),
    );
    expect(churn.length).toBe(200);
  });

  it('fed back as inputs, whole or as a view at an offset, also to another session, give the exact result', async () => {
    // A square group whose int8 output can be the next call's int8 activation.
    const square = qdqGroup(group.k, group.k);
    const first = await ort.InferenceSession.create(square.bytes, onebit);
    const x = int8Input(6 * square.k, 21);
    const y = (await first.run({ x_q: new ort.Tensor('int8', x, [6, square.k]) })).y_q.data as Int8Array;
    const whole = (await first.run({ x_q: new ort.Tensor('int8', y, [6, square.k]) })).y_q.data as Int8Array;
    expect(Array.from(whole)).toEqual(Array.from(exactQdq(square, Int8Array.from(y), 6)));
    await first.release();
    const second = await ort.InferenceSession.create(square.bytes, onebit);
    const rows = y.subarray(2 * square.k, 5 * square.k); // rows 2..4 of the first output
    const [a, b] = await Promise.all(
      [0, 1].map(() => second.run({ x_q: new ort.Tensor('int8', rows, [3, square.k]) })),
    );
    for (const out of [a, b])
      expect(Array.from(out.y_q.data as Int8Array)).toEqual(Array.from(exactQdq(square, Int8Array.from(rows), 3)));
    await second.release();
  });

  it('a worker thread terminated while its run is in flight leaves the process running', () => {
    const script = `
      const { Worker } = require('node:worker_threads');
      const worker = new Worker(\`
        const ort = require('onnxruntime-node'); require('./dist/index.js');
        const { parentPort } = require('node:worker_threads');
        (async () => {
          const s = await ort.InferenceSession.create(Buffer.from(process.env.MODEL, 'base64'), { executionProviders: [{ name: 'onebit', device: 'none' }] });
          s.run({ x_q: new ort.Tensor('int8', new Int8Array(8192 * ${group.k}), [8192, ${group.k}]) });
          parentPort.postMessage('in flight');
        })();\`, { eval: true });
      worker.once('message', async () => { await worker.terminate(); setTimeout(() => console.log('still running'), 300); });`;
    const ran = runNode(['-e', script], repoRoot, { MODEL: Buffer.from(group.bytes).toString('base64') });
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    expect(ran.stdout.trim()).toBe('still running');
  });

  it("an output that is also the input is a copy of the feed, not the caller's buffer", async () => {
    const echoing = qdqGroupModel(group, { extraOutputs: [valueInfo('x_q', DataType.INT8, ['rows', group.k])] });
    const echo = await ort.InferenceSession.create(echoing, onebit);
    const x = int8Input(3 * group.k, 8);
    const fed = Int8Array.from(x);
    const out = await echo.run({ x_q: new ort.Tensor('int8', fed, [3, group.k]) });
    fed.fill(0);
    expect(Array.from(out.x_q.data as Int8Array)).toEqual(Array.from(x));
    expect(Array.from(out.y_q.data as Int8Array)).toEqual(Array.from(exactQdq(group, x, 3)));
    await echo.release();
  });

  it('dropped outputs give their memory back', () => {
    // 160 runs with a 16 MiB output each (2.5 GiB in all), none kept: the process must stay small.
    const script = `
      const ort = require('onnxruntime-node'); require('./dist/index.js');
      (async () => {
        const bytes = Buffer.from(process.env.MODEL, 'base64');
        const s = await ort.InferenceSession.create(bytes, { executionProviders: [{ name: 'onebit', device: 'none' }] });
        const x = new ort.Tensor('int8', new Int8Array(65536 * ${group.k}).fill(1), [65536, ${group.k}]);
        const before = process.memoryUsage().rss;
        let checksum = 0;
        for (let i = 0; i < 160; ++i) checksum += (await s.run({ x_q: x })).y_f.data[i];
        console.log(JSON.stringify({ grownMiB: (process.memoryUsage().rss - before) / 2 ** 20, checksum }));
      })();`;
    const floatOut = qdqGroupModel(qdqGroup(group.k, 64), { floatOutput: true });
    const ran = runNode(['-e', script], repoRoot, { MODEL: Buffer.from(floatOut).toString('base64') });
    expect(ran.status, ran.stderr).toBe(0);
    const { grownMiB, checksum } = JSON.parse(ran.stdout);
    expect(Number.isFinite(checksum)).toBe(true);
    expect(grownMiB).toBeLessThan(600);
  });
});
