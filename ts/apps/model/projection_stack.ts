// SPDX-License-Identifier: Apache-2.0
// The default model of onebit-run: a Qwen3-0.6B-shaped stack of A8W8 QDQ projections, deterministic.
// Per layer q 1024->2048, k and v 1024->1024, o 2048->1024, gate and up 1024->3072, down 3072->1024.
// Each projection is DQ(x_q) . DQ(W_q int8 per-channel) -> MatMul -> QuantizeLinear; o reads q's
// output, down reads up's, and down's output feeds the next layer. One activation scale is shared.
import type { onnx } from 'onnx-proto';

import { DataType, externalTensor, model, node, scalarFloat, scalarInt8, tensor, valueInfo } from './onnx_graph.js';

export const HIDDEN = 1024;
export const PROJECTIONS: readonly { name: string; k: number; n: number }[] = [
  { name: 'q', k: 1024, n: 2048 },
  { name: 'k', k: 1024, n: 1024 },
  { name: 'v', k: 1024, n: 1024 },
  { name: 'o', k: 2048, n: 1024 },
  { name: 'gate', k: 1024, n: 3072 },
  { name: 'up', k: 1024, n: 3072 },
  { name: 'down', k: 3072, n: 1024 },
];
export const ACTIVATION_SCALE = 0.05;
/** Bump when the generated graph changes, so cached files of an older layout are not reused.
 *  2: the weights may live in an external-data file. */
export const GENERATOR_VERSION = 2;

/** splitmix32: a tiny deterministic generator, the same stream on every machine. */
export function randomStream(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

function int8Weights(next: () => number, count: number): Uint8Array {
  const bytes = new Uint8Array(count);
  for (let i = 0; i < count; ++i) bytes[i] = ((next() % 255) - 127) & 0xff; // int8 in [-127, 127]
  return bytes;
}

function channelScales(next: () => number, k: number, n: number): Uint8Array {
  const scales = new Float32Array(n);
  // Scaled so activations stay in a useful int8 range through the stack.
  for (let i = 0; i < n; ++i) scales[i] = (0.5 + next() / 2 ** 32) / (8 * Math.sqrt(k));
  return new Uint8Array(scales.buffer);
}

export interface ProjectionStack {
  bytes: Uint8Array;
  /** With `externalData`: the data file's contents, in parts, to be written in order. */
  dataParts: Uint8Array[];
  groups: number;
  inputName: string;
}

/** `externalData`: a file name next to the model that holds the int8 weights. ORT maps such weights
 *  from the file, and the EP pages its copy out once packed, so a session holds one copy of the
 *  weights even while it is created; weights inside the model are read into ORT's heap instead. */
export function projectionStack(
  layers: number,
  onLayer: (done: number) => void = () => {},
  seed = 1,
  externalData?: string,
): ProjectionStack {
  if (!Number.isSafeInteger(layers) || layers < 1)
    throw new RangeError(`layers must be an integer >= 1, got ${layers}`);
  const next = randomStream(seed);
  const nodes: onnx.INodeProto[] = [];
  const initializer: onnx.ITensorProto[] = [scalarFloat('s_act', ACTIVATION_SCALE), scalarInt8('z_act', 0)];
  const outputs: string[] = [];
  const dataParts: Uint8Array[] = [];
  let x = 'x_q';
  for (let layer = 0; layer < layers; ++layer) {
    const reads: Record<string, string> = { o: `l${layer}_q_q`, down: `l${layer}_up_q` };
    for (const { name, k, n } of PROJECTIONS) {
      const p = `l${layer}_${name}`;
      const weights = int8Weights(next, k * n);
      initializer.push(
        externalData
          ? externalTensor(`${p}_w`, DataType.INT8, [k, n], weights, externalData, dataParts)
          : tensor(`${p}_w`, DataType.INT8, [k, n], weights),
      );
      initializer.push(tensor(`${p}_ws`, DataType.FLOAT, [n], channelScales(next, k, n)));
      nodes.push(
        node('DequantizeLinear', [reads[name] ?? x, 's_act', 'z_act'], [`${p}_xf`]),
        node('DequantizeLinear', [`${p}_w`, `${p}_ws`], [`${p}_wf`], { axis: 1 }),
        node('MatMul', [`${p}_xf`, `${p}_wf`], [`${p}_y`], {}, p),
        node('QuantizeLinear', [`${p}_y`, 's_act', 'z_act'], [`${p}_q`]),
      );
    }
    outputs.push(...['k', 'v', 'o', 'gate'].map((n) => `l${layer}_${n}_q`));
    x = `l${layer}_down_q`;
    onLayer(layer + 1);
  }
  outputs.push(x);
  const bytes = model({
    name: 'projection_stack',
    node: nodes,
    initializer,
    input: [valueInfo('x_q', DataType.INT8, ['rows', HIDDEN])],
    output: outputs.map((name) => valueInfo(name, DataType.INT8)),
  });
  return { bytes, dataParts, groups: layers * PROJECTIONS.length, inputName: 'x_q' };
}
