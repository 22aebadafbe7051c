// SPDX-License-Identifier: Apache-2.0
// Runs a decoder graph with a KV cache (models/build_smollm2.py's layout): each call feeds the new
// tokens and the cache so far, and keeps the returned present_* tensors as the next call's past.
import type { InferenceSession, Tensor } from 'onnxruntime-node';

import { OnebitInputError } from '../errors.js';
import type { Smollm2Files } from '../model/smollm2.js';

type TensorConstructor = new (type: string, data: unknown, dims: readonly number[]) => Tensor;

export class KvDecoder {
  readonly #session: InferenceSession;
  readonly #files: Smollm2Files;
  readonly #Tensor: TensorConstructor;
  #past: Record<string, Tensor> = {};
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
    const { kv_heads: heads, head_dim: dim } = this.#files.config;
    const empty = new Float32Array(0);
    this.#past = Object.fromEntries(this.#files.pastNames.map((n) => [n, new this.#Tensor('float32', empty, [1, heads, 0, dim])]));
    this.#length = 0;
  }

  /** Logits [ids.length, vocab] of the new tokens; the cache grows by ids.length. */
  async forward(ids: readonly number[]): Promise<Float32Array> {
    const { context } = this.#files.config;
    if (ids.length === 0) throw new OnebitInputError('no tokens to run');
    if (this.#length + ids.length > context)
      throw new OnebitInputError(`${this.#length + ids.length} tokens do not fit the model's context of ${context} tokens`);
    const inputIds = new this.#Tensor('int64', BigInt64Array.from(ids, (id) => BigInt(id)), [1, ids.length]);
    const out = (await this.#session.run({ input_ids: inputIds, ...this.#past })) as Record<string, Tensor>;
    this.#files.presentNames.forEach((name, i) => (this.#past[this.#files.pastNames[i]] = out[name]));
    this.#length += ids.length;
    return out.logits.data as Float32Array;
  }
}

/** Index of the largest of the `vocab` values starting at row * vocab. */
export function argmax(logits: Float32Array, row: number, vocab: number): number {
  let best = row * vocab;
  for (let i = best + 1; i < (row + 1) * vocab; ++i) if (logits[i] > logits[best]) best = i;
  return best - row * vocab;
}
