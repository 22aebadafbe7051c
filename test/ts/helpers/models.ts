// SPDX-License-Identifier: Apache-2.0
// Small models for the tests, written with the package's own ONNX helpers, and an exact reference.
import { DataType, model, node, scalarFloat, tensor, valueInfo } from '../../../ts/apps/model/onnx_graph.js';
import { randomStream } from '../../../ts/apps/model/projection_stack.js';

export interface QdqGroup {
  bytes: Uint8Array;
  k: number;
  n: number;
  weights: Int8Array; // [K, N]
  weightScales: Float32Array; // [N]
  xScale: number;
  yScale: number;
  yZeroPoint: number;
}

type GroupValues = Omit<QdqGroup, 'bytes'>;

/** The group's graph: DQ(x_q int8) . DQ(W int8 per-channel) -> MatMul -> Q(int8) -> y_q; with
 * `floatOutput` it ends at the MatMul, y_f. `extraOutputs` are listed after it. */
export function qdqGroupModel(
  g: GroupValues,
  { floatOutput = false, extraOutputs = [] as ReturnType<typeof valueInfo>[] } = {},
): Uint8Array {
  const quantize = floatOutput ? [] : [node('QuantizeLinear', ['y_f', 's_y', 'z_y'], ['y_q'])];
  return model({
    name: 'qdq_group',
    node: [
      node('DequantizeLinear', ['x_q', 's_x', 'z_x'], ['x_f']),
      node('DequantizeLinear', ['w', 's_w'], ['w_f'], { axis: 1 }),
      node('MatMul', ['x_f', 'w_f'], ['y_f']),
      ...quantize,
    ],
    initializer: [
      scalarFloat('s_x', g.xScale),
      tensor('z_x', DataType.INT8, [], new Uint8Array([0])),
      tensor('w', DataType.INT8, [g.k, g.n], new Uint8Array(g.weights.buffer)),
      tensor('s_w', DataType.FLOAT, [g.n], new Uint8Array(g.weightScales.buffer)),
      scalarFloat('s_y', g.yScale),
      tensor('z_y', DataType.INT8, [], new Uint8Array([g.yZeroPoint])),
    ],
    input: [valueInfo('x_q', DataType.INT8, ['rows', g.k])],
    output: [
      floatOutput ? valueInfo('y_f', DataType.FLOAT, ['rows', g.n]) : valueInfo('y_q', DataType.INT8, ['rows', g.n]),
      ...extraOutputs,
    ],
  });
}

/** One A8W8 QDQ group: DQ(x_q int8) . DQ(W int8 per-channel) -> MatMul -> Q(int8, zp 3). */
export function qdqGroup(k = 64, n = 48, seed = 5): QdqGroup {
  const next = randomStream(seed);
  const weights = Int8Array.from({ length: k * n }, () => (next() % 255) - 127);
  const weightScales = Float32Array.from({ length: n }, () => (0.5 + next() / 2 ** 32) / 200);
  const values: GroupValues = { k, n, weights, weightScales, xScale: 0.02, yScale: 0.05, yZeroPoint: 3 };
  return { bytes: qdqGroupModel(values), ...values };
}

function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** The ONNX semantics with exact integer accumulation (the EP's contract). */
export function exactQdq(g: QdqGroup, x: Int8Array, rows: number): Int8Array {
  const y = new Int8Array(rows * g.n);
  for (let r = 0; r < rows; ++r)
    for (let c = 0; c < g.n; ++c) {
      let acc = 0;
      for (let i = 0; i < g.k; ++i) acc += x[r * g.k + i] * g.weights[i * g.n + c];
      const v = acc * (Math.fround(g.xScale) * g.weightScales[c]);
      y[r * g.n + c] = Math.min(127, Math.max(-128, roundHalfEven(v / Math.fround(g.yScale)) + g.yZeroPoint));
    }
  return y;
}

export function int8Input(count: number, seed = 9): Int8Array {
  const next = randomStream(seed);
  return Int8Array.from({ length: count }, () => (next() & 0xff) - 128);
}

/** Identity for one dtype: carries the tensor through ORT's CPU EP (the onebit EP claims nothing). */
export function identityModel(elemType: number, opset = 21): Uint8Array {
  return model(
    {
      name: 'identity',
      node: [node('Identity', ['x'], ['y'])],
      input: [valueInfo('x', elemType, ['n'])],
      output: [valueInfo('y', elemType, ['n'])],
    },
    opset,
  );
}

/** A QDQ group plus a Cast to float after it, so some work must stay on ORT's CPU EP. */
export function qdqGroupWithCpuTail(): Uint8Array {
  const g = qdqGroup(16, 8);
  return model({
    name: 'qdq_with_tail',
    node: [
      node('DequantizeLinear', ['x_q', 's_x', 'z_x'], ['x_f']),
      node('DequantizeLinear', ['w', 's_w'], ['w_f'], { axis: 1 }),
      node('MatMul', ['x_f', 'w_f'], ['y_f']),
      node('QuantizeLinear', ['y_f', 's_y', 'z_y'], ['y_q']),
      node('Cast', ['y_q'], ['y'], { to: DataType.FLOAT }),
    ],
    initializer: [
      scalarFloat('s_x', g.xScale),
      tensor('z_x', DataType.INT8, [], new Uint8Array([0])),
      tensor('w', DataType.INT8, [16, 8], new Uint8Array(g.weights.buffer)),
      tensor('s_w', DataType.FLOAT, [8], new Uint8Array(g.weightScales.buffer)),
      scalarFloat('s_y', g.yScale),
      tensor('z_y', DataType.INT8, [], new Uint8Array([g.yZeroPoint])),
    ],
    input: [valueInfo('x_q', DataType.INT8, ['rows', 16])],
    output: [valueInfo('y', DataType.FLOAT, ['rows', 8])],
  });
}

/** x (int4/uint4) -> DequantizeLinear -> QuantizeLinear -> y: ORT has no 4-bit Identity, but these
 * two carry 4-bit values exactly with scale 1 and zero point 0. */
export function fourBitRoundTripModel(elemType: number): Uint8Array {
  return model({
    name: 'four_bit_round_trip',
    node: [node('DequantizeLinear', ['x', 's', 'z'], ['x_f']), node('QuantizeLinear', ['x_f', 's', 'z'], ['y'])],
    initializer: [scalarFloat('s', 1), tensor('z', elemType, [], new Uint8Array([0]))],
    input: [valueInfo('x', elemType, ['n'])],
    output: [valueInfo('y', elemType, ['n'])],
  });
}
