// SPDX-License-Identifier: Apache-2.0
// What onebit-run found, as one JSON-ready object and as a table for people.
import type { OnebitCounters } from '../../counters.js';
import { nativeConstants } from '../../native.js';
import { formatModelledArms, type ModelledArms } from './modelled_arm.js';
import { describeOrtInt8, type OrtInt8Check } from './ort_int8_check.js';
import type { Agreement, Timing } from './statistics.js';

export interface LengthResult {
  len: number;
  onebit: Timing;
  cpu: Timing;
  /** CPU median / onebit median: above 1 means the EP is faster. */
  speedup: number;
  agreement: Agreement;
}

export interface RunReport {
  model: { path: string; defaultModel: boolean; layers: number | null; groups: number | null };
  ortVersion: string;
  /** Whether ORT's uint8 x int8 kernel is exact on this CPU (it saturates on AVX2 without VNNI). */
  ortInt8: OrtInt8Check;
  threads: number;
  device: string;
  warmup: number;
  repeat: number;
  lengths: LengthResult[];
  peakRssMiB: { onebitPhase: number; total: number };
  counters: OnebitCounters;
  /** groupRuns the counters must show if every claimed group ran on every call. */
  expectedGroupRuns: number;
  /** --cost-model: the host arm and the device arm with MODELLED device times, per length; else null. */
  modelled: ModelledArms | null;
}

const ms = (t: number) => (t >= 100 ? t.toFixed(0) : t >= 10 ? t.toFixed(1) : t.toFixed(2));
const timing = (t: Timing) => `${ms(t.medianMs)} ms (${ms(t.minMs)}..${ms(t.maxMs)})`.padEnd(26);

// The largest finite difference, and how many elements differ with NaN or an infinity.
const maxDiff = (a: Agreement) =>
  a.nonFiniteMismatches > 0 ? `${a.maxAbsDiff} (+${a.nonFiniteMismatches} NaN/inf)` : String(a.maxAbsDiff);

export function formatReport(r: RunReport): string {
  const model = r.model.defaultModel
    ? `projection stack, ${r.model.layers} layers, ${r.model.groups} A8W8 QDQ groups`
    : r.model.path;
  const lines = [
    `onebit-run: ${model}`,
    `ORT ${r.ortVersion}, ${r.threads} intra-op thread(s), host kernel ${nativeConstants().hostKernel}, device ${r.device}, ${r.warmup} warm-up + ${r.repeat} timed runs per length and EP`,
    r.model.defaultModel ? `model file: ${r.model.path}` : '',
    '',
    `${'len'.padStart(5)}  ${'onebit median (min..max)'.padEnd(26)}${'ORT CPU median (min..max)'.padEnd(26)} speedup  max|diff|  int8 differing  KL`,
  ].filter((line, i) => line !== '' || i === 3);
  for (const l of r.lengths) {
    const a = l.agreement;
    const differing = a.int8DifferingFraction === null ? '-' : `${(a.int8DifferingFraction * 100).toFixed(3)}%`;
    const kl = a.klDivergence === null ? '-' : a.klDivergence.toExponential(2);
    lines.push(
      `${String(l.len).padStart(5)}  ${timing(l.onebit)}${timing(l.cpu)}${(l.speedup.toFixed(2) + 'x').padStart(7)}  ${maxDiff(a).padStart(9)}  ${differing.padStart(14)}  ${kl}`,
    );
  }
  const counters = Object.entries(r.counters)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  lines.push(
    describeOrtInt8(r.ortInt8),
    '',
    `peak RSS: ${r.peakRssMiB.total.toFixed(1)} MiB (after the onebit runs, before the CPU EP session: ${r.peakRssMiB.onebitPhase.toFixed(1)} MiB)`,
    `counters: ${counters} (expected groupRuns=${r.expectedGroupRuns}: ${r.counters.groups} groups x ${r.expectedGroupRuns / Math.max(r.counters.groups, 1)} runs)`,
  );
  if (r.modelled) lines.push(...formatModelledArms(r.modelled));
  return lines.join('\n');
}
