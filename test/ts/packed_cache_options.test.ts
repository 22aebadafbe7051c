// SPDX-License-Identifier: Apache-2.0
// The packed-weights cache options: validation with helpful errors, and their EP spelling.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { pkg, repoRoot } from './helpers/package.js';

const require = createRequire(import.meta.url);
const { providerOptions } = require(path.join(repoRoot, 'dist', 'options.js')) as typeof import('../../ts/options.js');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-cache-options-'));
const file = path.join(tmp, 'file.txt');
writeFileSync(file, 'not a folder\n');

describe('packed-weights cache options', () => {
  it('accepts a folder and a size, made absolute and passed in the EP spelling', () => {
    const options = pkg.validateOnebitOptions({ name: 'onebit', packedCacheDir: tmp, packedCacheMaxMb: 512 });
    expect(providerOptions(options)).toEqual([
      ['packed_cache_dir', tmp],
      ['packed_cache_max_mb', '512'],
    ]);
    expect(pkg.validateOnebitOptions({ packedCacheDir: path.relative(process.cwd(), tmp) })).toEqual({
      packedCacheDir: tmp,
    });
  });

  it.each([
    [{ packedCacheDir: '' }, /packedCacheDir="" is invalid: use the path of an existing writable directory/],
    [{ packedCacheDir: file }, /packedCacheDir=".*file.txt" is invalid: .* is not an existing directory/],
    [{ packedCacheDir: path.join(tmp, 'missing') }, /packedCacheDir=".*missing" is invalid/],
    [{ packedCacheMaxMb: 0 }, /packedCacheMaxMb=0 is invalid: use an integer number of MiB from 1 to 1073741824/],
    [{ packedCacheMaxMb: 1.5 }, /packedCacheMaxMb=1.5 is invalid/],
    [{ packed_cache_dir: tmp }, /did you mean 'packedCacheDir'/],
  ])('%j', (entry, message) => {
    expect(() => pkg.validateOnebitOptions({ name: 'onebit', ...entry })).toThrow(pkg.OnebitOptionError);
    expect(() => pkg.validateOnebitOptions({ name: 'onebit', ...entry })).toThrow(message);
  });
});
