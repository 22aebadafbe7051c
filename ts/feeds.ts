// SPDX-License-Identifier: Apache-2.0
// Checks feeds against the session's inputs (so a wrong name, dtype or shape gets a clear message
// before ORT sees it) and converts onnxruntime-common tensors for the addon without copying.
import type { InferenceSession, OnnxValue, Tensor } from 'onnxruntime-node';

import { isSupportedDataType, onnxTypeOf, SUPPORTED_DATA_TYPES } from './dtypes.js';
import { OnebitInputError } from './errors.js';
import type { NativeTensor } from './native.js';

function shapeText(shape: readonly (number | string)[]): string {
  return `[${shape.join(', ')}]`;
}

function checkShape(name: string, dims: readonly number[], expected: readonly (number | string)[] | undefined): void {
  if (!expected) return;
  const wrong =
    dims.length !== expected.length || expected.some((d, i) => typeof d === 'number' && d >= 0 && dims[i] !== d);
  if (wrong)
    throw new OnebitInputError(
      `input '${name}' has shape ${shapeText(dims)}, but the model expects ${shapeText(expected)} (names are free dimensions)`,
    );
}

export function nativeFeed(name: string, value: OnnxValue, metadata: InferenceSession.ValueMetadata | undefined, inputNames: readonly string[]): NativeTensor {
  if (!metadata)
    throw new OnebitInputError(inputNames.length === 0
      ? `the model takes no inputs, but input '${name}' was given`
      : `the model has no input named '${name}'; its inputs are: ${inputNames.map((n) => `'${n}'`).join(', ')}`);
  const tensor = value as Tensor;
  if (tensor === null || typeof tensor !== 'object' || !('type' in tensor) || !('dims' in tensor))
    throw new OnebitInputError(`input '${name}' must be an onnxruntime Tensor`);
  if (tensor.location !== 'cpu')
    throw new OnebitInputError(`input '${name}' lives on '${tensor.location}'; the onebit backend takes CPU tensors only`);
  if (!isSupportedDataType(tensor.type))
    throw new OnebitInputError(`input '${name}' has type ${tensor.type}; supported types: ${SUPPORTED_DATA_TYPES.join(', ')}`);
  if (metadata.isTensor && metadata.type !== tensor.type)
    throw new OnebitInputError(`input '${name}' is ${tensor.type}, but the model expects ${metadata.type}: create the tensor as new Tensor('${metadata.type}', ...)`);
  checkShape(name, tensor.dims, metadata.isTensor ? metadata.shape : undefined);
  return { type: onnxTypeOf(tensor.type), dims: [...tensor.dims], data: tensor.data as ArrayBufferView | string[] };
}
