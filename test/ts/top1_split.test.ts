// SPDX-License-Identifier: Apache-2.0
// onebit-run --quality's top-1 split: which positions only one of two arms gets right against the
// reference, and the sign test that says whether such a split is more than chance.
import { createRequire } from 'node:module';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot } from './helpers/package.js';

const require = createRequire(import.meta.url);
const { signTestPValue, Top1SplitTally } = require(
  path.join(repoRoot, 'dist', 'apps', 'cli', 'top1_split.js'),
) as typeof import('../../ts/apps/cli/top1_split.js');
const { measureQuality } = require(
  path.join(repoRoot, 'dist', 'apps', 'cli', 'quality.js'),
) as typeof import('../../ts/apps/cli/quality.js');
type QualityArgs = Parameters<typeof measureQuality>;

// A row of `vocab` logits whose largest value is at `top`.
function row(top: number, vocab = 5): Float32Array {
  const r = new Float32Array(vocab).fill(-1);
  r[top] = 2;
  return r;
}

describe('signTestPValue', () => {
  it('is twice the smaller binomial tail, exactly', () => {
    expect(signTestPValue(0, 6)).toBeCloseTo(2 / 64, 15); // both tails of Binomial(6, 1/2) at 0 and 6
    expect(signTestPValue(6, 0)).toBeCloseTo(2 / 64, 15);
    // Binomial(12, 1/2): P(X <= 2) = (1 + 12 + 66) / 4096
    expect(signTestPValue(2, 10)).toBeCloseTo((2 * 79) / 4096, 15);
    expect(signTestPValue(10, 2)).toBeCloseTo((2 * 79) / 4096, 15);
    // Binomial(20, 1/2): P(X <= 5) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20
    expect(signTestPValue(5, 15)).toBeCloseTo((2 * 21700) / 2 ** 20, 15);
  });

  it('is 1 for an even split or no discordant position, and stays finite for large counts', () => {
    expect(signTestPValue(0, 0)).toBe(1);
    expect(signTestPValue(7, 7)).toBe(1);
    expect(signTestPValue(40, 41)).toBe(1);
    expect(signTestPValue(2999, 3000)).toBe(1); // the summed tail rounds to 0.99999…; the split is even
    expect(signTestPValue(1, 0)).toBe(1);
    expect(signTestPValue(0, 3000)).toBe(0); // 2^-2999 is below the smallest double
    // 2^-4400 underflows; the log-space sum does not. Exact: 2 Σ_{k<=2000} C(4400, k) / 2^4400
    // (integer arithmetic) = 1.753122444980596e-9.
    expect(Math.abs(signTestPValue(2000, 2400) / 1.753122444980596e-9 - 1)).toBeLessThan(1e-9);
  });
});

describe('Top1SplitTally', () => {
  it('counts the positions exactly one arm gets right, over batches', () => {
    const tally = new Top1SplitTally();
    // reference tops 0 1 2 3; first gets 0 1 _ _, second gets 0 _ 2 _: one each alone, one both, one neither
    tally.add([row(0), row(1), row(2), row(3)], [row(0), row(1), row(4), row(4)], [row(0), row(3), row(2), row(1)], 5);
    // a second batch: first alone right twice
    tally.add([row(4), row(4)], [row(4), row(4)], [row(0), row(1)], 5);
    expect(tally.result()).toEqual({ firstOnly: 3, secondOnly: 1, pValue: signTestPValue(3, 1) });
  });

  it('reads the first `vocab` values of each row only', () => {
    const tally = new Top1SplitTally();
    const longer = new Float32Array([0, 1, 0, 9]); // 9 lies beyond vocab = 3
    tally.add([row(1, 3)], [longer], [row(0, 3)], 3);
    expect(tally.result()).toMatchObject({ firstOnly: 1, secondOnly: 0 });
  });
});

describe('measureQuality', () => {
  it('reports the split with onebit first and ORT second, pooled over the passages', async () => {
    // Each arm's top-1 token at each predicting position of two passages (5 and 3 tokens), vocab 4.
    const tops: Record<string, number[][]> = {
      ortFp32: [
        [0, 1, 2, 3],
        [3, 3],
      ],
      onebit: [
        [0, 1, 0, 0],
        [3, 3],
      ], // alone right at passage 1 position 1, passage 2 positions 0 and 1
      ortQdq: [
        [0, 3, 2, 0],
        [0, 1],
      ], // alone right at passage 1 position 2
    };
    const vocab = 4;
    const logits = (arm: string, passage: number) => {
      const rows = [...tops[arm][passage], 0]; // the last token predicts nothing
      return Float32Array.from(rows.flatMap((top) => Array.from({ length: vocab }, (_, j) => (j === top ? 1 : 0))));
    };
    const session = (arm: string) => ({
      run: async (feeds: Record<string, { dims: number[] }>) => ({
        logits: { data: logits(arm, feeds.input_ids.dims[1] === 5 ? 0 : 1) },
      }),
      release: async () => {},
    });
    class FakeTensor {
      constructor(
        readonly type: string,
        readonly data: unknown,
        readonly dims: readonly number[],
      ) {}
    }
    const files = { config: { vocab, context: 64 }, pastNames: [], presentNames: [], evaluationText: 'e', dir: 'd' };
    const report = await measureQuality(
      ['five', 'three'],
      { encode: (text: string) => (text === 'five' ? [1, 2, 3, 4, 5] : [1, 2, 3]) } as unknown as QualityArgs[1],
      files as unknown as QualityArgs[2],
      FakeTensor as unknown as QualityArgs[3],
      async (arm) => session(arm) as unknown as Awaited<ReturnType<QualityArgs[4]>>,
      () => {},
    );
    expect(report.top1Split).toEqual({ onebitOnly: 3, ortQdqOnly: 1, pValue: signTestPValue(3, 1) });
    expect(report.comparisons[0].top1).toBeCloseTo(4 / 6, 12); // onebit against fp32
    expect(report.comparisons[1].top1).toBeCloseTo(2 / 6, 12); // ORT against fp32
  });
});
