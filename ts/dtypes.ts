// SPDX-License-Identifier: Apache-2.0
// The tensor element types onnxruntime-node supports, with their ONNX type numbers and the typed
// arrays onnxruntime-common keeps them in.

export type OnebitDataType =
  | 'float32'
  | 'float64'
  | 'float16'
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'bool'
  | 'string'
  | 'int4'
  | 'uint4';

type TypedArrayConstructor = { new (buffer: ArrayBuffer): ArrayBufferView & { length: number } };

interface DataTypeInfo {
  onnx: number; // ONNXTensorElementDataType
  array: TypedArrayConstructor | null; // null: string
}

const DATA_TYPES: Record<OnebitDataType, DataTypeInfo> = {
  float32: { onnx: 1, array: Float32Array },
  uint8: { onnx: 2, array: Uint8Array },
  int8: { onnx: 3, array: Int8Array },
  uint16: { onnx: 4, array: Uint16Array },
  int16: { onnx: 5, array: Int16Array },
  int32: { onnx: 6, array: Int32Array },
  int64: { onnx: 7, array: BigInt64Array },
  string: { onnx: 8, array: null },
  bool: { onnx: 9, array: Uint8Array },
  float16: { onnx: 10, array: Uint16Array }, // raw IEEE half bits, as onnxruntime-common keeps them without Float16Array
  float64: { onnx: 11, array: Float64Array },
  uint32: { onnx: 12, array: Uint32Array },
  uint64: { onnx: 13, array: BigUint64Array },
  uint4: { onnx: 21, array: Uint8Array }, // two values a byte
  int4: { onnx: 22, array: Uint8Array },
};

export const SUPPORTED_DATA_TYPES = Object.keys(DATA_TYPES) as OnebitDataType[];

export function isSupportedDataType(type: string): type is OnebitDataType {
  return Object.hasOwn(DATA_TYPES, type);
}

export function onnxTypeOf(type: OnebitDataType): number {
  return DATA_TYPES[type].onnx;
}

export function dataTypeOfOnnx(onnx: number): OnebitDataType | undefined {
  return SUPPORTED_DATA_TYPES.find((t) => DATA_TYPES[t].onnx === onnx);
}

/** Wraps output bytes from the addon in the typed array onnxruntime-common expects for `type`. */
export function typedArrayOf(type: OnebitDataType, buffer: ArrayBuffer): ArrayBufferView {
  const array = DATA_TYPES[type].array;
  if (array === null) throw new TypeError('string tensors carry string arrays');
  // A Float16Array (Node 22+ with the flag, or newer) is what onnxruntime-common prefers when it exists.
  const float16 = (globalThis as { Float16Array?: TypedArrayConstructor }).Float16Array;
  if (type === 'float16' && float16) return new float16(buffer);
  return new array(buffer);
}
