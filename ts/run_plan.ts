// SPDX-License-Identifier: Apache-2.0
// One run's values as the addon takes them (bindings/run_plan.h): metadata indices, element types and
// dims of all inputs and outputs in one Float64Array, their data beside it. The addon reads the
// numbers without a property lookup per value (about 0.45 µs a value before; a SmolLM2 decode step
// passes 121 values).
import type { NativeTensor } from './addon_types.js';

/** The element type the addon reads as "not pre-allocated: return this output". */
const RETURNED = -1;

export interface RunPlan {
  plan: Float64Array;
  data: (ArrayBufferView | string[] | null)[];
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
  let length = 2;
  for (const t of inputs) length += 3 + t.dims.length;
  for (const t of outputs) length += 3 + (t ? t.dims.length : 0);
  const plan = new Float64Array(length);
  const data: (ArrayBufferView | string[] | null)[] = [];
  plan[0] = inputs.length;
  plan[1] = outputs.length;
  let at = 2;
  const put = (index: number, tensor: NativeTensor | null) => {
    plan[at++] = index;
    plan[at++] = tensor ? tensor.type : RETURNED;
    plan[at++] = tensor ? tensor.dims.length : 0;
    for (const d of tensor?.dims ?? []) plan[at++] = d;
    data.push(tensor ? tensor.data : null);
  };
  inputs.forEach((t, i) => put(inputIndices[i], t));
  outputs.forEach((t, i) => put(outputIndices[i], t));
  return { plan, data };
}
