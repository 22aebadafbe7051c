// SPDX-License-Identifier: Apache-2.0
// Deterministic inputs for any model: free dimensions take the length (the first) or 1 (the rest).
import type { InferenceSession, Tensor } from 'onnxruntime-node';

import { OnebitInputError } from '../../errors.js';
import { randomStream } from '../model/projection_stack.js';

type TensorConstructor = new (type: string, data: unknown, dims: readonly number[]) => Tensor;

/** The shape an input gets at `len`; `usesLen` is false when the model has no free dimension at all. */
export function concreteShape(shape: readonly (number | string)[], len: number): number[] {
  let lenUsed = false;
  return shape.map((d) => {
    if (typeof d === 'number' && d >= 0) return d;
    if (lenUsed) return 1;
    lenUsed = true;
    return len;
  });
}

export function hasFreeDimension(metadata: readonly InferenceSession.ValueMetadata[]): boolean {
  return metadata.some((m) => m.isTensor && m.shape.some((d) => typeof d !== 'number' || d < 0));
}

function fill(type: string, count: number, next: () => number): unknown {
  const unit = () => next() / 2 ** 32; // [0, 1)
  switch (type) {
    case 'int8':
      return Int8Array.from({ length: count }, () => (next() & 0xff) - 128);
    case 'uint8':
      return Uint8Array.from({ length: count }, () => next() & 0xff);
    case 'int16':
      return Int16Array.from({ length: count }, () => (next() % 200) - 100);
    case 'uint16':
      return Uint16Array.from({ length: count }, () => next() % 200);
    case 'int32':
      return Int32Array.from({ length: count }, () => next() % 100);
    case 'uint32':
      return Uint32Array.from({ length: count }, () => next() % 100);
    case 'int64':
      return BigInt64Array.from({ length: count }, () => BigInt(next() % 100));
    case 'uint64':
      return BigUint64Array.from({ length: count }, () => BigInt(next() % 100));
    case 'bool':
      return Uint8Array.from({ length: count }, () => next() & 1);
    case 'float32':
      return Float32Array.from({ length: count }, () => unit() * 2 - 1);
    case 'float64':
      return Float64Array.from({ length: count }, () => unit() * 2 - 1);
    default:
      return undefined;
  }
}

/** One feed per model input, the same on every call with the same arguments. */
export function makeFeeds(
  Tensor: TensorConstructor,
  metadata: readonly InferenceSession.ValueMetadata[],
  len: number,
  seed = 7,
): Record<string, Tensor> {
  const next = randomStream(seed + len);
  const feeds: Record<string, Tensor> = {};
  for (const m of metadata) {
    if (!m.isTensor)
      throw new OnebitInputError(`input '${m.name}' is not a tensor: onebit-run can only make tensor inputs`);
    const dims = concreteShape(m.shape, len);
    const data = fill(
      m.type,
      dims.reduce((a, b) => a * b, 1),
      next,
    );
    if (data === undefined)
      throw new OnebitInputError(`input '${m.name}' is ${m.type}: onebit-run cannot make inputs of that type`);
    feeds[m.name] = new Tensor(m.type, data, dims);
  }
  return feeds;
}
