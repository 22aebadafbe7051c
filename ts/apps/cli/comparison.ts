// SPDX-License-Identifier: Apache-2.0
// Agreement of two arms' logits, position by position: top-1, KL and the largest difference,
// summed over any number of batches of positions (the generated steps, or passage after passage).
import { argmax } from '../llm/kv_decoder.js';
import { klRow } from './statistics.js';

export const ARM_NAMES = ['onebit', 'ortQdq', 'ortFp32'] as const;
export type ArmName = (typeof ARM_NAMES)[number];

/** Logits rows of one arm compared with another's, position by position. */
export interface Comparison {
  reference: ArmName;
  candidate: ArmName;
  positions: number;
  /** Share of positions where both pick the same token. */
  top1: number;
  /** KL(softmax(reference) || softmax(candidate)), mean and max over positions. */
  meanKl: number;
  maxKl: number;
  maxAbsLogitDiff: number;
}

export class ComparisonTally {
  #positions = 0;
  #same = 0;
  #klSum = 0;
  #maxKl = 0;
  #maxDiff = 0;

  constructor(
    readonly reference: ArmName,
    readonly candidate: ArmName,
  ) {}

  /** Adds positions (rows of `vocab` logits, `a` the reference's); returns their mean KL. */
  add(a: readonly Float32Array[], b: readonly Float32Array[], vocab: number): number {
    let klSum = 0;
    for (let i = 0; i < a.length; ++i) {
      if (argmax(a[i], 0, vocab) === argmax(b[i], 0, vocab)) ++this.#same;
      const kl = klRow(a[i], b[i], 0, vocab);
      klSum += kl;
      this.#maxKl = Math.max(this.#maxKl, kl);
      for (let j = 0; j < vocab; ++j) this.#maxDiff = Math.max(this.#maxDiff, Math.abs(a[i][j] - b[i][j]));
    }
    this.#positions += a.length;
    this.#klSum += klSum;
    return a.length ? klSum / a.length : 0;
  }

  result(): Comparison {
    const n = this.#positions;
    return {
      reference: this.reference,
      candidate: this.candidate,
      positions: n,
      top1: n ? this.#same / n : 0,
      meanKl: n ? this.#klSum / n : 0,
      maxKl: this.#maxKl,
      maxAbsLogitDiff: this.#maxDiff,
    };
  }
}

export function compare(
  reference: ArmName,
  candidate: ArmName,
  a: readonly Float32Array[],
  b: readonly Float32Array[],
  vocab: number,
): Comparison {
  const tally = new ComparisonTally(reference, candidate);
  tally.add(a, b, vocab);
  return tally.result();
}
