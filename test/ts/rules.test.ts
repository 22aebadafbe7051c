// SPDX-License-Identifier: Apache-2.0
// The rules TypeScript shares with the EP come from the EP's own code (through the addon): the cases
// in which the TS copies used to differ from it, driven through what TS now checks with.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { pkg, repoRoot } from './helpers/package.js';

const require = createRequire(import.meta.url);
const rules = require(path.join(repoRoot, 'dist', 'rules.js')) as typeof import('../../ts/rules.js');
const { toCounters } = require(path.join(repoRoot, 'dist', 'counters.js')) as typeof import('../../ts/counters.js');
const { parseArgs, usage } = require(
  path.join(repoRoot, 'dist', 'apps', 'cli', 'args.js'),
) as typeof import('../../ts/apps/cli/args.js');
const { parseProbeArgs, probeUsage } = require(
  path.join(repoRoot, 'dist', 'apps', 'cli', 'probe_args.js'),
) as typeof import('../../ts/apps/cli/probe_args.js');
const { validateProbeOptions } = require(path.join(repoRoot, 'dist', 'probe.js')) as typeof import('../../ts/probe.js');
const { nativeConstants } = require(path.join(repoRoot, 'dist', 'native.js')) as typeof import('../../ts/native.js');

const constants = nativeConstants();

describe('the trace-path rule (engine/ep_options is_trace_path)', () => {
  // ./ and ../ were paths to the TS checker and typos to the EP; they are paths to both now.
  const paths = ['/abs/trace', './trace', '../trace', './', 'run.json', 'dir/run.json'];
  const typos = ['yes', 'trace', 'dir/trace', '.json', '~/trace', ''];
  it.each([...paths.map((p) => [p, true] as const), ...typos.map((t) => [t, false] as const)])(
    '%j -> %s',
    (value, isPath) => {
      expect(rules.isTracePath(value)).toBe(isPath);
      if (isPath && value !== '') expect(pkg.validateOnebitOptions({ trace: value }).trace).toBe(path.resolve(value));
      else
        expect(() => pkg.validateOnebitOptions({ trace: value })).toThrow(
          `use true, false, or a trace file path (${constants.tracePathRule})`,
        );
    },
  );

  it('is stated in the words the EP uses', () => {
    expect(constants.tracePathRule).toBe('absolute, starting with ./ or ../, or ending in .json');
    expect(rules.isTracePath(1)).toBe(false);
  });
});

describe('cost models (npu/cost_model)', () => {
  it('names the built-in generations once', () => {
    expect(constants.costModels).toEqual(['xdna1', 'xdna2']);
    expect(constants.costFileSuffix).toBe('.json');
  });

  // A cost file the CLIs can read (they read it at once: a bad one is a usage error, modelled_arm.test.ts).
  const costFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'onebit-rules-')), 'costs.json');
  writeFileSync(
    costFile,
    '{"generation": "g", "launch_us": 50, "sync_call_us": 10, "sync_gbps": 20, "dram_gbps": 50, "int8_tops": 6}',
  );
  const accepted = ['xdna1', 'xdna2', costFile];
  const refused = ['xdna3', 'XDNA1', 'costs.JSON', ''];
  it.each([...accepted.map((m) => [m, true] as const), ...refused.map((m) => [m, false] as const)])(
    '%j -> %s in the library and both CLIs',
    (value, ok) => {
      expect(rules.isCostModel(value)).toBe(ok);
      const expected = rules.isCostFile(value) ? path.resolve(value) : value;
      if (ok) {
        expect(pkg.validateOnebitOptions({ costModel: value }).costModel).toBe(expected);
        expect(validateProbeOptions({ K: 64, N: 48, costModel: value }).costModel).toBe(expected);
        expect(parseArgs(['--model', 'stack', '--device', 'emu', '--cost-model', value]).costModel).toBe(value);
        expect(parseProbeArgs(['--shape', '64x48', '--cost-model', value]).costModel).toBe(value);
      } else {
        expect(() => pkg.validateOnebitOptions({ costModel: value })).toThrow(
          `use 'xdna1', 'xdna2' or a cost file path ending in .json`,
        );
        expect(() => validateProbeOptions({ K: 64, N: 48, costModel: value })).toThrow(
          `use 'xdna1', 'xdna2' or a cost file path ending in .json`,
        );
        expect(() => parseArgs(['--model', 'stack', '--device', 'emu', '--cost-model', value])).toThrow(
          `--cost-model takes xdna1, xdna2 or a cost file ending in .json, got '${value}'`,
        );
        expect(() => parseProbeArgs(['--shape', '64x48', '--cost-model', value])).toThrow(
          `--cost-model takes xdna1, xdna2 or a cost file ending in .json, got '${value}'`,
        );
      }
    },
  );
});

describe('device values (npu::kDeviceOptions)', () => {
  it('are checked alike by the library, the probe and both CLIs', () => {
    // OnebitDevice and OnebitDeviceLock (types, so written out) list the same values.
    expect(constants.deviceOptions).toEqual(['auto', 'emu', 'none']);
    expect(constants.lockPolicies).toEqual(['call', 'session']);
    for (const device of constants.deviceOptions) {
      expect(pkg.validateOnebitOptions({ device }).device).toBe(device);
      expect(parseArgs(['--device', device]).device).toBe(device);
      expect(parseProbeArgs(['--shape', '64x48', '--device', device]).device).toBe(device);
    }
    expect(() => pkg.validateOnebitOptions({ device: 'npu' })).toThrow(
      `device="npu" is invalid: use 'auto', 'emu' or 'none'`,
    );
    expect(() => validateProbeOptions({ K: 64, N: 48, device: 'npu' as 'emu' })).toThrow(
      `device="npu" is invalid: use 'auto', 'emu' or 'none'`,
    );
    expect(() => parseArgs(['--device', 'npu'])).toThrow(`--device takes auto, emu, none, got 'npu'`);
    expect(() => parseProbeArgs(['--shape', '64x48', '--device', 'npu'])).toThrow(
      `--device takes auto, emu, none, got 'npu'`,
    );
  });

  it("are listed by both CLIs' help, with the cost models, as the EP defines them", () => {
    expect(usage()).toContain("\n  --device auto|emu|none  the EP's offload device");
    expect(usage()).toContain('\n  --cost-model xdna1|xdna2|FILE.json\n');
    expect(probeUsage()).toContain('\n  --device auto|emu|none  device to probe');
    expect(probeUsage()).toContain('\n  --cost-model xdna1|xdna2|FILE.json\n');
  });
});

describe('counters (engine/counters.cpp)', () => {
  it('are the names the EP reports, camel-cased, in its order', () => {
    const names = constants.counters;
    expect(names.slice(0, 3)).toEqual(['group_runs', 'groups', 'host_rows_policy']);
    expect(rules.counterNames()).toEqual(names.map(rules.camelCase));
    expect(Object.keys(toCounters({}))).toEqual(rules.counterNames());
    // OnebitCounters (a type, so written out) names the same, in the same order.
    const declared = [
      ...readFileSync(path.join(repoRoot, 'dist', 'counters.d.ts'), 'utf8').matchAll(/^ {4}(\w+): number;$/gm),
    ].map((m) => m[1]);
    expect(declared).toEqual(rules.counterNames());
    // The EP library loaded reports exactly these (process-wide sums).
    expect(Object.keys(pkg.onebit.processCounters())).toEqual(rules.counterNames());
    // One camel-casing for option keys and counters alike (digits included).
    expect(rules.camelCase('a_bytes_synced')).toBe('aBytesSynced');
    expect(rules.camelCase('device_timeout_ms')).toBe('deviceTimeoutMs');
    expect(rules.camelCase('x_2d')).toBe('x2d');
  });

  it('still answer to the old name qdqRuns for one release, with one deprecation warning', async () => {
    const warnings: string[] = [];
    const listen = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', listen);
    try {
      const fromTrace = toCounters({ qdq_runs: 7, groups: 2 }); // a trace file of an older EP
      expect(fromTrace.groupRuns).toBe(7);
      const counters = toCounters({ group_runs: 5 });
      expect([counters.qdqRuns, counters.qdqRuns, fromTrace.qdqRuns]).toEqual([5, 5, 7]);
      expect(Object.keys(counters)).not.toContain('qdqRuns');
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    } finally {
      process.off('warning', listen);
    }
    expect(warnings.filter((w) => w.includes('qdqRuns'))).toEqual([
      'DeprecationWarning: onebit: counters.qdqRuns is deprecated: use counters.groupRuns',
    ]);
  });
});

describe('the routes lookup (engine/routes_table.cpp)', () => {
  const entries = pkg.parseRoutes('1024 2048 4 host\n1024 2048 32 device\n64 48 1 device\n').entries;

  it.each([
    [1024, 2048, 1, null],
    [1024, 2048, 4, 'host'],
    [1024, 2048, 31, 'host'],
    [1024, 2048, 32, 'device'],
    [1024, 2048, 4096, 'device'],
    [2048, 1024, 32, null],
    [64, 48, 1, 'device'],
  ])('(%i, %i) M=%i -> %s', (K, N, M, route) => {
    expect(pkg.routeFor(entries, K, N, M)).toBe(route);
  });

  it('refuses a file giving one rows value two routes, naming both lines; of two entries takes the later', () => {
    // The TS copy kept the first, the EP's table the last: now neither guesses.
    expect(() => pkg.parseRoutes('64 48 8 host\n# again\n64 48 8 device\n')).toThrow(
      "onebit: routes file 'routes file' lines 1 and 3 contradict each other: K=64 N=48 rows=8 is host on line 1 and device on line 3",
    );
    expect(pkg.parseRoutes('64 48 8 device\n64 48 8 device\n').entries).toEqual([
      { K: 64, N: 48, rows: 8, route: 'device' },
    ]);
    expect(
      pkg.routeFor(
        [
          { K: 64, N: 48, rows: 8, route: 'host' },
          { K: 64, N: 48, rows: 8, route: 'device' },
        ],
        64,
        48,
        9,
      ),
    ).toBe('device');
  });

  it('refuses what is not a list of entries', () => {
    expect(() => pkg.routeFor(3 as unknown as [], 1, 1, 1)).toThrow(/entries must be an array/);
  });
});
