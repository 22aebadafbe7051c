// SPDX-License-Identifier: Apache-2.0
// A session's runs with some inputs and pre-allocated outputs fixed, as ORT's IO binding does for C++
// and Python (onnxruntime-node has none): the fixed values are checked and laid out in the run plan
// once, and each run passes only the others. A decoder's KV cache is 120 of a SmolLM2 step's 122
// values; a run's JavaScript then handles 2, which V8 runs slowly until it has compiled it (a
// process's first ~128 runs: docs/benchmarks-log.md, session 17).
import type { InferenceSession, OnnxValue, Tensor } from 'onnxruntime-node';

import { OnebitInputError } from './errors.js';
import { nativeFeeds, nativeFetch, outputIndexOf } from './feeds.js';
import { joinPlan, planSegment, type PlanSegment, type RunPlan } from './run_plan.js';
import type { NativeOutput, NativeTensor } from './addon_types.js';

/** What a bound run needs of its session (OnebitSessionHandler). */
export interface BindableSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly InferenceSession.ValueMetadata[];
  readonly inputIndex: ReadonlyMap<string, number>; // name → metadata index
  readonly outputIndex: ReadonlyMap<string, number>;
  /** Runs a plan; the outputs in its order, null for pre-allocated ones. */
  runPlanned(run: RunPlan): Promise<(NativeOutput | null)[]>;
  /** A returned output as an onnxruntime-node Tensor. */
  outputTensor(name: string, raw: NativeOutput): Tensor;
}

// Feeds and fetches are plain objects of tensors by name; only their own keys count (a model
// input named "constructor" is not bound by Object.prototype).
function checkedValues(what: string, values: unknown): Record<string, OnnxValue> {
  if (values === null || typeof values !== 'object' || values instanceof Map || Array.isArray(values))
    throw new OnebitInputError(`${what} must be an object of tensors by name, such as { x: tensor }`);
  return values as Record<string, OnnxValue>;
}

export class BoundRun {
  readonly #session: BindableSession;
  readonly #fixedInputs: PlanSegment;
  readonly #fixedOutputs: PlanSegment;
  readonly #returned: PlanSegment; // every output not fixed, returned by each run
  readonly #returnedNames: string[];
  readonly #free: string[]; // the inputs each run passes

  constructor(session: BindableSession, feeds: Record<string, OnnxValue>, fetches: Record<string, OnnxValue>) {
    this.#session = session;
    checkedValues('bind: feeds', feeds);
    checkedValues('bind: fetches', fetches);
    const inputs = nativeFeeds(feeds, session.inputIndex, session.inputMetadata, session.inputNames);
    this.#fixedInputs = planSegment(inputs.indices, inputs.tensors);
    this.#free = session.inputNames.filter((name) => !Object.hasOwn(feeds, name));
    const outputIndices: number[] = [];
    const outputs: NativeTensor[] = [];
    for (const [name, value] of Object.entries(fetches)) {
      const index = outputIndexOf(name, session.outputIndex, session.outputNames);
      const tensor = nativeFetch(name, value, session.outputMetadata[index]);
      if (!tensor) throw new OnebitInputError(`bind: pre-allocated output '${name}' must be a tensor`);
      outputIndices.push(index);
      outputs.push(tensor);
    }
    this.#fixedOutputs = planSegment(outputIndices, outputs);
    this.#returnedNames = session.outputNames.filter((name) => !Object.hasOwn(fetches, name));
    this.#returned = planSegment(
      this.#returnedNames.map((name) => session.outputIndex.get(name)!),
      this.#returnedNames.map(() => null),
    );
  }

  /** Runs with `feeds` (the inputs not bound) and returns the outputs not bound, by name. */
  async run(feeds: Record<string, OnnxValue>): Promise<Record<string, Tensor>> {
    const session = this.#session;
    checkedValues('run: feeds', feeds);
    for (const name of Object.keys(feeds))
      if (session.inputIndex.has(name) && !this.#free.includes(name))
        throw new OnebitInputError(`input '${name}' is bound: it cannot be fed to a run of the binding as well`);
    const inputs = nativeFeeds(feeds, session.inputIndex, session.inputMetadata, session.inputNames);
    for (const name of this.#free)
      if (!Object.hasOwn(feeds, name))
        throw new OnebitInputError(`input '${name}' is neither bound nor fed to this run`);
    const raw = await session.runPlanned(
      joinPlan([planSegment(inputs.indices, inputs.tensors), this.#fixedInputs], [this.#returned, this.#fixedOutputs]),
    );
    const results: Record<string, Tensor> = {};
    this.#returnedNames.forEach((name, i) => (results[name] = session.outputTensor(name, raw[i]!)));
    return results;
  }
}
