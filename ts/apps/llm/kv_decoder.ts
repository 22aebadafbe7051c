// SPDX-License-Identifier: Apache-2.0
// Runs a decoder graph with a KV cache (models/build_smollm2.py's layout). The cache lives in one
// buffer per past_* input, [1, kv_heads, capacity, head_dim], passed as that input and as the
// matching present_* output (pre-allocated: the same memory), so GroupQueryAttention appends each
// call's keys and values in place instead of copying the whole cache into new tensors; the
// attention_mask's length tells it how many rows are valid. The buffers double when full. They are
// onebit.allocateTensor's: memory a run in flight may write (JS memory the backend only fills when a
// run resolves, which would leave past and present two buffers). On a onebit session the cache is
// bound (onebit.bind): each step passes its 2 other inputs only.
import type { InferenceSession, Tensor } from 'onnxruntime-node';

import type { BoundRun } from '../../bound_run.js';
import { OnebitError, OnebitInputError } from '../../errors.js';
import type { Smollm2Files } from '../model/smollm2.js';
import { onebit } from '../../onebit.js';

type TensorConstructor = new (type: string, data: unknown, dims: readonly number[]) => Tensor;

/** Rows the cache buffers start with (the prompt and a reply fit; 11.8 MB for SmolLM2). */
const INITIAL_CAPACITY = 256;

export class KvDecoder {
  readonly #session: InferenceSession;
  readonly #files: Smollm2Files;
  readonly #Tensor: TensorConstructor;
  #cache: Tensor[] = [];
  #bound: BoundRun | null = null; // the cache bound to a onebit session's runs (null for other sessions)
  #capacity = 0;
  #length = 0;

  constructor(session: InferenceSession, files: Smollm2Files, Tensor: TensorConstructor) {
    this.#session = session;
    this.#files = files;
    this.#Tensor = Tensor;
    this.reset();
  }

  /** Tokens in the cache. */
  get length(): number {
    return this.#length;
  }

  reset(): void {
    this.#length = 0;
    this.#grow(Math.min(INITIAL_CAPACITY, this.#files.config.context));
  }

  /** Logits [ids.length, vocab] of the new tokens; the cache grows by ids.length. */
  async forward(ids: readonly number[]): Promise<Float32Array> {
    const { context } = this.#files.config;
    if (ids.length === 0) throw new OnebitInputError('no tokens to run');
    const total = this.#length + ids.length;
    if (total > context)
      throw new OnebitInputError(`${total} tokens do not fit the model's context of ${context} tokens`);
    if (total > this.#capacity) this.#grow(Math.min(context, Math.max(total, 2 * this.#capacity)));
    const feeds: Record<string, Tensor> = {
      input_ids: new this.#Tensor(
        'int64',
        BigInt64Array.from(ids, (id) => BigInt(id)),
        [1, ids.length],
      ),
      attention_mask: new this.#Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
    };
    let out: Record<string, { data: unknown }>;
    if (this.#bound) {
      out = await this.#bound.run(feeds);
    } else {
      const fetches: Record<string, Tensor | null> = { logits: null };
      this.#files.pastNames.forEach((name, i) => (feeds[name] = this.#cache[i]));
      this.#files.presentNames.forEach((name, i) => (fetches[name] = this.#cache[i]));
      out = (await this.#session.run(feeds, fetches)) as Record<string, Tensor>;
    }
    this.#length = total;
    return out.logits.data as Float32Array;
  }

  // New buffers of `capacity` rows holding the cache's valid rows.
  #grow(capacity: number): void {
    const { kv_heads: heads, head_dim: dim } = this.#files.config;
    this.#cache = this.#files.pastNames.map((_, i) => {
      const grown = onebit.allocateTensor('float32', [1, heads, capacity, dim]);
      const data = grown.data as Float32Array;
      const old = this.#cache[i]?.data as Float32Array | undefined;
      for (let h = 0; old && h < heads; ++h)
        data.set(old.subarray(h * this.#capacity * dim, (h * this.#capacity + this.#length) * dim), h * capacity * dim);
      return grown;
    });
    this.#capacity = capacity;
    this.#bound = this.#bind();
  }

  // The cache bound as past inputs and present outputs of the session's runs, if it runs on onebit.
  #bind(): BoundRun | null {
    const feeds: Record<string, Tensor> = {};
    const fetches: Record<string, Tensor> = {};
    this.#files.pastNames.forEach((name, i) => (feeds[name] = this.#cache[i]));
    this.#files.presentNames.forEach((name, i) => (fetches[name] = this.#cache[i]));
    try {
      return onebit.bind(this.#session, { feeds, fetches });
    } catch (error) {
      if (error instanceof OnebitError && error.code === 'ONEBIT_NOT_ONEBIT_SESSION') return null;
      throw error;
    }
  }
}

/** Index of the largest of the `vocab` values starting at row * vocab. */
export function argmax(logits: Float32Array, row: number, vocab: number): number {
  // Nothing but the loop's own operations after it: V8 compiles the loop while it runs (on-stack
  // replacement), and an operation after it that had never run made that code bail out at every
  // call (65 deoptimizations in a 65-step decode, `node --trace-deopt`).
  const start = row * vocab;
  let best = 0;
  let top = logits[start];
  for (let i = 1; i < vocab; ++i) {
    const value = logits[start + i];
    if (value > top) {
      top = value;
      best = i;
    }
  }
  return best;
}
