// SPDX-License-Identifier: Apache-2.0
// The per-shape probe (native code in probes/, run off the JS thread): host gemm_q8 against the
// whole device path per call, for one GEMM shape and a list of rows values.
import path from 'node:path';

import { type OnebitCounters, toCounters } from './counters.js';
import { OnebitOptionError, fromNativeError } from './errors.js';
import { loadAddon, nativeConstants } from './native.js';
import { type OnebitDevice, costModelsText, isCostFile, isCostModel, isDevice, quotedList } from './rules.js';

/** Median and spread of per-call times, in milliseconds. */
export interface Spread {
  medianMs: number;
  minMs: number;
  maxMs: number;
}

export interface ProbeOptions {
  /** Depth of the GEMM (columns of the activation). */
  K: number;
  /** Output columns. */
  N: number;
  /** Rows values (M) to time; default [1, 4, 32, 36]. */
  rows?: number[];
  /** Timed calls per route and rows value, after one untimed warm-up call; default 20. */
  repeat?: number;
  /** 'emu' (default), 'auto' (a real NPU if a backend finds one; none in this build) or 'none' (host only). */
  device?: OnebitDevice;
  /** Design cache directory; default onebit-ep/designs under the user's cache directory. */
  designsDir?: string;
  /** Device lock file; default the runtime directory's onebit-npu.lock. */
  lockPath?: string;
  /** Operands are a pure function of (K, N, seed); default 1. */
  seed?: number;
  /**
   * 'xdna1', 'xdna2' or a cost file (*.json): each device rows value also gets its MODELLED time
   * on that XDNA generation (docs/cost-model.md); blocks are planned as that hardware would.
   */
  costModel?: string;
}

/** A device call's time on the cost model's hardware: modelled, not measured. */
export interface ModelledTiming {
  totalMs: number;
  /** A to the device and C back: per sync and per byte. */
  syncMs: number;
  /** Launch overhead of every launch. */
  launchMs: number;
  /** The array: compute or DRAM traffic, the larger per launch. */
  arrayMs: number;
}

export interface DeviceRowsTiming extends Spread {
  /** Per-call parts of the device route (medians and spreads of each part on its own). */
  breakdown: { upload: Spread; launchWait: Spread; cSync: Spread; epilogue: Spread };
  /** Launches per call (36 rows = one m32 and one m4 launch). */
  launches: number;
  /** Rows the last launch computed past `rows`. */
  paddedRows: number;
  /** Bytes synced per call: A to the device, C back. */
  aBytes: number;
  cBytes: number;
  /** C synced as the whole buffer (NPU_NO_C_NARROW / NPU_DBG) rather than rows × N × 4 bytes. */
  cWhole: boolean;
  /** The same calls' modelled time with a cost model, else null. */
  modelled: ModelledTiming | null;
}

export interface ProbeRowsResult {
  rows: number;
  /** The host route per call: prepare activation + gemm_q8 (one thread) + epilogue. */
  host: Spread;
  /** The whole device route per call, epilogue included; null without a device. */
  device: DeviceRowsTiming | null;
  /** host median / device median; > 1 means the device is faster. */
  ratio: number | null;
  /** host median / modelled device time, with a cost model; > 1: the modelled device is faster. */
  modelledRatio: number | null;
  /** Device and host accumulators (and outputs) identical on every call; null without a device. */
  exact: boolean | null;
}

export interface ProbeResult {
  K: number;
  N: number;
  /** Timed calls per route and rows value (after one untimed warm-up call). */
  repeat: number;
  /** Operands are a pure function of (K, N, seed). */
  seed: number;
  /** Host threads of the host route (1). */
  hostThreads: number;
  /** The host gemm_q8 kernel: 'avx512vnni', 'avxvnni', 'avx2' or 'portable'. */
  hostKernel: string;
  device: {
    /** The device option asked for (an OnebitDevice). */
    requested: string;
    /** What the request resolved to ('emu' or 'none'); ONEBIT_DEVICE overrides the request. */
    selected: string;
    /** Why that device: "option device=emu", "ONEBIT_DEVICE=none", ... */
    reason: string | null;
    /** The backend opened, else null. */
    name: string | null;
    /** The device timings are those of an emulator. */
    emulated: boolean;
    /** Why the device column is missing (busy, bad design, device error), else null. */
    error: string | null;
    designsDir: string | null;
    /** Designs this probe's setup built and loaded. */
    designsBuilt: number;
    designsLoaded: number;
    /** Packed weight bytes uploaded once. */
    weightBytes: number;
    /** Setup time: designs and the weight upload. */
    setupMs: number;
    /** The modelled generation (the cost model's name), or null without one. */
    costModel: string | null;
  };
  rows: ProbeRowsResult[];
  /**
   * The EP's counters of the probe's device calls (warm-ups included): the same calls run by a
   * session with minDeviceRows 0 count the same. Every device call goes through the code the EP runs.
   */
  deviceCounters: OnebitCounters;
}

function positiveInt(name: string, value: unknown, max: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max)
    throw new OnebitOptionError(`probe option ${name}=${JSON.stringify(value)} is invalid: use an integer in 1..${max}`);
  return value as number;
}

/** What the addon returns; probe() types its counters. */
export type RawProbeResult = Omit<ProbeResult, 'deviceCounters'> & { deviceCounters: Record<string, number> };

/** Checks probe options in TypeScript first, so mistakes say which option and what is valid. */
export function validateProbeOptions(options: ProbeOptions): ProbeOptions {
  const { probeLimits: limits, deviceOptions } = nativeConstants();
  const checked: ProbeOptions = { K: positiveInt('K', options.K, limits.maxK), N: positiveInt('N', options.N, limits.maxN) };
  if (options.rows !== undefined) {
    if (!Array.isArray(options.rows) || options.rows.length === 0)
      throw new OnebitOptionError('probe option rows must be a non-empty array of integers, e.g. [1, 4, 32, 36]');
    checked.rows = options.rows.map((r) => positiveInt('rows', r, limits.maxRows));
  }
  if (options.repeat !== undefined) checked.repeat = positiveInt('repeat', options.repeat, limits.maxRepeat);
  if (options.seed !== undefined) checked.seed = positiveInt('seed', options.seed, 2 ** 32 - 1);
  if (options.device !== undefined) {
    if (!isDevice(options.device))
      throw new OnebitOptionError(`probe option device=${JSON.stringify(options.device)} is invalid: use ${quotedList(deviceOptions)}`);
    checked.device = options.device;
  }
  if (options.costModel !== undefined) {
    const model = options.costModel;
    if (!isCostModel(model)) throw new OnebitOptionError(`probe option costModel=${JSON.stringify(model)} is invalid: use ${costModelsText(true)}`);
    checked.costModel = isCostFile(model) ? path.resolve(model) : model;
  }
  for (const key of ['designsDir', 'lockPath'] as const) {
    const value = options[key];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '') throw new OnebitOptionError(`probe option ${key} must be a non-empty path`);
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
    const typed = fromNativeError(error);
    if ((error as { code?: string }).code === 'ONEBIT_OPTION') throw new OnebitOptionError((error as Error).message);
    throw typed;
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
