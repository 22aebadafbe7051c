// SPDX-License-Identifier: Apache-2.0
// The two entry points, index.js (CommonJS) and index.mjs (ESM, which names each export of
// index.ts again), export the same names and the very same values.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { describe, expect, it } from 'vitest';

import { pkg, repoRoot } from './helpers/package.js';

describe('entry points', () => {
  it('index.mjs exports what index.js exports, the same objects', async () => {
    const esm = (await import(pathToFileURL(path.join(repoRoot, 'dist', 'index.mjs')).href)) as Record<string, unknown>;
    const cjs = pkg as unknown as Record<string, unknown>;
    expect(Object.keys(esm).sort()).toEqual(Object.keys(cjs).sort());
    expect(Object.keys(cjs)).toEqual(
      expect.arrayContaining(['onebit', 'probe', 'parseRoutes', 'summarizeTrace', 'OnebitError']),
    );
    for (const name of Object.keys(cjs)) expect(esm[name], name).toBe(cjs[name]);
  });
});
