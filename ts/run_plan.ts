// SPDX-License-Identifier: Apache-2.0
// One run's values as the addon takes them (bindings/run_plan.h): metadata indices, element types and
// dims of all inputs and outputs in one Float64Array, their data beside it. The addon reads the
// numbers without a property lookup per value (about 0.45 µs a value before; a SmolLM2 decode step
// passes 121 values). A plan is joined from segments, so values fixed from run to run (a bound
// run's KV cache: bound_run.ts) are laid out once.
import type { NativeTensor } from './addon_types.js';

/** The element type the addon reads as "not pre-allocated: return this output". */
const RETURNED = -1;

export interface RunPlan {
  plan: Float64Array;
  data: (ArrayBufferView | string[] | null)[];
}

/** Consecutive values of a plan: their numbers and data. */
export interface PlanSegment {
  numbers: Float64Array;
  data: (ArrayBufferView | string[] | null)[];
}

/**
 * `tensors[i]` is the value at metadata index `indices[i]`: an input, a pre-allocated output, or null
 * for an output ORT allocates and the run returns.
 */
export function planSegment(indices: readonly number[], tensors: readonly (NativeTensor | null)[]): PlanSegment {
  let length = 0;
  for (const t of tensors) length += 3 + (t ? t.dims.length : 0);
  const numbers = new Float64Array(length);
  const data: (ArrayBufferView | string[] | null)[] = [];
  let at = 0;
  tensors.forEach((tensor, i) => {
    numbers[at++] = indices[i];
    numbers[at++] = tensor ? tensor.type : RETURNED;
    numbers[at++] = tensor ? tensor.dims.length : 0;
    for (const d of tensor?.dims ?? []) numbers[at++] = d;
    data.push(tensor ? tensor.data : null);
  });
  return { numbers, data };
}

/** The plan of the input segments' values, then the output segments'. */
export function joinPlan(inputs: readonly PlanSegment[], outputs: readonly PlanSegment[]): RunPlan {
  const segments = [...inputs, ...outputs];
  let length = 2;
  for (const s of segments) length += s.numbers.length;
  const plan = new Float64Array(length);
  plan[0] = inputs.reduce((n, s) => n + s.data.length, 0);
  plan[1] = outputs.reduce((n, s) => n + s.data.length, 0);
  let at = 2;
  for (const s of segments) {
    plan.set(s.numbers, at);
    at += s.numbers.length;
  }
  return { plan, data: ([] as RunPlan['data']).concat(...segments.map((s) => s.data)) };
}

/**
 * `inputs[i]` is the input at metadata index `inputIndices[i]`; `outputs[i]` the pre-allocated tensor
 * of the output at `outputIndices[i]`, or null for one ORT allocates and the run returns.
 */
export function runPlan(
  inputIndices: readonly number[],
  inputs: readonly NativeTensor[],
  outputIndices: readonly number[],
  outputs: readonly (NativeTensor | null)[],
): RunPlan {
  return joinPlan([planSegment(inputIndices, inputs)], [planSegment(outputIndices, outputs)]);
}
