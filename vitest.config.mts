// SPDX-License-Identifier: Apache-2.0
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/ts/**/*.test.ts'],
    globalSetup: ['test/ts/helpers/temp_root.ts'],
    pool: 'forks', // each file in its own process: one ORT, one registered EP per process, as in real use
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The package under test is the compiled CommonJS in dist/: let Node load it, untransformed.
    server: { deps: { external: [/\/dist\//] } },
  },
});
