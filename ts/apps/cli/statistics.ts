// SPDX-License-Identifier: Apache-2.0
// Timing summaries and agreement between the two EPs' outputs.
import type { Tensor } from 'onnxruntime-node';

export interface Timing {
  medianMs: number;
  minMs: number;
  maxMs: number;
  runs: number;
}

export function summarize(samples: readonly number[]): Timing {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { medianMs: median, minMs: sorted[0], maxMs: sorted[sorted.length - 1], runs: sorted.length };
}

export interface Agreement {
  /**
   * Largest |onebit - cpu| over the output elements where both are finite numbers (in LSB for
   * integer outputs); always a finite number, so JSON carries it as one.
   */
  maxAbsDiff: number;
  /**
   * Elements where the two differ and one is NaN or infinite: no finite difference exists, so they
   * are counted here instead of making maxAbsDiff infinite. Equal values (the same infinity, NaN
   * on both sides) agree.
   */
  nonFiniteMismatches: number;
  /** Share of int8/uint8 output elements that differ at all; null without such outputs. */
  int8DifferingFraction: number | null;
  /**
   * Mean KL(softmax(cpu) || softmax(onebit)) over the last axis of float outputs (per output, the
   * mean over its rows whose values are all finite on both sides); null without such rows.
   */
  klDivergence: number | null;
}

function softmax(values: ArrayLike<number>, start: number, length: number): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < length; ++i) max = Math.max(max, values[start + i]);
  const out = new Float64Array(length);
  let sum = 0;
  for (let i = 0; i < length; ++i) sum += out[i] = Math.exp(values[start + i] - max);
  for (let i = 0; i < length; ++i) out[i] /= sum;
  return out;
}

/** KL(softmax(reference) || softmax(candidate)) over one row of `length` logits at `start`. */
export function klRow(
  reference: ArrayLike<number>,
  candidate: ArrayLike<number>,
  start: number,
  length: number,
): number {
  const p = softmax(reference, start, length);
  const q = softmax(candidate, start, length);
  let kl = 0;
  for (let i = 0; i < length; ++i) if (p[i] > 0) kl += p[i] * Math.log(p[i] / Math.max(q[i], 1e-300));
  return kl;
}

// Mean KL over the rows of the last axis whose values are all finite in both; null without one.
function klOverLastAxis(reference: ArrayLike<number>, candidate: ArrayLike<number>, lastDim: number): number | null {
  const rows = lastDim > 0 ? reference.length / lastDim : 0;
  let total = 0;
  let counted = 0;
  for (let r = 0; r < rows; ++r) {
    let finite = true;
    for (let i = r * lastDim; i < (r + 1) * lastDim && finite; ++i)
      finite = Number.isFinite(reference[i]) && Number.isFinite(candidate[i]);
    if (!finite) continue;
    total += klRow(reference, candidate, r * lastDim, lastDim);
    ++counted;
  }
  return counted > 0 ? total / counted : null;
}

export function agreement(onebit: Record<string, Tensor>, cpu: Record<string, Tensor>): Agreement {
  let maxAbsDiff = 0;
  let nonFiniteMismatches = 0;
  let int8Elements = 0;
  let int8Differing = 0;
  const kls: number[] = [];
  for (const [name, reference] of Object.entries(cpu)) {
    const candidate = onebit[name];
    if (!candidate || reference.type === 'string') continue;
    const a = Array.from(candidate.data as ArrayLike<number | bigint>, Number);
    const b = Array.from(reference.data as ArrayLike<number | bigint>, Number);
    for (let i = 0; i < b.length; ++i) {
      if (a[i] === b[i] || (Number.isNaN(a[i]) && Number.isNaN(b[i]))) continue;
      if (Number.isFinite(a[i]) && Number.isFinite(b[i])) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(a[i] - b[i]));
      else ++nonFiniteMismatches;
      if (reference.type === 'int8' || reference.type === 'uint8') ++int8Differing;
    }
    if (reference.type === 'int8' || reference.type === 'uint8') int8Elements += b.length;
    const kl =
      reference.type === 'float32' || reference.type === 'float64'
        ? klOverLastAxis(b, a, reference.dims.at(-1) ?? b.length)
        : null;
    if (kl !== null) kls.push(kl);
  }
  return {
    maxAbsDiff,
    nonFiniteMismatches,
    int8DifferingFraction: int8Elements > 0 ? int8Differing / int8Elements : null,
    klDivergence: kls.length > 0 ? kls.reduce((x, y) => x + y, 0) / kls.length : null,
  };
}

/** Peak resident set size of this process so far, in MiB. */
export function peakRssMiB(): number {
  return process.resourceUsage().maxRSS / 1024;
}
