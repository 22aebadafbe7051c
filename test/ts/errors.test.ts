// SPDX-License-Identifier: Apache-2.0
// The errors users will hit: typed, and saying what to do.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { int8Input, qdqGroup } from './helpers/models.js';
import { ort, pkg, repoRoot, runNode } from './helpers/package.js';

const group = qdqGroup();
const registerScript =
  "try { require('onebit-ep').onebit.register(); console.log('loaded') } catch (e) { console.log(e.name + ': ' + e.message) }";

describe('option errors', () => {
  it.each([
    [
      { name: 'onebit', minRows: 4 },
      /unknown onebit option 'minRows'; valid options are: device, minDeviceRows, designsDir, routes, deviceLock, deviceTimeoutMs, trace, costModel, matmulNbitsAccuracy, packedCacheDir, packedCacheMaxMb$/,
    ],
    [{ name: 'onebit', min_device_rows: 4 }, /did you mean 'minDeviceRows'/],
    [{ name: 'onebit', device: 'gpu' }, /device="gpu" is invalid: use 'auto', 'emu' or 'none'/],
    [{ name: 'onebit', minDeviceRows: -1 }, /minDeviceRows=-1 is invalid: use an integer >= 0/],
    [{ name: 'onebit', trace: 'yes' }, /trace="yes" is invalid: use true, false, or a trace file path/],
    [
      { name: 'onebit', costModel: 'tpu' },
      /costModel="tpu" is invalid: use 'xdna1', 'xdna2' or a cost file path ending in .json/,
    ],
  ])('%j', async (entry, message) => {
    const attempt = ort.InferenceSession.create(group.bytes, { executionProviders: [entry as never] });
    await expect(attempt).rejects.toThrow(pkg.OnebitOptionError);
    await expect(attempt).rejects.toThrow(message);
  });

  it('an incomplete cost file fails session creation naming the key', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'onebit-cost-')), 'cost.json');
    writeFileSync(file, '{"generation": "mine", "launch_us": 50, "sync_call_us": 10, "sync_gbps": 20, "int8_tops": 6}');
    const attempt = ort.InferenceSession.create(group.bytes, {
      executionProviders: [{ name: 'onebit', device: 'none', costModel: file } as never],
    });
    await expect(attempt).rejects.toThrow(/cost_model=.*cost.json: missing key "dram_gbps"/);
  });

  // Files only the EP reads: what it refuses is the option's error in the EP's own words (ORT's
  // wrapper text, "ep_plugin_provider_interfaces.cc ... Error creating execution provider", dropped).
  const refused = mkdtempSync(path.join(os.tmpdir(), 'onebit-refused-'));
  const badCost = path.join(refused, 'cost.json');
  writeFileSync(badCost, '{"generation": "g"}');
  const badRoutes = path.join(refused, 'routes.txt');
  writeFileSync(badRoutes, '64 64 1 host\n64 64 4 sideways\n');
  it.each([
    ['costModel', 'cost_model', badCost, /^onebit: option cost_model='.*cost\.json' is invalid; .*missing key/],
    [
      'routes',
      'routes',
      badRoutes,
      /^onebit: option routes='.*routes\.txt' is invalid; routes file '.*routes\.txt' line 2: expected 'K N rows host\|device'/,
    ],
    [
      'trace',
      'trace',
      refused,
      /^onebit: option trace='.*onebit-refused-[^'/]*' is invalid; cannot create trace file: /,
    ],
  ])('a %s the EP refuses is an OnebitOptionError naming it', async (option, key, value, message) => {
    const error = await ort.InferenceSession.create(group.bytes, {
      executionProviders: [{ name: 'onebit', device: 'none', [option]: value } as never],
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(pkg.OnebitOptionError);
    expect(error).toMatchObject({ code: 'ONEBIT_OPTION', option });
    const text = (error as Error).message;
    expect(text).toMatch(message);
    expect(text).toContain(`option ${key}=`);
    expect(text).not.toMatch(/ONNXRuntimeError|\.cc:\d+|Error creating execution provider/);
  });

  it('bad session options', async () => {
    await expect(
      ort.InferenceSession.create(group.bytes, {
        executionProviders: ['onebit'],
        graphOptimizationLevel: 'max' as never,
      }),
    ).rejects.toThrow(/graphOptimizationLevel="max" is invalid: use one of disabled, basic, extended, layout, all/);
    await expect(
      ort.InferenceSession.create(group.bytes, { executionProviders: ['onebit'], intraOpNumThreads: -2 }),
    ).rejects.toThrow(pkg.OnebitOptionError);
  });

  it('passes valid options to the EP, which accepts them', async () => {
    const session = await ort.InferenceSession.create(group.bytes, {
      executionProviders: [{ name: 'onebit', device: 'none', minDeviceRows: 0, trace: false } as never],
    });
    await session.run({ x_q: new ort.Tensor('int8', int8Input(group.k), [1, group.k]) });
    expect(pkg.onebit.counters(session).groupRuns).toBe(1);
    await session.release();
  });
});

describe('model and input errors', () => {
  it('a missing model file', async () => {
    const attempt = ort.InferenceSession.create('/nonexistent/model.onnx', { executionProviders: ['onebit'] });
    await expect(attempt).rejects.toThrow(pkg.OnebitModelNotFoundError);
    await expect(attempt).rejects.toThrow(/model file not found: \/nonexistent\/model.onnx/);
  });

  it('wrong input name, dtype and shape', async () => {
    const session = await ort.InferenceSession.create(group.bytes, { executionProviders: ['onebit'] });
    const good = new ort.Tensor('int8', int8Input(group.k), [1, group.k]);
    // onnxruntime-common checks for missing inputs itself; extra names are ours to reject.
    await expect(session.run({ x_q: good, x: good })).rejects.toThrow(/no input named 'x'; its inputs are: 'x_q'/);
    await expect(session.run({ x_q: new ort.Tensor('uint8', new Uint8Array(group.k), [1, group.k]) })).rejects.toThrow(
      /input 'x_q' is uint8, but the model expects int8/,
    );
    const wrongShape = session.run({ x_q: new ort.Tensor('int8', new Int8Array(2 * 32), [2, 32]) });
    await expect(wrongShape).rejects.toThrow(pkg.OnebitInputError);
    await expect(wrongShape).rejects.toThrow(/input 'x_q' has shape \[2, 32\], but the model expects \[rows, 64\]/);
    await session.release();
  });

  it('a released session', async () => {
    const session = await ort.InferenceSession.create(group.bytes, { executionProviders: ['onebit'] });
    await session.release();
    const attempt = session.run({ x_q: new ort.Tensor('int8', int8Input(group.k), [1, group.k]) });
    await expect(attempt).rejects.toThrow(pkg.OnebitSessionDisposedError);
    await expect(attempt).rejects.toThrow(/released .* create a new InferenceSession/);
  });
});

describe('library errors (fresh processes)', () => {
  it('the EP library is missing', () => {
    const ran = runNode(['-e', registerScript], repoRoot, { ONEBIT_EP_LIB: '/nonexistent/libonebit_ep.so' });
    expect(ran.stdout).toMatch(/OnebitLibraryError: the onebit EP library is missing: \/nonexistent\/libonebit_ep.so/);
    expect(ran.stdout).toMatch(/npm rebuild onebit-ep/);
  });

  it('ONEBIT_ADDON names no file, or not by an absolute path', () => {
    for (const addon of ['/nonexistent/onebit-ep.node', 'build/Release/onebit-ep.node']) {
      const ran = runNode(['-e', registerScript], repoRoot, { ONEBIT_ADDON: addon });
      expect(ran.stdout).toContain(
        `OnebitLibraryError: ONEBIT_ADDON must be the absolute path of a built onebit-ep.node; there is no such file: ${addon}`,
      );
    }
  });

  it('the EP library is built for a newer ORT API', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-fake-'));
    writeFileSync(
      path.join(dir, 'fake.c'),
      'int OnebitEp_OrtApiVersion(void) { return 99; }\nvoid* CreateEpFactories(void) { return 0; }\n',
    );
    execFileSync('cc', ['-shared', '-fPIC', '-o', path.join(dir, 'libfake.so'), path.join(dir, 'fake.c')]);
    const ran = runNode(['-e', registerScript], repoRoot, { ONEBIT_EP_LIB: path.join(dir, 'libfake.so') });
    expect(ran.stdout).toMatch(
      /OnebitLibraryError: .*libfake.so was built for ORT API 99, newer than the ORT of onnxruntime-node \(API 30\)/,
    );
  });

  it('a file that is not a onebit EP library', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-fake-'));
    writeFileSync(path.join(dir, 'other.c'), 'int something(void) { return 1; }\n');
    execFileSync('cc', ['-shared', '-fPIC', '-o', path.join(dir, 'libother.so'), path.join(dir, 'other.c')]);
    const ran = runNode(['-e', registerScript], repoRoot, { ONEBIT_EP_LIB: path.join(dir, 'libother.so') });
    expect(ran.stdout).toMatch(/OnebitLibraryError: .*is not a onebit EP library/);
  });
});
