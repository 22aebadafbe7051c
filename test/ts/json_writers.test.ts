// SPDX-License-Identifier: Apache-2.0
// What the package writes for other programs to read, given hostile values (issue #28): the JSON
// of ep-probe --json and ep-trace --json (apps/cli/json_output.ts) and the routes file (routes.ts).
// JSON must come out strict (JSON.parse reads it, no lone surrogate, no escape of one) and hold
// the values, or be refused naming the field; a routes file must read back, by the EP's own
// reader, as exactly the entries written, or be refused.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot, runNode } from './helpers/package.js';

const require = createRequire(import.meta.url);
const { jsonText, JsonOutputError } = require(
  path.join(repoRoot, 'dist', 'apps', 'cli', 'json_output.js'),
) as typeof import('../../ts/apps/cli/json_output.js');
const { toReport } = require(
  path.join(repoRoot, 'dist', 'apps', 'cli', 'probe_report.js'),
) as typeof import('../../ts/apps/cli/probe_report.js');
const { probe } = require(path.join(repoRoot, 'dist', 'probe.js')) as typeof import('../../ts/probe.js');
const routes = require(path.join(repoRoot, 'dist', 'routes.js')) as typeof import('../../ts/routes.js');
const { agreement } = require(
  path.join(repoRoot, 'dist', 'apps', 'cli', 'statistics.js'),
) as typeof import('../../ts/apps/cli/statistics.js');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'onebit-json-writers-'));

// A seeded generator (mulberry32): the same cases on every run.
function generator(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Strict by what JSON.parse cannot see: no lone surrogate left to be encoded, none escaped. */
function expectStrict(text: string): void {
  expect(loneSurrogate.test(text)).toBe(false);
  expect(/\\ud[89a-f]/i.test(text)).toBe(false);
  expect(new TextDecoder('utf-8', { fatal: true }).decode(new TextEncoder().encode(text))).toBe(text);
}

describe('JSON the CLIs print', () => {
  it("onebit-run's agreement stays finite where outputs hold NaN or infinities, counting those apart", () => {
    const tensor = (data: number[]) => ({ type: 'float32', dims: [2, 3], data: Float32Array.from(data) }) as never;
    const onebit = { y: tensor([1, Infinity, NaN, 0.5, 2, -Infinity]) };
    const cpu = { y: tensor([1.25, Infinity, NaN, 0.5, 2, 7]) };
    const a = agreement(onebit, cpu);
    // Row 0: 0.25 apart, the same infinity, NaN on both sides (agreeing); row 1: -inf against 7.
    expect(a).toEqual({ maxAbsDiff: 0.25, nonFiniteMismatches: 1, int8DifferingFraction: null, klDivergence: null });
    const text = jsonText({ agreement: a }, 'report');
    expect(JSON.parse(text).agreement).toEqual(a); // it was {"maxAbsDiff": null}: Infinity lost
    const finite = agreement({ y: tensor([1, 2, 3, 4, 5, 6]) }, { y: tensor([1, 2, 3, 4, 5, 6]) });
    expect(finite).toMatchObject({ maxAbsDiff: 0, nonFiniteMismatches: 0, klDivergence: 0 });
  });

  it('refuses a number JSON cannot hold, naming the field, rather than writing null', () => {
    for (const bad of [NaN, Infinity, -Infinity]) {
      const value = {
        rows: [
          { rows: 1, ratio: 2 },
          { rows: 4, ratio: bad },
        ],
      };
      expect(() => jsonText(value, 'report')).toThrow(JsonOutputError);
      expect(() => jsonText(value, 'report')).toThrow(
        `cannot write report.rows[1].ratio: ${bad} is not a number JSON can hold`,
      );
    }
    expect(JSON.stringify({ ratio: NaN })).toBe('{"ratio":null}'); // what JSON.stringify alone did
  });

  it('writes random strings and finite numbers as strict JSON holding them', () => {
    const random = generator(20261207);
    const codeUnits = [0x0, 0x1f, 0x22, 0x5c, 0x7f, 0xe9, 0x2028, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xfffd, 0xffff];
    const numbers = [
      0,
      5e-324,
      2.2250738585072014e-308,
      1e-300,
      0.1,
      123456.789,
      2 ** 53 + 2,
      1e300,
      Number.MAX_VALUE,
      -Number.MAX_VALUE,
    ];
    const text = () =>
      String.fromCharCode(
        ...Array.from({ length: Math.floor(random() * 12) }, () =>
          random() < 0.5 ? codeUnits[Math.floor(random() * codeUnits.length)] : Math.floor(random() * 0x10000),
        ),
      );
    const wellFormed = (s: string) => s.replace(new RegExp(loneSurrogate, 'g'), '\uFFFD');
    let repaired = 0;
    for (let i = 0; i < 2000; ++i) {
      const key = text();
      const string = text();
      const list = [text(), numbers[i % numbers.length], random() * 10 ** (Math.floor(random() * 600) - 300)];
      const written = jsonText({ string, list, keyed: { [key]: 1 } }, 'value');
      expectStrict(written);
      const parsed = JSON.parse(written);
      expect(parsed.string).toBe(wellFormed(string));
      expect(parsed.list).toEqual([wellFormed(list[0] as string), list[1], list[2]]);
      expect(Object.keys(parsed.keyed)).toEqual([wellFormed(key)]);
      if (wellFormed(key + string + list[0]) !== key + string + list[0]) ++repaired;
    }
    expect(repaired).toBeGreaterThan(0);
  });

  it('ep-probe: a real report round-trips; a hostile one is refused by field, its strings repaired', async () => {
    const result = await probe({
      K: 64,
      N: 48,
      rows: [1, 4],
      repeat: 2,
      designsDir: path.join(tmp, 'designs'),
      lockPath: path.join(tmp, 'lock'),
    });
    const report = toReport(result, null);
    expect(JSON.parse(jsonText(report, 'report'))).toEqual(report);
    const hostile = toReport(
      { ...result, rows: result.rows.map((r, i) => ({ ...r, ratio: i === 1 ? Infinity : r.ratio })) },
      null,
    );
    expect(() => jsonText(hostile, 'report')).toThrow(
      'cannot write report.rows[1].ratio: Infinity is not a number JSON can hold',
    );
    const named = toReport({ ...result, device: { ...result.device, name: 'npu \ud800 0' } }, null);
    const written = jsonText(named, 'report');
    expectStrict(written);
    expect(JSON.parse(written).device.name).toBe('npu \uFFFD 0');
  });

  it('ep-trace --json: sums past what a double holds are refused by field, exit 1', () => {
    const event = (ts: number) => ({
      name: 'gemm_q8 64x48',
      ph: 'X',
      ts,
      dur: 1.5e308,
      pid: 1,
      tid: 1,
      args: { node: 'g', K: 64, N: 48, rows: 1, route: 'host', reason: 'routes' },
    });
    const file = path.join(tmp, 'huge.json');
    writeFileSync(file, JSON.stringify({ traceEvents: [event(0), event(1)] }));
    const ran = runNode([path.join(repoRoot, 'dist', 'apps', 'cli', 'ep_trace.js'), file, '--json']);
    expect(ran.stdout).toBe('');
    expect(ran.stderr).toBe(
      'ep-trace: cannot write summary.groups[0].totalMs: Infinity is not a number JSON can hold\n',
    );
    expect(ran.status).toBe(1);
  });
});

describe('routes files', () => {
  it('hostile entries are refused; the rest read back by the EP reader as written', () => {
    const random = generator(20261208);
    const values = [NaN, Infinity, -1, 0, 1.5, 2 ** 53, 1e21, 1, 4, 36, 64, 48];
    const routeNames = ['host', 'device', 'host', 'device', 'gpu', '', 'host\n1 1 1 device'];
    const commentTexts = ['# probed', 'no hash', 'a\n64 48 1 device', '# x\r\n1 1 1 host', '#'];
    const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)];
    let refused = 0;
    let written = 0;
    for (let i = 0; i < 400; ++i) {
      const entries = Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({
        K: random() < 0.7 ? pick([64, 1024]) : pick(values),
        N: random() < 0.7 ? pick([48, 2048]) : pick(values),
        rows: random() < 0.7 ? pick([1, 4, 36]) : pick(values),
        route: pick(routeNames) as 'host' | 'device',
      }));
      const comments = new Map(entries.map((e) => [`${e.K}x${e.N}`, [pick(commentTexts), pick(commentTexts)]]));
      const valid = entries.every(
        (e) =>
          [e.K, e.N, e.rows].every((v) => Number.isSafeInteger(v) && v >= 1) &&
          (e.route === 'host' || e.route === 'device'),
      );
      if (!valid) {
        expect(() => routes.formatRoutes(entries, comments)).toThrow(routes.RoutesFileError);
        expect(() => routes.formatRoutes(entries, comments)).toThrow(
          /^cannot write routes entry K=.* N=.* rows=.* route=.*: expected integers >= 1 and host or device$/s,
        );
        ++refused;
        continue;
      }
      const text = routes.formatRoutes(entries, comments);
      const last = new Map(entries.map((e) => [`${e.K} ${e.N} ${e.rows}`, e])); // one route per rows: the last given
      const byKey = (a: { K: number; N: number; rows: number }, b: typeof a) =>
        a.K - b.K || a.N - b.N || a.rows - b.rows;
      expect(routes.parseRoutes(text).entries.sort(byKey)).toEqual([...last.values()].sort(byKey));
      for (const line of text.split('\n').filter((l) => l !== '' && !/^\d+ \d+ \d+ (host|device)$/.test(l)))
        expect(line.startsWith('#')).toBe(true);
      ++written;
    }
    expect(refused).toBeGreaterThan(0);
    expect(written).toBeGreaterThan(0);
  });

  it('a FIFO or a directory where the routes file goes is refused, without blocking', () => {
    const fifo = path.join(tmp, 'routes.fifo');
    execFileSync('mkfifo', [fifo]);
    const entry = [{ K: 64, N: 48, rows: 1, route: 'host' as const }];
    for (const file of [fifo, tmp]) {
      expect(() => routes.saveRoutes(file, entry, '# c')).toThrow(routes.RoutesFileError);
      expect(() => routes.saveRoutes(file, entry, '# c')).toThrow(
        `${file} is not a regular file: routes files are written only to regular files`,
      );
    }
  });
});
