// SPDX-License-Identifier: Apache-2.0
// Whether ORT's CPU EP multiplies uint8 × int8 exactly on this CPU, asked of ORT itself: its AVX2
// kernel (vpmaddubsw) saturates 16-bit sums of two products, its VNNI kernels do not. A report
// that compares the EP with ORT says which it is, so that low agreement has its reason beside it.
import type { InferenceSession } from 'onnxruntime-node';

import { DataType, model, node, tensor, valueInfo } from '../model/onnx_graph.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');

const K = 64;
const N = 16;

export interface OrtInt8Check {
  /** True where ORT's uint8 × int8 kernels are exact (no output of the check wrong). */
  exact: boolean;
  wrongOutputs: number;
  outputs: number;
}

/** One MatMulInteger whose every pair sum (2 · 255 · 127) overflows int16. */
function saturatingMatmulInteger(): Uint8Array {
  const b = tensor('b', DataType.INT8, [K, N], new Uint8Array(K * N).fill(127));
  return model({
    name: 'ort_int8_check',
    node: [node('MatMulInteger', ['a', 'b'], ['y'])],
    input: [valueInfo('a', DataType.UINT8, [1, K])],
    output: [valueInfo('y', DataType.INT32, [1, N])],
    initializer: [b],
  });
}

export async function checkOrtInt8(): Promise<OrtInt8Check> {
  const session: InferenceSession = await ort.InferenceSession.create(saturatingMatmulInteger(), {
    executionProviders: ['cpu'],
  });
  try {
    const a = new ort.Tensor('uint8', new Uint8Array(K).fill(255), [1, K]);
    const y = (await session.run({ a })).y.data as Int32Array;
    const wrongOutputs = y.filter((v) => v !== 255 * 127 * K).length;
    return { exact: wrongOutputs === 0, wrongOutputs, outputs: N };
  } finally {
    await session.release();
  }
}

/** One line for a report: what ORT's kernel is here, and what follows for agreement with it. */
export function describeOrtInt8(check: OrtInt8Check): string {
  return check.exact
    ? "ORT's uint8 x int8 kernel on this CPU: exact (VNNI), so the EP and ORT's CPU EP should agree closely"
    : `ORT's uint8 x int8 kernel on this CPU: SATURATING (AVX2 without VNNI: 16-bit pair sums; ${check.wrongOutputs} of ` +
        `${check.outputs} outputs of a check wrong), so agreement with ORT's QDQ arm is low by ORT's error; compare each arm with fp32`;
}
