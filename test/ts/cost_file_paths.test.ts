// SPDX-License-Identifier: Apache-2.0
// The cost-file defects of issue #28 through the option users set (costModel), end to end: each
// fails session creation at once with the option, the path and the reason, where they used to
// hang (a FIFO), read 1.1 GB (/dev/zero), say "expected '{'" (a directory), accept a padded
// file, or accept constants whose modelled time overflows and bytes that are not UTF-8.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { qdqGroup } from './helpers/models.js';
import { ort, pkg } from './helpers/package.js';

const group = qdqGroup();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-cost-paths-'));
const valid = '"launch_us": 50, "sync_call_us": 10, "sync_gbps": 20, "dram_gbps": 51.2, "int8_tops": 6';

function costFile(name: string, make: (file: string) => void): string {
  const file = path.join(tmp, name);
  make(file);
  return file;
}

const cases: [string, string, RegExp][] = [
  [
    'a FIFO',
    costFile('fifo.json', (f) => execFileSync('mkfifo', [f])),
    /cannot read cost file: .*fifo\.json: a FIFO, expected a regular file/,
  ],
  [
    'a link to /dev/zero',
    costFile('zero.json', (f) => symlinkSync('/dev/zero', f)),
    /cannot read cost file: .*zero\.json: a character device, expected a regular file/,
  ],
  [
    'a directory',
    costFile('folder.json', (f) => mkdirSync(f)),
    /cannot read cost file: .*folder\.json: a directory, expected a regular file/,
  ],
  [
    'a padded file',
    costFile('padded.json', (f) => writeFileSync(f, `${' '.repeat(100_000)}{"generation": "g", ${valid}}`)),
    /padded\.json: larger than 65536 bytes, the most expected/,
  ],
  [
    'a launch cost that overflows the modelled time',
    costFile('huge.json', (f) =>
      writeFileSync(f, `{"generation": "g", ${valid.replace('"launch_us": 50', '"launch_us": 1e308')}}`),
    ),
    /huge\.json: key "launch_us" is 1e\+308, outside \[0\.001, 1e\+06\]/,
  ],
  [
    'a generation that is not UTF-8',
    costFile('bytes.json', (f) =>
      writeFileSync(
        f,
        Buffer.concat([Buffer.from('{"generation": "'), Buffer.from([0xff]), Buffer.from(`", ${valid}}`)]),
      ),
    ),
    /bytes\.json:1:17: the string value of "generation" is not valid UTF-8/,
  ],
];

describe('cost files given by the costModel option', () => {
  it.each(cases)('%s fails session creation at once, naming path and reason', async (_kind, file, reason) => {
    const started = Date.now();
    const attempt = ort.InferenceSession.create(group.bytes, {
      executionProviders: [{ name: 'onebit', device: 'none', costModel: file } as never],
    });
    await expect(attempt).rejects.toThrow(pkg.OnebitOptionError);
    await expect(attempt).rejects.toMatchObject({ option: 'costModel' });
    await expect(attempt).rejects.toThrow(
      /^onebit: option cost_model='.*\.json' is invalid; expected xdna1, xdna2 or a readable cost file/,
    );
    await expect(attempt).rejects.toThrow(reason);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
