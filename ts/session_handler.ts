// SPDX-License-Identifier: Apache-2.0
// The onnxruntime-common session handler of the onebit backend: one native session (ORT with our EP
// and the CPU EP as fallback), run on worker threads.
import type { InferenceSession, InferenceSessionHandler, OnnxValue, SessionHandler, Tensor } from 'onnxruntime-node';

import { toCounters, type OnebitCounters } from './counters.js';
import { dataTypeOfOnnx, typedArrayOf } from './dtypes.js';
import { fromNativeError, OnebitError, OnebitSessionDisposedError } from './errors.js';
import { nativeFeeds, nativeFetch, outputIndexOf } from './feeds.js';
import { runPlan, type RunPlan } from './run_plan.js';
import { ortNode } from './native.js';
import { BoundRun, type BindableSession } from './bound_run.js';
import type { NativeOutput, NativeRunOptions, NativeSession, NativeValueMetadata } from './addon_types.js';

function valueMetadata(raw: NativeValueMetadata): InferenceSession.ValueMetadata {
  if (!raw.isTensor) return { name: raw.name, isTensor: false };
  const type = dataTypeOfOnnx(raw.type ?? 0);
  if (!type)
    throw new OnebitError(
      'ONEBIT_ORT',
      `'${raw.name}' has an element type onebit-ep cannot carry (ONNX type ${raw.type})`,
    );
  return { name: raw.name, isTensor: true, type, shape: raw.shape ?? [] };
}

function outputValue(name: string, raw: NativeOutput): OnnxValue {
  const type = raw.isTensor ? dataTypeOfOnnx(raw.type ?? 0) : undefined;
  if (!type)
    throw new OnebitError(
      'ONEBIT_ORT',
      `output '${name}' is not a tensor of a supported type: onebit-ep returns tensors only`,
    );
  const data = type === 'string' ? raw.data : typedArrayOf(type, raw.data as ArrayBuffer);
  // onnxruntime-common turns {type, data, dims} into its Tensor class (the one the app imported).
  return { type, data, dims: raw.dims ?? [] } as unknown as OnnxValue;
}

function nativeRunOptions(options: InferenceSession.RunOptions): NativeRunOptions {
  const configEntries: [string, string][] = [];
  for (const [key, value] of Object.entries(options.extra ?? {})) configEntries.push([key, String(value)]);
  return { logSeverityLevel: options.logSeverityLevel, tag: options.tag, configEntries };
}

export class OnebitSessionHandler implements InferenceSessionHandler, BindableSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly InferenceSession.ValueMetadata[];
  #native: NativeSession;
  readonly inputIndex: ReadonlyMap<string, number>; // name → metadata index
  readonly outputIndex: ReadonlyMap<string, number>;
  #disposed = false;

  constructor(native: NativeSession) {
    this.#native = native;
    this.inputMetadata = native.inputMetadata.map(valueMetadata);
    this.outputMetadata = native.outputMetadata.map(valueMetadata);
    this.inputNames = this.inputMetadata.map((m) => m.name);
    this.outputNames = this.outputMetadata.map((m) => m.name);
    this.inputIndex = new Map(this.inputNames.map((n, i) => [n, i]));
    this.outputIndex = new Map(this.outputNames.map((n, i) => [n, i]));
  }

  async run(
    feeds: SessionHandler.FeedsType,
    fetches: SessionHandler.FetchesType,
    options: InferenceSession.RunOptions = {},
  ): Promise<SessionHandler.ReturnType> {
    this.#checkLive();
    const inputs = nativeFeeds(feeds, this.inputIndex, this.inputMetadata, this.inputNames);
    // A tensor in fetches is pre-allocated: ORT writes that output into it, and it is returned as is.
    const outputNames = Object.keys(fetches).length > 0 ? Object.keys(fetches) : [...this.outputNames];
    const outputIndices = outputNames.map((name) => outputIndexOf(name, this.outputIndex, this.outputNames));
    const preallocated = outputNames.map((name, i) =>
      nativeFetch(name, fetches[name] ?? null, this.outputMetadata[outputIndices[i]]),
    );
    const raw = await this.runPlanned(runPlan(inputs.indices, inputs.tensors, outputIndices, preallocated), options);
    const results: SessionHandler.ReturnType = {};
    outputNames.forEach((name, i) => (results[name] = raw[i] === null ? fetches[name]! : outputValue(name, raw[i]!)));
    return results;
  }

  /** Runs a plan (run_plan.ts): the outputs in its order, null for pre-allocated ones. */
  async runPlanned(run: RunPlan, options: InferenceSession.RunOptions = {}): Promise<(NativeOutput | null)[]> {
    this.#checkLive();
    try {
      return await this.#native.run(run.plan, run.data, nativeRunOptions(options));
    } catch (error) {
      throw fromNativeError(error);
    }
  }

  outputTensor(name: string, raw: NativeOutput): Tensor {
    const { type, data, dims } = outputValue(name, raw) as unknown as {
      type: Tensor.Type;
      data: never;
      dims: number[];
    };
    return new (ortNode().Tensor)(type, data, dims);
  }

  /** Runs with `feeds` and pre-allocated `fetches` fixed: see bound_run.ts. */
  bind(feeds: Record<string, OnnxValue>, fetches: Record<string, OnnxValue>): BoundRun {
    this.#checkLive();
    return new BoundRun(this, feeds, fetches);
  }

  async dispose(): Promise<void> {
    // Runs still in flight finish first: the native session is released after the last one.
    this.#disposed = true;
    this.#native.dispose();
  }

  startProfiling(): void {
    // Profiling starts with the session when SessionOptions.enableProfiling is set.
  }

  endProfiling(): void {
    this.#checkLive();
    this.#native.endProfiling();
  }

  /** The EP's counters for this session; after dispose, their final values. */
  counters(): OnebitCounters {
    try {
      return toCounters(this.#native.counters());
    } catch (error) {
      throw fromNativeError(error);
    }
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  #checkLive(): void {
    if (this.#disposed)
      throw new OnebitSessionDisposedError(
        'this session has been released (session.release() was called): create a new InferenceSession',
      );
  }
}
