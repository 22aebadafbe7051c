// SPDX-License-Identifier: Apache-2.0
// Where two arms' top-1 tokens disagree in matching a reference's: the positions only the first
// arm gets right, those only the second does, and the exact two-sided sign test of that split.
// Two implementations of one quantized model differ at a few dozen of ~1,600 positions; a top-1
// gap of a handful is then what float rounding order alone gives, and the p-value says so.
import { argmax } from '../llm/kv_decoder.js';

export interface Top1Split {
  /** Positions where the first arm's top-1 is the reference's and the second's is not. */
  firstOnly: number;
  /** Positions where the second arm's top-1 is the reference's and the first's is not. */
  secondOnly: number;
  /** Two-sided exact sign test of firstOnly against secondOnly (1 when they are equal or both 0). */
  pValue: number;
}

/**
 * P(a split at least this uneven) when each discordant position is a fair coin: twice the smaller
 * tail of Binomial(a + b, 1/2), at most 1 (exactly 1 when a and b differ by at most one). Each term
 * is formed in logs, so no count overflows; a p below the smallest double (~1e-308) is 0.
 */
export function signTestPValue(a: number, b: number): number {
  if (Math.abs(a - b) <= 1) return 1; // the smaller tail then holds half the mass or more
  const n = a + b;
  const k = Math.min(a, b);
  let logTerm = -n * Math.LN2; // log C(n, 0) / 2^n
  let tail = 0;
  for (let i = 0; i <= k; ++i) {
    tail += Math.exp(logTerm);
    logTerm += Math.log((n - i) / (i + 1)); // C(n, i + 1) = C(n, i) (n - i) / (i + 1)
  }
  return Math.min(1, 2 * tail);
}

export class Top1SplitTally {
  #firstOnly = 0;
  #secondOnly = 0;

  /** Adds positions: rows of `vocab` logits of the reference and of the two arms. */
  add(
    reference: readonly Float32Array[],
    first: readonly Float32Array[],
    second: readonly Float32Array[],
    vocab: number,
  ): void {
    for (let i = 0; i < reference.length; ++i) {
      const truth = argmax(reference[i], 0, vocab);
      const firstRight = argmax(first[i], 0, vocab) === truth;
      const secondRight = argmax(second[i], 0, vocab) === truth;
      if (firstRight && !secondRight) ++this.#firstOnly;
      if (secondRight && !firstRight) ++this.#secondOnly;
    }
  }

  result(): Top1Split {
    return {
      firstOnly: this.#firstOnly,
      secondOnly: this.#secondOnly,
      pValue: signTestPValue(this.#firstOnly, this.#secondOnly),
    };
  }
}
