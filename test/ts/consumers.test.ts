// SPDX-License-Identifier: Apache-2.0
// Plain Node apps, CommonJS and ESM, using the package by name (as an installed dependency would).
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { exactQdq, qdqGroup } from './helpers/models.js';
import { repoRoot, runNode } from './helpers/package.js';

const group = qdqGroup();
const rows = 3;
const x = Int8Array.from({ length: rows * group.k }, (_, i) => ((i * 37 + 11) % 256) - 128);

describe('consumers', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-consumer-'));
  const model = path.join(dir, 'group.onnx');
  writeFileSync(model, group.bytes);

  for (const script of ['consumer.cjs', 'consumer.mjs']) {
    it(script, () => {
      // Inside the repository, so `onebit-ep` resolves to this package by its own name.
      const local = path.join(repoRoot, 'test', 'ts', 'fixtures', script);
      const ran = runNode([local, model, String(rows), String(group.k)]);
      expect(ran.stderr).toBe('');
      expect(ran.status).toBe(0);
      const result = JSON.parse(ran.stdout);
      expect(result.isTensor).toBe(true);
      expect(result.dims).toEqual([rows, group.n]);
      const exact = Array.from(exactQdq(group, x, rows));
      const maxDiff = Math.max(...result.y.map((v: number, i: number) => Math.abs(v - exact[i])));
      expect(maxDiff).toBeLessThanOrEqual(1);
      expect(result.counters).toMatchObject({ groupRuns: 1, groups: 1 });
    });
  }
});
