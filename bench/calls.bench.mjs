// SPDX-License-Identifier: Apache-2.0
// Per-call micro benchmark driven from Node with the `benchmark` package: one A8W8 QDQ group
// (DQ(x) · DQ(W int8, per channel) → MatMul → Q), run through onebit-ep's 'onebit' backend and
// through onnxruntime-node's own CPU EP — on the same int8 model (which ORT leaves unfused on
// x86), on its uint8 twin (which ORT fuses into an MLAS QLinearMatMul) and on the fp32 model.
// One intra-op thread everywhere; every arm pays the same JS → ORT call overhead.
//   node bench/calls.bench.mjs [--shapes 1024x2048,3072x1024] [--rows 1,4,32] [--smoke]
import Benchmark from 'benchmark';
import * as ort from 'onnxruntime-node';

import { makeFeeds } from '../dist/apps/cli/inputs.js';
import { onebit } from '../dist/index.mjs';
import { DataType, model, node, scalarFloat, tensor, valueInfo } from '../dist/apps/model/onnx_graph.js';
import { randomStream } from '../dist/apps/model/projection_stack.js';

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const smoke = process.argv.includes('--smoke');
const shapes = option('shapes', smoke ? '64x48' : '1024x2048,1024x1024,1024x3072,2048x1024,3072x1024')
  .split(',')
  .map((s) => s.split('x').map(Number));
const rowsList = option('rows', smoke ? '1,3' : '1,4,32,36,128')
  .split(',')
  .map(Number);

// The group's operands, the same numbers in every form. form: 's8' | 'u8' | 'fp32'.
function groupModel(K, N, form) {
  const next = randomStream(K * 7919 + N);
  const w = new Int8Array(K * N).map(() => (next() % 255) - 127);
  const ws = new Float32Array(N).map(() => (0.5 + next() / 2 ** 32) / (8 * Math.sqrt(K)));
  if (form === 'fp32') {
    const wf = new Float32Array(K * N).map((_, i) => w[i] * ws[i % N]);
    return model({
      name: 'fp32',
      node: [node('MatMul', ['x', 'w'], ['y'])],
      initializer: [tensor('w', DataType.FLOAT, [K, N], new Uint8Array(wf.buffer))],
      input: [valueInfo('x', DataType.FLOAT, ['M', K])],
      output: [valueInfo('y', DataType.FLOAT, ['M', N])],
    });
  }
  const type = form === 's8' ? DataType.INT8 : DataType.UINT8;
  return model({
    name: form,
    node: [
      node('DequantizeLinear', ['x', 's', 'z'], ['xf']),
      node('DequantizeLinear', ['w', 'ws'], ['wf'], { axis: 1 }),
      node('MatMul', ['xf', 'wf'], ['yf']),
      node('QuantizeLinear', ['yf', 's', 'z'], ['y']),
    ],
    initializer: [
      tensor('w', DataType.INT8, [K, N], new Uint8Array(w.buffer)),
      tensor('ws', DataType.FLOAT, [N], new Uint8Array(ws.buffer)),
      scalarFloat('s', 0.05),
      tensor('z', type, [], Uint8Array.of(form === 's8' ? 0 : 128)),
    ],
    input: [valueInfo('x', type, ['M', K])],
    output: [valueInfo('y', type, ['M', N])],
  });
}

const arms = [
  { name: 'onebit s8', form: 's8', ep: 'onebit' },
  { name: 'ORT s8 (unfused)', form: 's8', ep: 'cpu' },
  { name: 'ORT u8 (QLinearMatMul)', form: 'u8', ep: 'cpu' },
  { name: 'ORT fp32', form: 'fp32', ep: 'cpu' },
];

function runSuite(suite) {
  return new Promise((resolve) => suite.on('complete', resolve).run({ async: true }));
}

onebit.register();
console.log(
  `onebit-ep per call, 1 intra-op thread, node ${process.version}; benchmark.js: mean ms (± relative margin of error, samples)`,
);
for (const [K, N] of shapes) {
  const sessions = {};
  for (const arm of arms)
    sessions[arm.name] = await ort.InferenceSession.create(groupModel(K, N, arm.form), {
      executionProviders: [arm.ep],
      intraOpNumThreads: 1,
    });
  for (const M of rowsList) {
    const suite = new Benchmark.Suite();
    for (const arm of arms) {
      const session = sessions[arm.name];
      const feeds = makeFeeds(ort.Tensor, session.inputMetadata, M);
      suite.add(arm.name, {
        defer: true,
        fn: (deferred) => session.run(feeds).then(() => deferred.resolve()),
        minSamples: smoke ? 2 : 20,
        maxTime: smoke ? 0.05 : 2,
      });
    }
    await runSuite(suite);
    const counters = onebit.counters(sessions['onebit s8']);
    if (counters.groups !== 1 || counters.groupRuns === 0)
      throw new Error(`the onebit arm did not run on the EP: ${JSON.stringify(counters)}`);
    const mean = Object.fromEntries(suite.map((b) => [b.name, b.stats.mean * 1e3]));
    const cells = suite.map(
      (b) => `${b.name} ${(b.stats.mean * 1e3).toFixed(3)} (±${b.stats.rme.toFixed(1)} %, ${b.stats.sample.length})`,
    );
    const ours = mean['onebit s8'];
    console.log(
      `${K}x${N} M=${M}: ${cells.join(' | ')} || ORT s8/ours ${(mean['ORT s8 (unfused)'] / ours).toFixed(1)}x, ` +
        `u8/ours ${(mean['ORT u8 (QLinearMatMul)'] / ours).toFixed(2)}x, fp32/ours ${(mean['ORT fp32'] / ours).toFixed(2)}x`,
    );
  }
  for (const session of Object.values(sessions)) await session.release();
}
