// SPDX-License-Identifier: Apache-2.0
// The 2-layer SmolLM2 report that scripts/test_avx2_emulated.sh makes under qemu -cpu Haswell
// (an AVX2 CPU without VNNI, whatever this machine is), held to the same bounds as the native
// suite's: ORT's kernel saturates there, the EP runs its avx2 kernel and is closer to fp32.
// Skipped, by name, unless that script gives the report's path.
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { expectAgreementWithOrt, type Report } from './helpers/smollm2_report.js';

const reportPath = process.env.ONEBIT_EMULATED_REPORT;

describe.skipIf(!reportPath)('onebit-run on an emulated AVX2 CPU (ONEBIT_EMULATED_REPORT)', () => {
  const report = (): Report => JSON.parse(readFileSync(reportPath!, 'utf8'));

  it('saw the CPU it is for: ORT saturating, the EP on its avx2 kernel, every projection on the EP', () => {
    const r = report();
    expect(r.ortInt8.exact).toBe(false);
    expect(r.hostKernel).toBe('avx2');
    expect(r.counters.groups).toBe(r.model.projections);
    expect(r.counters.groupRuns).toBe(r.expectedGroupRuns);
  });

  it('agrees with ORT and fp32 within the bounds true for a saturating ORT', () => {
    expectAgreementWithOrt(report()); // --quality takes too long under emulation: generated positions only
  });
});
