// SPDX-License-Identifier: Apache-2.0
// Checks feeds against the session's inputs, and pre-allocated fetches against its outputs (so a
// wrong name, dtype or shape gets a clear message before ORT sees it), and converts
// onnxruntime-common tensors for the addon without copying.
import type { InferenceSession, OnnxValue, Tensor } from 'onnxruntime-node';

import { isSupportedDataType, onnxTypeOf, SUPPORTED_DATA_TYPES } from './dtypes.js';
import { OnebitInputError } from './errors.js';
import type { NativeTensor } from './addon_types.js';

function shapeText(shape: readonly (number | string)[]): string {
  return `[${shape.join(', ')}]`;
}

function checkShape(what: string, dims: readonly number[], expected: readonly (number | string)[] | undefined): void {
  if (!expected) return;
  const wrong =
    dims.length !== expected.length || expected.some((d, i) => typeof d === 'number' && d >= 0 && dims[i] !== d);
  if (wrong)
    throw new OnebitInputError(
      `${what} has shape ${shapeText(dims)}, but the model expects ${shapeText(expected)} (names are free dimensions)`,
    );
}

// `what` ("input 'x'", "pre-allocated output 'y'") names the tensor in every error.
function nativeTensor(what: string, value: OnnxValue, metadata: InferenceSession.ValueMetadata): NativeTensor {
  const tensor = value as Tensor;
  if (tensor === null || typeof tensor !== 'object' || !('type' in tensor) || !('dims' in tensor))
    throw new OnebitInputError(`${what} must be an onnxruntime Tensor`);
  if (tensor.location !== 'cpu')
    throw new OnebitInputError(`${what} lives on '${tensor.location}'; the onebit backend takes CPU tensors only`);
  if (!isSupportedDataType(tensor.type))
    throw new OnebitInputError(`${what} has type ${tensor.type}; supported types: ${SUPPORTED_DATA_TYPES.join(', ')}`);
  if (metadata.isTensor && metadata.type !== tensor.type)
    throw new OnebitInputError(
      `${what} is ${tensor.type}, but the model expects ${metadata.type}: create the tensor as new Tensor('${metadata.type}', ...)`,
    );
  const dims = tensor.dims as readonly unknown[];
  if (!Array.isArray(dims) || dims.some((d) => typeof d !== 'number'))
    throw new OnebitInputError(`${what} has dims ${String(dims)}: they must be an array of numbers`);
  checkShape(what, tensor.dims, metadata.isTensor ? metadata.shape : undefined);
  return { type: onnxTypeOf(tensor.type), dims: tensor.dims, data: tensor.data as ArrayBufferView | string[] };
}

export function nativeFeed(
  name: string,
  value: OnnxValue,
  metadata: InferenceSession.ValueMetadata | undefined,
  inputNames: readonly string[],
): NativeTensor {
  if (!metadata)
    throw new OnebitInputError(
      inputNames.length === 0
        ? `the model takes no inputs, but input '${name}' was given`
        : `the model has no input named '${name}'; its inputs are: ${inputNames.map((n) => `'${n}'`).join(', ')}`,
    );
  return nativeTensor(`input '${name}'`, value, metadata);
}

/** Each of `feeds` checked against the input it names: their metadata indices and their tensors. */
export function nativeFeeds(
  feeds: Record<string, OnnxValue>,
  inputIndex: ReadonlyMap<string, number>,
  inputMetadata: readonly InferenceSession.ValueMetadata[],
  inputNames: readonly string[],
): { indices: number[]; tensors: NativeTensor[] } {
  const indices: number[] = [];
  const tensors: NativeTensor[] = [];
  for (const [name, value] of Object.entries(feeds)) {
    const index = inputIndex.get(name);
    tensors.push(nativeFeed(name, value, index === undefined ? undefined : inputMetadata[index], inputNames));
    indices.push(index!);
  }
  return { indices, tensors };
}

/** The metadata index of output `name`, or an input error listing the model's outputs. */
export function outputIndexOf(
  name: string,
  outputIndex: ReadonlyMap<string, number>,
  outputNames: readonly string[],
): number {
  const index = outputIndex.get(name);
  if (index === undefined)
    throw new OnebitInputError(
      `the model has no output named '${name}'; its outputs are: ${outputNames.map((n) => `'${n}'`).join(', ')}`,
    );
  return index;
}

/**
 * A tensor given in run()'s fetches: ORT writes the output into its data, which must then have the
 * output's exact shape for this run. null for an output asked for by name only.
 */
export function nativeFetch(
  name: string,
  value: OnnxValue | null,
  metadata: InferenceSession.ValueMetadata,
): NativeTensor | null {
  if (value === null || value === undefined) return null;
  if ((value as Tensor).type === 'string')
    throw new OnebitInputError(
      `pre-allocated output '${name}': a string tensor cannot be pre-allocated (pass null for it)`,
    );
  return nativeTensor(`pre-allocated output '${name}'`, value, metadata);
}
