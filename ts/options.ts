// SPDX-License-Identifier: Apache-2.0
// OnebitOptions: the EP's provider options, typed and validated before ORT sees them.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

import { OnebitOptionError } from './errors.js';
import { nativeConstants } from './native.js';
import {
  type OnebitDevice,
  type OnebitDeviceLock,
  camelCase,
  costModelsText,
  isCostFile,
  isCostModel,
  isDevice,
  isDeviceLock,
  isTracePath,
  quotedList,
  tracePathRule,
} from './rules.js';

export type { OnebitDevice, OnebitDeviceLock } from './rules.js';

/** Options of the `onebit` execution provider (the EP's provider options, camel-cased). */
export interface OnebitOptions {
  /**
   * Offload device: 'auto' uses an NPU if a backend finds one (this build has none), 'emu' the
   * emulated array (tests, development), 'none' keeps everything on the host CPU. Default 'auto'.
   * The environment variable ONEBIT_DEVICE overrides it inside the EP.
   */
  device?: OnebitDevice;
  /** Calls with fewer rows than this never go to a device. Integer >= 0, default 8. */
  minDeviceRows?: number;
  /** Directory of the design cache. Default: onebit-ep/designs under the user's cache directory. */
  designsDir?: string;
  /** A routes file written by `ep-probe --save-routes`: per shape and rows, host or device. */
  routes?: string;
  /** When the device lock is taken: per 'call' (default; the array is free between calls) or per 'session'. */
  deviceLock?: OnebitDeviceLock;
  /**
   * How long one device call may take, its wait behind earlier calls of the same shape included,
   * before it is cancelled and run on the host. Integer 1..86400000 (one day), default 30000.
   */
  deviceTimeoutMs?: number;
  /**
   * true: print the EP's counter line to stderr when the session is released. A string: also
   * write per-call events to that file as Chrome trace-event JSON (read it with `ep-trace`).
   * Default false.
   */
  trace?: boolean | string;
  /**
   * 'xdna1', 'xdna2' or a cost file (*.json): every device call also reports its MODELLED time on
   * that XDNA generation (in the trace and `ep-trace`), and the emulated array plans its blocks as
   * that hardware would. See docs/cost-model.md.
   */
  costModel?: string;
  /**
   * Which com.microsoft.MatMulNBits nodes (int4/int8 weights in K-blocks) are claimed: 'level4'
   * (default) those with accuracy_level=4, which allows quantizing their activations to int8 per
   * block; 'any' also levels 0-3, whose models asked for float accuracy (the EP quantizes their
   * activations all the same, so their outputs change by that rounding).
   */
  matmulNbitsAccuracy?: 'level4' | 'any';
  /**
   * A packed-weights cache folder (an existing writable directory) shared by every process that
   * names it: a weight's packed layout is written there once and mapped read-only by the others,
   * which share its memory and skip the packing. Default: none (ONEBIT_PACKED_CACHE_DIR sets it
   * for sessions that do not). See docs/options.md.
   */
  packedCacheDir?: string;
  /** The most the cache folder's entries may take, in MiB; least recently used ones are removed. Integer >= 1, default 2048. */
  packedCacheMaxMb?: number;
}

/** The entry for `executionProviders`: `{ name: 'onebit', ...OnebitOptions }`. */
export interface OnebitExecutionProviderOption extends OnebitOptions {
  name: 'onebit';
}

export const BACKEND_NAME = 'onebit';

// The EP's option keys in camelCase; session_id is the addon's own (it names each session).
function validKeys(): string[] {
  return nativeConstants()
    .optionKeys.filter((k) => k !== 'session_id')
    .map(camelCase);
}

// Users who copied a key from the C/Python docs (snake_case) or miscased it get the right spelling.
function suggestion(key: string): string {
  const known = validKeys().find((k) => k.toLowerCase() === key.toLowerCase().replace(/[_-]/g, ''));
  return known ? ` (did you mean '${known}'?)` : '';
}

function nonEmptyPath(key: string, value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new OnebitOptionError(
      `onebit option ${key}=${JSON.stringify(value)} is invalid: use the path of ${what}`,
      key,
    );
  if (value.includes('\0')) throw new OnebitOptionError(`onebit option ${key} contains a NUL character`, key);
  // Absolute, so the EP (which may resolve relative paths elsewhere) reads what the caller meant.
  return path.resolve(value);
}

/** Checks the options of our `executionProviders` entry; throws OnebitOptionError saying what is valid. */
export function validateOnebitOptions(entry: unknown): OnebitOptions {
  if (entry === undefined || entry === null || entry === BACKEND_NAME) return {};
  if (typeof entry !== 'object')
    throw new OnebitOptionError(
      `the onebit execution provider entry must be 'onebit' or an object, got ${typeof entry}`,
    );
  const options: OnebitOptions = {};
  for (const [key, value] of Object.entries(entry)) {
    if (key === 'name') continue;
    if (key === 'device') {
      if (!isDevice(value))
        throw new OnebitOptionError(
          `onebit option device=${JSON.stringify(value)} is invalid: use ${quotedList(nativeConstants().deviceOptions)}`,
          key,
        );
      options.device = value;
    } else if (key === 'minDeviceRows') {
      if (!Number.isSafeInteger(value) || (value as number) < 0)
        throw new OnebitOptionError(
          `onebit option minDeviceRows=${JSON.stringify(value)} is invalid: use an integer >= 0`,
          key,
        );
      options.minDeviceRows = value as number;
    } else if (key === 'designsDir') {
      const dir = nonEmptyPath(key, value, 'a directory for the design cache');
      if (existsSync(dir) && !statSync(dir).isDirectory())
        throw new OnebitOptionError(
          `onebit option designsDir=${JSON.stringify(value)} is invalid: ${dir} exists and is not a directory`,
          key,
        );
      options.designsDir = dir;
    } else if (key === 'routes') {
      const file = nonEmptyPath(key, value, 'a routes file written by ep-probe --save-routes');
      if (!existsSync(file))
        throw new OnebitOptionError(
          `onebit option routes: no such file ${file} (write one with ep-probe --shape KxN --save-routes ${file})`,
          key,
        );
      options.routes = file;
    } else if (key === 'deviceLock') {
      if (!isDeviceLock(value))
        throw new OnebitOptionError(
          `onebit option deviceLock=${JSON.stringify(value)} is invalid: use ${quotedList(nativeConstants().lockPolicies)}`,
          key,
        );
      options.deviceLock = value;
    } else if (key === 'deviceTimeoutMs') {
      const max = nativeConstants().maxDeviceTimeoutMs;
      if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max)
        throw new OnebitOptionError(
          `onebit option deviceTimeoutMs=${JSON.stringify(value)} is invalid: use an integer number of milliseconds from 1 to ${max} (one day)`,
          key,
        );
      options.deviceTimeoutMs = value as number;
    } else if (key === 'trace') {
      if (typeof value === 'boolean') options.trace = value;
      // A trace file path must look like one (the EP's rule), so a typo such as trace: 'yes' is not taken for a file name.
      else if (isTracePath(value)) options.trace = nonEmptyPath(key, value, 'the trace file to write');
      else
        throw new OnebitOptionError(
          `onebit option trace=${JSON.stringify(value)} is invalid: use true, false, or a trace file path (${tracePathRule()})`,
          key,
        );
    } else if (key === 'costModel') {
      if (!isCostModel(value))
        throw new OnebitOptionError(
          `onebit option costModel=${JSON.stringify(value)} is invalid: use ${costModelsText(true)}`,
          key,
        );
      options.costModel = isCostFile(value) ? nonEmptyPath(key, value, 'a cost file') : value;
    } else if (key === 'matmulNbitsAccuracy') {
      if (!nativeConstants().nbitsAccuracyValues.includes(value as string))
        throw new OnebitOptionError(
          `onebit option matmulNbitsAccuracy=${JSON.stringify(value)} is invalid: use ${quotedList(nativeConstants().nbitsAccuracyValues)}`,
          key,
        );
      options.matmulNbitsAccuracy = value as 'level4' | 'any';
    } else if (key === 'packedCacheDir') {
      const dir = nonEmptyPath(key, value, 'an existing writable directory for the packed-weights cache');
      if (!existsSync(dir) || !statSync(dir).isDirectory())
        throw new OnebitOptionError(
          `onebit option packedCacheDir=${JSON.stringify(value)} is invalid: ${dir} is not an existing directory`,
        );
      options.packedCacheDir = dir;
    } else if (key === 'packedCacheMaxMb') {
      const max = nativeConstants().maxPackedCacheMb;
      if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max)
        throw new OnebitOptionError(
          `onebit option packedCacheMaxMb=${JSON.stringify(value)} is invalid: use an integer number of MiB from 1 to ${max}`,
        );
      options.packedCacheMaxMb = value as number;
    } else {
      throw new OnebitOptionError(
        `unknown onebit option '${key}'${suggestion(key)}; valid options are: ${validKeys().join(', ')}`,
        key,
      );
    }
  }
  return options;
}

/** The EP's provider options as key/value strings (its C spelling). */
export function providerOptions(options: OnebitOptions): [string, string][] {
  const pairs: [string, string][] = [];
  if (options.device !== undefined) pairs.push(['device', options.device]);
  if (options.minDeviceRows !== undefined) pairs.push(['min_device_rows', String(options.minDeviceRows)]);
  if (options.designsDir !== undefined) pairs.push(['designs_dir', options.designsDir]);
  if (options.routes !== undefined) pairs.push(['routes', options.routes]);
  if (options.deviceLock !== undefined) pairs.push(['device_lock', options.deviceLock]);
  if (options.deviceTimeoutMs !== undefined) pairs.push(['device_timeout_ms', String(options.deviceTimeoutMs)]);
  if (options.costModel !== undefined) pairs.push(['cost_model', options.costModel]);
  if (options.matmulNbitsAccuracy !== undefined) pairs.push(['matmul_nbits_accuracy', options.matmulNbitsAccuracy]);
  if (options.packedCacheDir !== undefined) pairs.push(['packed_cache_dir', options.packedCacheDir]);
  if (options.packedCacheMaxMb !== undefined) pairs.push(['packed_cache_max_mb', String(options.packedCacheMaxMb)]);
  if (options.trace !== undefined)
    pairs.push(['trace', typeof options.trace === 'string' ? options.trace : options.trace ? '1' : '0']);
  return pairs;
}
