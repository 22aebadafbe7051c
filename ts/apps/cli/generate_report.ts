// SPDX-License-Identifier: Apache-2.0
// The SmolLM2 generation report as a table for people (the JSON form is the GenerationReport itself).
import { armLabel, type Comparison, type GenerationReport } from './generate.js';
import { describeOrtInt8 } from './ort_int8_check.js';

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function comparison(c: Comparison, r: GenerationReport): string {
  const label = (arm: Comparison['reference']) => armLabel(arm, r.model.format);
  return (
    `${`${label(c.candidate)} vs ${label(c.reference)}`.padEnd(66)} top-1 ${pct(c.top1).padStart(6)}  ` +
    `KL mean ${c.meanKl.toExponential(2)} max ${c.maxKl.toExponential(2)}  max|logit diff| ${c.maxAbsLogitDiff.toFixed(3)}`
  );
}

/** What the onebit and ORT arms each run on the quantized model. */
function sameModelNote(r: GenerationReport): string {
  if (r.model.format === 'int4') return 'the same W4A8 arithmetic (int8 activations per block, integer block dots)';
  return r.model.activations === 'uint8'
    ? 'two integer kernels'
    : "the EP's integer kernel and, for most groups, ORT's DequantizeLinear + float MatMul";
}

export function formatGenerationReport(r: GenerationReport): string {
  const fp32 = r.arms.find((a) => a.arm === 'ortFp32')!;
  const lines = [
    '',
    `onebit-run: SmolLM2-135M-Instruct, ${r.model.layers} layers, ${r.model.projections} ${r.model.format === 'int4' ? 'int4 MatMulNBits projections' : `A8W8 projections, ${r.model.activations} activations`} (weights ${r.model.weights})`,
    `ORT ${r.ortVersion}, ${r.threads} intra-op thread(s), host kernel ${r.hostKernel}, device ${r.device}; ` +
      `prompt ${r.promptTokens} tokens (chat template${r.promptSource === 'prompt' ? '' : ', user turn from the evaluation text'}), ` +
      `${r.generatedTokens} generated (${r.stop === 'eos' ? 'end of turn' : '--max-tokens'}), greedy` +
      (r.warmup > 0 ? `; timed after ${r.warmup} untimed generation(s) per arm` : ''),
    '',
    `${'arm'.padEnd(38)}${'prefill ms'.padStart(11)}${'prompt tok/s'.padStart(14)}${'decode tok/s'.padStart(14)}${'decode vs fp32'.padStart(16)}`,
  ];
  for (const a of r.arms) {
    lines.push(
      `${armLabel(a.arm, r.model.format).padEnd(38)}${a.prefillMs.toFixed(1).padStart(11)}${a.promptTokensPerS.toFixed(1).padStart(14)}` +
        `${a.decodeTokensPerS.toFixed(1).padStart(14)}${`${(a.decodeTokensPerS / fp32.decodeTokensPerS).toFixed(2)}x`.padStart(16)}`,
    );
  }
  lines.push(
    '',
    `agreement of the logits at the ${r.agreement[0]?.positions ?? 0} generated positions (every arm fed the onebit EP's tokens):`,
    ...r.agreement.map((c) => `  ${comparison(c, r)}`),
    `  (onebit vs ORT: ${sameModelNote(r)} on the same quantized model; vs fp32: what quantization costs)`,
    `  ${describeOrtInt8(r.ortInt8)}`,
  );
  if (r.quality) {
    const q = r.quality;
    lines.push(
      '',
      `quality, teacher-forced over the ${q.passages.length} built-in evaluation passages (${q.tokens} tokens), pooled:`,
      ...q.comparisons.map((c) => `  ${comparison(c, r)}`),
      `  KL mean per passage, onebit / ORT QDQ (against fp32): ${q.passages.map((p) => `${p.meanKl.onebit.toFixed(4)} / ${p.meanKl.ortQdq.toFixed(4)}`).join(', ')}`,
      `  fp32's top-1 picked by onebit alone at ${q.top1Split.onebitOnly} positions, by ORT QDQ alone at ${q.top1Split.ortQdqOnly} ` +
        `(two-sided sign test p = ${q.top1Split.pValue.toFixed(3)}; above 0.05 the gap is not significant at the 5 % level, which does not make the arms equal)`,
    );
  }
  const counters = Object.entries(r.counters)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  lines.push(
    '',
    `peak RSS: ${r.peakRssMiB.total.toFixed(1)} MiB (after the onebit arm: ${r.peakRssMiB.onebitPhase.toFixed(1)} MiB)`,
    `counters: ${counters} (expected groupRuns=${r.expectedGroupRuns}: ${r.model.projections} projections x ${r.expectedGroupRuns / Math.max(r.model.projections, 1)} forward passes)`,
  );
  return lines.join('\n');
}
