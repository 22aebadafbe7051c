// SPDX-License-Identifier: Apache-2.0
// Small helpers to write ONNX models with onnx-proto (the protobufjs build of onnx.proto).
import { onnx } from 'onnx-proto';

export const DataType = onnx.TensorProto.DataType;

export function tensor(name: string, dataType: number, dims: number[], bytes: Uint8Array): onnx.ITensorProto {
  return { name, dataType, dims, rawData: bytes };
}

export function scalarFloat(name: string, value: number): onnx.ITensorProto {
  return tensor(name, DataType.FLOAT, [], new Uint8Array(new Float32Array([value]).buffer));
}

export function scalarInt8(name: string, value: number): onnx.ITensorProto {
  return tensor(name, DataType.INT8, [], new Uint8Array(new Int8Array([value]).buffer));
}

export function node(opType: string, inputs: string[], outputs: string[], attributes: Record<string, number> = {}, name?: string): onnx.INodeProto {
  const attribute = Object.entries(attributes).map(([attrName, i]) => ({ name: attrName, type: onnx.AttributeProto.AttributeType.INT, i }));
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
