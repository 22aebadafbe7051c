// SPDX-License-Identifier: Apache-2.0
// worker_threads that each create a session of the same model share one packed copy of its
// weights (engine/shared_weights.h): the first session adds about the weights' size to the
// process's PSS, each later one far less, and every worker gets the same output.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { onnx } from 'onnx-proto';
import { describe, expect, it } from 'vitest';

import { DataType, externalTensor } from '../../ts/apps/model/onnx_graph.js';
import { exactQdq, int8Input, qdqGroup } from './helpers/models.js';
import { repoRoot } from './helpers/package.js';

const group = qdqGroup(2048, 8192, 31); // 16 MiB of int8 weights: far above a session's own state
const weightBytes = group.k * group.n;
const rows = 3;

/** The process's proportional set size: its share of every page it maps. */
function pssBytes(): number {
  const line = readFileSync('/proc/self/smaps_rollup', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Pss:'));
  return Number(line!.split(/\s+/)[1]) * 1024;
}

/** The group's model in `dir` with its weight in an external-data file, as large models come: ORT
 *  maps that file, and the EP pages its pages out once packed (a weight inside the model would stay
 *  in ORT's heap, one copy per session, whatever the EP does). */
function writeWithExternalWeight(dir: string): string {
  const proto = onnx.ModelProto.decode(group.bytes);
  const parts: Uint8Array[] = [];
  const weight = new Uint8Array(group.weights.buffer, group.weights.byteOffset, group.weights.byteLength);
  const index = proto.graph!.initializer!.findIndex((t) => t.name === 'w');
  proto.graph!.initializer![index] = externalTensor(
    'w',
    DataType.INT8,
    [group.k, group.n],
    weight,
    'model.onnx.data',
    parts,
  );
  writeFileSync(path.join(dir, 'model.onnx.data'), Buffer.concat(parts));
  writeFileSync(path.join(dir, 'model.onnx'), onnx.ModelProto.encode(proto).finish());
  return path.join(dir, 'model.onnx');
}

// A worker: loads the package, says so, creates its session when told, runs it, posts the output,
// then keeps the session until told to release it.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require('onnxruntime-node');
require(workerData.pkg);
let session;
parentPort.on('message', async (what) => {
  if (what === 'create') {
    session = await ort.InferenceSession.create(workerData.model, { executionProviders: ['onebit'], intraOpNumThreads: 1 });
    const out = await session.run({ x_q: new ort.Tensor('int8', workerData.x, [workerData.rows, workerData.k]) });
    parentPort.postMessage(out.y_q.data);
  } else {
    await session.release();
    parentPort.close();
  }
});
parentPort.postMessage('loaded');
`;

function nextMessage(worker: Worker): Promise<unknown> {
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

describe('worker_threads', () => {
  it('three workers with a session each of one model share its packed weights', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-shared-'));
    const x = int8Input(rows * group.k, 12);
    const workerData = {
      pkg: path.join(repoRoot, 'dist', 'index.js'),
      model: writeWithExternalWeight(dir),
      x,
      rows,
      k: group.k,
    };
    const workers: Worker[] = [];
    const growth: number[] = [];
    const outputs: Int8Array[] = [];
    try {
      for (let i = 0; i < 3; ++i) {
        const worker = new Worker(workerSource, { eval: true, workerData });
        workers.push(worker);
        expect(await nextMessage(worker)).toBe('loaded');
        const before = pssBytes();
        worker.postMessage('create');
        outputs.push((await nextMessage(worker)) as Int8Array);
        growth.push(pssBytes() - before);
      }
    } finally {
      for (const worker of workers) worker.postMessage('release');
      await Promise.all(workers.map((w) => new Promise((resolve) => w.once('exit', resolve))));
      rmSync(dir, { recursive: true, force: true });
    }
    const mib = growth.map((g) => (g / 2 ** 20).toFixed(1));
    console.log(
      `PSS growth per session creation: ${mib.join(', ')} MiB (${weightBytes / 2 ** 20} MiB of int8 weights)`,
    );
    // The first session packs the weights; the others find them packed and add ORT's session state only.
    expect(growth[0]).toBeGreaterThan(0.75 * weightBytes);
    expect(growth[1]).toBeLessThan(0.25 * weightBytes);
    expect(growth[2]).toBeLessThan(0.25 * weightBytes);
    const exact = exactQdq(group, x, rows);
    for (const y of outputs) {
      expect(y).toEqual(outputs[0]);
      let maxDiff = 0;
      for (let i = 0; i < y.length; ++i) maxDiff = Math.max(maxDiff, Math.abs(y[i] - exact[i]));
      expect(maxDiff).toBeLessThanOrEqual(1); // the helper's arithmetic is double, not the contract's (concurrency.test.ts)
    }
  }, 120_000);
});
