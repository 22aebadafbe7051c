// SPDX-License-Identifier: Apache-2.0
// onebit-run --quality: each built-in evaluation passage teacher-forced through the three arms,
// KL(fp32 || QDQ) and top-1 against fp32 for the EP and for ORT's CPU EP, pooled over the passages
// and per passage. The per-passage numbers show how far the gap between two implementations of
// the same quantized model moves from one text to the next.
import type { InferenceSession } from 'onnxruntime-node';

import { OnebitRuntimeError } from '../../errors.js';
import type { ChatTokenizer } from '../llm/chat_tokenizer.js';
import { KvDecoder } from '../llm/kv_decoder.js';
import type { Smollm2Files } from '../model/smollm2.js';
import { ARM_NAMES, ComparisonTally, type ArmName, type Comparison } from './comparison.js';
import { Top1SplitTally } from './top1_split.js';

/** The cached evaluation.txt holds its passages separated by a form feed on its own line. */
export function evaluationPassages(text: string): string[] {
  return text
    .replace(/\r\n/g, '\n')
    .split('\n\f\n')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

export interface PassageQuality {
  tokens: number;
  /** Mean KL(fp32 || arm) over the passage's positions. */
  meanKl: { onebit: number; ortQdq: number };
}

export interface QualityReport {
  /** Tokens over all passages; each passage's last token predicts nothing, so positions = tokens - passages. */
  tokens: number;
  passages: PassageQuality[];
  /** onebit vs fp32, ORT QDQ vs fp32, onebit vs ORT QDQ: pooled over every passage's positions. */
  comparisons: Comparison[];
  /**
   * Pooled positions where exactly one of onebit and ORT QDQ picks fp32's top-1 token, and the
   * two-sided sign test of that split: whether a top-1 gap between them is more than rounding.
   */
  top1Split: { onebitOnly: number; ortQdqOnly: number; pValue: number };
}

/** Runs the passages, one arm at a time: a session holds one passage's activations at most. */
export async function measureQuality(
  passages: readonly string[],
  tokenizer: ChatTokenizer,
  files: Smollm2Files,
  Tensor: ConstructorParameters<typeof KvDecoder>[2],
  createSession: (arm: ArmName) => Promise<InferenceSession>,
  onPassage: (index: number, tokens: number) => void,
): Promise<QualityReport> {
  if (passages.length === 0)
    throw new OnebitRuntimeError(
      `${files.evaluationText} holds no evaluation passage: delete ${files.dir} and run again to rebuild it`,
    );
  const vocab = files.config.vocab;
  const tallies = [
    new ComparisonTally('ortFp32', 'onebit'),
    new ComparisonTally('ortFp32', 'ortQdq'),
    new ComparisonTally('ortQdq', 'onebit'),
  ];
  const split = new Top1SplitTally();
  const report: QualityReport = {
    tokens: 0,
    passages: [],
    comparisons: [],
    top1Split: { onebitOnly: 0, ortQdqOnly: 0, pValue: 1 },
  };
  for (const [index, passage] of passages.entries()) {
    const ids = tokenizer.encode(passage);
    if (ids.length < 2)
      throw new OnebitRuntimeError(
        `${files.evaluationText}: evaluation passage ${index + 1} is ${ids.length} token long, so it predicts nothing; ` +
          `delete ${files.dir} and run again to rebuild it`,
      );
    onPassage(index, ids.length);
    const rows: Partial<Record<ArmName, Float32Array[]>> = {};
    for (const arm of ARM_NAMES) {
      // A session per passage and arm (about a second to create): three kept for all passages
      // would hold their arenas at once, ~2 GiB with the full model.
      const session = await createSession(arm);
      try {
        const logits = await new KvDecoder(session, files, Tensor).forward(ids);
        rows[arm] = Array.from({ length: ids.length - 1 }, (_, r) => logits.subarray(r * vocab, (r + 1) * vocab));
      } finally {
        await session.release();
      }
    }
    const [onebit, ortQdq] = tallies.map((t) => t.add(rows[t.reference]!, rows[t.candidate]!, vocab));
    split.add(rows.ortFp32!, rows.onebit!, rows.ortQdq!, vocab);
    report.tokens += ids.length;
    report.passages.push({ tokens: ids.length, meanKl: { onebit, ortQdq } });
  }
  report.comparisons = tallies.map((t) => t.result());
  const { firstOnly, secondOnly, pValue } = split.result();
  report.top1Split = { onebitOnly: firstOnly, ortQdqOnly: secondOnly, pValue };
  return report;
}
