// SPDX-License-Identifier: Apache-2.0
// The device provider options: validation with helpful errors, and their EP spelling.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { pkg, repoRoot } from './helpers/package.js';

const require = createRequire(import.meta.url);
const { providerOptions } = require(path.join(repoRoot, 'dist', 'options.js')) as typeof import('../../ts/options.js');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-options-'));
const routes = path.join(tmp, 'routes.txt');
writeFileSync(routes, '64 48 1 device\n');

describe('device options', () => {
  it('accepts valid values and passes them to the EP in its spelling', () => {
    const options = pkg.validateOnebitOptions({
      name: 'onebit',
      device: 'emu',
      minDeviceRows: 1,
      designsDir: path.join(tmp, 'designs'),
      routes,
      deviceLock: 'session',
      deviceTimeoutMs: 5000,
      trace: path.join(tmp, 'trace.json'),
    });
    expect(providerOptions(options)).toEqual([
      ['device', 'emu'],
      ['min_device_rows', '1'],
      ['designs_dir', path.join(tmp, 'designs')],
      ['routes', routes],
      ['device_lock', 'session'],
      ['device_timeout_ms', '5000'],
      ['trace', path.join(tmp, 'trace.json')],
    ]);
    // Relative paths are made absolute against the working directory; booleans stay flags.
    expect(pkg.validateOnebitOptions({ trace: './t.json', designsDir: 'd' })).toEqual({
      trace: path.resolve('t.json'),
      designsDir: path.resolve('d'),
    });
    expect(providerOptions({ trace: true })).toEqual([['trace', '1']]);
    expect(providerOptions({ trace: false, device: 'none', deviceLock: 'call' })).toEqual([
      ['device', 'none'],
      ['device_lock', 'call'],
      ['trace', '0'],
    ]);
  });

  it.each([
    [{ device: 'npu' }, /device="npu" is invalid: use 'auto', 'emu' or 'none'/],
    [{ deviceLock: 'process' }, /deviceLock="process" is invalid: use 'call' or 'session'/],
    [
      { deviceTimeoutMs: 0 },
      /deviceTimeoutMs=0 is invalid: use an integer number of milliseconds from 1 to 86400000 \(one day\)/,
    ],
    [
      { deviceTimeoutMs: 86_400_001 },
      /deviceTimeoutMs=86400001 is invalid: use an integer number of milliseconds from 1 to 86400000/,
    ],
    [{ deviceTimeoutMs: 9.3e12 }, /deviceTimeoutMs=9300000000000 is invalid/],
    [{ deviceTimeoutMs: 1.5 }, /deviceTimeoutMs=1.5 is invalid/],
    [{ designsDir: '' }, /designsDir="" is invalid: use the path of a directory for the design cache/],
    [{ designsDir: routes }, /designsDir=".*routes.txt" is invalid: .* exists and is not a directory/],
    [
      { routes: path.join(tmp, 'nope.txt') },
      /onebit option routes: no such file .*nope.txt \(write one with ep-probe --shape KxN --save-routes/,
    ],
    [{ routes: 3 }, /routes=3 is invalid: use the path of a routes file written by ep-probe --save-routes/],
    [
      { trace: 'yes' },
      /trace="yes" is invalid: use true, false, or a trace file path \(absolute, starting with .\/ or ..\/, or ending in .json\)/,
    ],
    [{ trace: 1 }, /trace=1 is invalid/],
    [{ designs_dir: '/x' }, /unknown onebit option 'designs_dir' \(did you mean 'designsDir'\?\)/],
    [{ device_timeout_ms: 5 }, /did you mean 'deviceTimeoutMs'/],
    [{ devicelock: 'call' }, /did you mean 'deviceLock'/],
  ])('%j', (entry, message) => {
    expect(() => pkg.validateOnebitOptions({ name: 'onebit', ...entry })).toThrow(pkg.OnebitOptionError);
    expect(() => pkg.validateOnebitOptions({ name: 'onebit', ...entry })).toThrow(message);
  });
});
