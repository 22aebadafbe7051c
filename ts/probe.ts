// SPDX-License-Identifier: Apache-2.0
// The per-shape probe (native code in probes/, run off the JS thread): host gemm_q8 against the
// whole device path per call, for one GEMM shape and a list of rows values.
import path from 'node:path';

import type { ProbeOptions, ProbeRowsResult, RawProbeResult } from './addon_types.js';
import { type OnebitCounters, toCounters } from './counters.js';
import { OnebitOptionError, fromNativeError } from './errors.js';
import { loadAddon, nativeConstants } from './native.js';
import { costModelsText, isCostFile, isCostModel, isDevice, quotedList } from './rules.js';

export type { DeviceRowsTiming, ModelledTiming, ProbeOptions, ProbeRowsResult, Spread } from './addon_types.js';

/** What probe() resolves with: the addon's result, its counters typed. */
export interface ProbeResult extends Omit<RawProbeResult, 'deviceCounters'> {
  /**
   * The EP's counters of the probe's device calls (warm-ups included): the same calls run by a
   * session with minDeviceRows 0 count the same. Every device call goes through the code the EP runs.
   */
  deviceCounters: OnebitCounters;
}

function positiveInt(name: string, value: unknown, max: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max)
    throw new OnebitOptionError(
      `probe option ${name}=${JSON.stringify(value)} is invalid: use an integer in 1..${max}`,
    );
  return value as number;
}

/** Checks probe options in TypeScript first, so mistakes say which option and what is valid. */
export function validateProbeOptions(options: ProbeOptions): ProbeOptions {
  const { probeLimits: limits, deviceOptions } = nativeConstants();
  const checked: ProbeOptions = {
    K: positiveInt('K', options.K, limits.maxK),
    N: positiveInt('N', options.N, limits.maxN),
  };
  if (options.rows !== undefined) {
    if (!Array.isArray(options.rows) || options.rows.length === 0)
      throw new OnebitOptionError('probe option rows must be a non-empty array of integers, e.g. [1, 4, 32, 36]');
    checked.rows = options.rows.map((r) => positiveInt('rows', r, limits.maxRows));
  }
  if (options.repeat !== undefined) checked.repeat = positiveInt('repeat', options.repeat, limits.maxRepeat);
  if (options.seed !== undefined) checked.seed = positiveInt('seed', options.seed, 2 ** 32 - 1);
  if (options.device !== undefined) {
    if (!isDevice(options.device))
      throw new OnebitOptionError(
        `probe option device=${JSON.stringify(options.device)} is invalid: use ${quotedList(deviceOptions)}`,
      );
    checked.device = options.device;
  }
  if (options.costModel !== undefined) {
    const model = options.costModel;
    if (!isCostModel(model))
      throw new OnebitOptionError(
        `probe option costModel=${JSON.stringify(model)} is invalid: use ${costModelsText(true)}`,
      );
    checked.costModel = isCostFile(model) ? path.resolve(model) : model;
  }
  for (const key of ['designsDir', 'lockPath'] as const) {
    const value = options[key];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '')
      throw new OnebitOptionError(`probe option ${key} must be a non-empty path`);
    checked[key] = value;
  }
  return checked;
}

/** Times one GEMM shape on the host and on the device, per call. Resolves when done (off the JS thread). */
export async function probe(options: ProbeOptions): Promise<ProbeResult> {
  const checked = validateProbeOptions(options);
  try {
    const raw = await loadAddon().probe(checked);
    return { ...raw, deviceCounters: toCounters(raw.deviceCounters) };
  } catch (error) {
    throw fromNativeError(error);
  }
}

/**
 * The route a routes file records for a probed rows value: the device where its median is lower
 * than the host's, or, on 'modelled', where its modelled time is.
 */
export function fasterRoute(row: ProbeRowsResult, on: 'measured' | 'modelled' = 'measured'): 'host' | 'device' {
  if (row.device === null) return 'host';
  const device = on === 'modelled' ? row.device.modelled?.totalMs : row.device.medianMs;
  return device !== undefined && device < row.host.medianMs ? 'device' : 'host';
}
