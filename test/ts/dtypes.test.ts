// SPDX-License-Identifier: Apache-2.0
// Every dtype onnxruntime-node supports goes in and comes back out (Identity, or DQ->Q for 4-bit, on ORT's CPU EP),
// equal to the input and to what onnxruntime-node itself returns.
import { describe, expect, it } from 'vitest';

import { fourBitRoundTripModel, identityModel } from './helpers/models.js';
import { ort, pkg } from './helpers/package.js';

const CASES: { type: string; onnx: number; data: () => unknown; length: number }[] = [
  { type: 'float32', onnx: 1, data: () => Float32Array.from([1.5, -2.25, 3e-8, Infinity]), length: 4 },
  { type: 'uint8', onnx: 2, data: () => Uint8Array.from([0, 1, 200, 255]), length: 4 },
  { type: 'int8', onnx: 3, data: () => Int8Array.from([-128, -1, 0, 127]), length: 4 },
  { type: 'uint16', onnx: 4, data: () => Uint16Array.from([0, 1, 40000, 65535]), length: 4 },
  { type: 'int16', onnx: 5, data: () => Int16Array.from([-32768, -1, 0, 32767]), length: 4 },
  { type: 'int32', onnx: 6, data: () => Int32Array.from([-(2 ** 31), -1, 0, 2 ** 31 - 1]), length: 4 },
  { type: 'int64', onnx: 7, data: () => BigInt64Array.from([-(2n ** 63n), -1n, 0n, 2n ** 63n - 1n]), length: 4 },
  { type: 'string', onnx: 8, data: () => ['', 'a', 'héllo', 'onebit'], length: 4 },
  { type: 'bool', onnx: 9, data: () => Uint8Array.from([0, 1, 1, 0]), length: 4 },
  { type: 'float16', onnx: 10, data: () => Uint16Array.from([0x3c00, 0xc000, 0x7bff, 0x0001]), length: 4 },
  { type: 'float64', onnx: 11, data: () => Float64Array.from([Math.PI, -1e300, 5e-324, 0]), length: 4 },
  { type: 'uint32', onnx: 12, data: () => Uint32Array.from([0, 1, 2 ** 31, 2 ** 32 - 1]), length: 4 },
  { type: 'uint64', onnx: 13, data: () => BigUint64Array.from([0n, 1n, 2n ** 63n, 2n ** 64n - 1n]), length: 4 },
  { type: 'uint4', onnx: 21, data: () => Uint8Array.from([0x10, 0xf7, 0x0a]), length: 5 }, // 5 values, packed
  { type: 'int4', onnx: 22, data: () => Uint8Array.from([0x8f, 0x71, 0x03]), length: 5 },
];

// The values of a tensor; 4-bit ones unpacked (the pad nibble of an odd count carries no value).
function values(type: string, data: unknown, length: number): unknown[] {
  const all = Array.from(data as ArrayLike<unknown>);
  if (type !== 'int4' && type !== 'uint4') return all;
  return Array.from({ length }, (_, i) => ((all[i >> 1] as number) >> (4 * (i & 1))) & 0xf);
}

describe('dtype round trip through the onebit backend', () => {
  it('covers every dtype the package declares', () => {
    expect(CASES.map((c) => c.type).sort()).toEqual([...pkg.SUPPORTED_DATA_TYPES].sort());
  });

  for (const c of CASES) {
    it(c.type, async () => {
      const model = c.onnx >= 21 ? fourBitRoundTripModel(c.onnx) : identityModel(c.onnx);
      const input = new ort.Tensor(c.type as never, c.data() as never, [c.length]);
      // Level 1 would fold the 4-bit DQ->Q pair into an Identity that ORT has no 4-bit kernel for.
      const graphOptimizationLevel = c.onnx >= 21 ? ('disabled' as const) : ('all' as const);
      const ours = await ort.InferenceSession.create(model, { executionProviders: ['onebit'], graphOptimizationLevel });
      const fourBit = c.onnx >= 21; // onnxruntime-node's own run refuses 4-bit tensors: the input is the reference
      const cpu = fourBit
        ? undefined
        : await ort.InferenceSession.create(model, { executionProviders: ['cpu'], graphOptimizationLevel });
      expect(ours.inputMetadata[0]).toMatchObject({ type: c.type, shape: ['n'] });
      const out = (await ours.run({ x: input })).y;
      const reference = cpu ? (await cpu.run({ x: input })).y : input;
      expect(out.type).toBe(c.type);
      expect(out.dims).toEqual([c.length]);
      expect(out.data.constructor).toBe(reference.data.constructor);
      expect(values(c.type, out.data, c.length)).toEqual(values(c.type, input.data, c.length));
      expect(values(c.type, out.data, c.length)).toEqual(values(c.type, reference.data, c.length));
      expect(pkg.onebit.counters(ours).groups).toBe(0); // nothing quantized: all on ORT's CPU EP
      await ours.release();
      await cpu?.release();
    });
  }
});
