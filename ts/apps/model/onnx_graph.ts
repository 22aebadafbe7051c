// SPDX-License-Identifier: Apache-2.0
// Small helpers to write ONNX models with onnx-proto (the protobufjs build of onnx.proto).
import { onnx } from 'onnx-proto';

export const DataType = onnx.TensorProto.DataType;

export function tensor(name: string, dataType: number, dims: number[], bytes: Uint8Array): onnx.ITensorProto {
  return { name, dataType, dims, rawData: bytes };
}

/** Appends `bytes` to an external-data file's parts (each at a page-aligned offset, so ORT can map
 *  it from the file) and returns the tensor that refers to it by `location`. */
export function externalTensor(
  name: string,
  dataType: number,
  dims: number[],
  bytes: Uint8Array,
  location: string,
  parts: Uint8Array[],
): onnx.ITensorProto {
  const page = 4096;
  let offset = parts.reduce((sum, part) => sum + part.length, 0);
  const padding = (page - (offset % page)) % page;
  if (padding) parts.push(new Uint8Array(padding));
  offset += padding;
  parts.push(bytes);
  const externalData = [
    { key: 'location', value: location },
    { key: 'offset', value: String(offset) },
    { key: 'length', value: String(bytes.length) },
  ];
  return { name, dataType, dims, dataLocation: onnx.TensorProto.DataLocation.EXTERNAL, externalData };
}

export function scalarFloat(name: string, value: number): onnx.ITensorProto {
  return tensor(name, DataType.FLOAT, [], new Uint8Array(new Float32Array([value]).buffer));
}

export function scalarInt8(name: string, value: number): onnx.ITensorProto {
  return tensor(name, DataType.INT8, [], new Uint8Array(new Int8Array([value]).buffer));
}

export function node(
  opType: string,
  inputs: string[],
  outputs: string[],
  attributes: Record<string, number> = {},
  name?: string,
): onnx.INodeProto {
  const attribute = Object.entries(attributes).map(([attrName, i]) => ({
    name: attrName,
    type: onnx.AttributeProto.AttributeType.INT,
    i,
  }));
  return { opType, input: inputs, output: outputs, attribute, name: name ?? outputs[0] };
}

/** A tensor value: dims are numbers (fixed) or names (free), undefined for an unknown shape. */
export function valueInfo(name: string, elemType: number, dims?: (number | string)[]): onnx.IValueInfoProto {
  const shape = dims && { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) };
  return { name, type: { tensorType: { elemType, shape } } };
}

export function model(graph: onnx.IGraphProto, opset = 21): Uint8Array {
  return onnx.ModelProto.encode({
    irVersion: 10,
    producerName: 'onebit-ep',
    opsetImport: [{ domain: '', version: opset }],
    graph,
  }).finish();
}
