// SPDX-License-Identifier: Apache-2.0
// Loads the native addon (build/Release or prebuilds/<platform>-<arch>, via node-gyp-build) and,
// through it, onnxruntime-node's own ORT library with our EP registered in it.
import { existsSync } from 'node:fs';
import path from 'node:path';

import { OnebitLibraryError, fromNativeError } from './errors.js';
import type { ProbeOptions, RawProbeResult } from './probe.js';
import type { RouteEntry } from './routes.js';
import type { Route } from './rules.js';
import type { NativeSessionConfig } from './session_options.js';

export interface NativeValueMetadata {
  name: string;
  isTensor: boolean;
  type?: number;
  shape?: (number | string)[];
}

export interface NativeTensor {
  type: number;
  dims: number[];
  data: ArrayBufferView | string[];
}

export interface NativeOutput {
  isTensor: boolean;
  type?: number;
  dims?: number[];
  data?: ArrayBuffer | string[];
}

export interface NativeRunOptions {
  logSeverityLevel?: number;
  tag?: string;
  configEntries?: [string, string][];
}

export interface NativeSession {
  readonly inputMetadata: NativeValueMetadata[];
  readonly outputMetadata: NativeValueMetadata[];
  /**
   * Inputs and outputs by their index in inputMetadata / outputMetadata; the outputs come back in the order asked for,
   * null where `preallocated` gave a tensor to write that output into.
   */
  run(
    inputIndices: number[],
    inputs: NativeTensor[],
    outputIndices: number[],
    preallocated: (NativeTensor | null)[],
    options: NativeRunOptions,
  ): Promise<(NativeOutput | null)[]>;
  dispose(): void;
  counters(): Record<string, number>;
  endProfiling(): string;
}

export interface RuntimeInfo {
  ortVersion: string;
  ortApiVersion: number;
  epApiVersion: number;
  epLibraryPath: string;
}

/** What the native code defines once and TypeScript takes from it (bindings/constants.cpp). */
export interface NativeConstants {
  epName: string;
  version: string;
  /** The EP's provider option keys (snake_case). */
  optionKeys: string[];
  /** Values of the device option. */
  deviceOptions: string[];
  /** Values of the device lock option. */
  lockPolicies: string[];
  /** The built-in cost-model generations (xdna1, xdna2); any other cost model is a file ending in costFileSuffix. */
  costModels: string[];
  costFileSuffix: string;
  /** The trace-path rule in words ("absolute, starting with ./ or ../, or ending in .json"). */
  tracePathRule: string;
  /** Values of the matmul_nbits_accuracy option: level4 (default) or any. */
  nbitsAccuracyValues: string[];
  /** The EP's counters in its order: `id` as OnebitEp_GetCounters names it, `label` as the trace line does. */
  counters: { id: string; label: string }[];
  deviceMinRows: number;
  /** Largest device_timeout_ms (one day). */
  maxDeviceTimeoutMs: number;
  /** The host kernel this process selected (avx512vnni, avxvnni, avx2 or portable; ONEBIT_KERNEL forces one). */
  hostKernel: string;
  /** Largest K whose int32 accumulators cannot overflow. */
  maxK: number;
  probeLimits: { maxK: number; maxN: number; maxRows: number; maxRepeat: number };
}

interface NativeAddon {
  load(ortLibraryPath: string, epLibraryPath: string): RuntimeInfo;
  createSession(model: string | Uint8Array, config: NativeSessionConfig): Promise<NativeSession>;
  processCounters(): Record<string, number>;
  /** A zeroed buffer of `dims` elements of ONNX type `type` in memory the addon owns (runs read and write it in place). */
  allocateTensor(type: number, dims: number[]): ArrayBuffer;
  probe(options: ProbeOptions): Promise<RawProbeResult>;
  readonly constants: NativeConstants;
  /** The EP's own routes-file reader: the entries, or throws (code ONEBIT_OPTION) naming the line. */
  parseRoutes(text: string, file: string): RouteEntry[];
  /** The EP's routes lookup over `entries` for a call of M rows on (K, N); null = the table has no say. */
  routeFor(entries: readonly RouteEntry[], K: number, N: number, M: number): Route | null;
  /** The EP's trace-path rule: a trace option's string names a file. */
  isTracePath(value: unknown): boolean;
  /** The EP's cost-model rule: a built-in generation's name or a cost file. */
  isCostModel(value: unknown): boolean;
}

const packageRoot = path.join(__dirname, '..');

let addonFile: string | undefined;
let addon: NativeAddon | undefined;
let runtime: RuntimeInfo | undefined;

function addonPath(): string {
  if (addonFile) return addonFile;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const nodeGypBuild = require('node-gyp-build') as { resolve(dir: string): string };
    addonFile = nodeGypBuild.resolve(packageRoot);
    return addonFile;
  } catch (error) {
    throw new OnebitLibraryError(
      'ONEBIT_ADDON',
      `the onebit-ep native addon is not built for ${process.platform}-${process.arch}: ${(error as Error).message}. ` +
        'Build it from source with `npm rebuild onebit-ep` (needs cmake and a C++20 compiler).',
    );
  }
}

/** libonebit_ep.so: ONEBIT_EP_LIB if set, else the copy next to the addon. */
export function epLibraryPath(): string {
  const fromEnv = process.env.ONEBIT_EP_LIB;
  return path.resolve(fromEnv && fromEnv.length > 0 ? fromEnv : path.join(path.dirname(addonPath()), 'libonebit_ep.so'));
}

/** The ORT library file of the onnxruntime-node this package resolves (the one the app uses). */
export function ortLibraryPath(): string {
  const ortNodeRoot = path.dirname(require.resolve('onnxruntime-node/package.json'));
  const file = path.join(ortNodeRoot, 'bin', 'napi-v6', process.platform, process.arch, 'libonnxruntime.so.1');
  if (!existsSync(file))
    throw new OnebitLibraryError('ONEBIT_EP_LIBRARY', `onnxruntime-node has no ORT library at ${file}: reinstall onnxruntime-node`);
  return file;
}

/** The addon alone, without ORT or the EP library (the probes need neither). */
export function loadAddon(): NativeAddon {
  if (addon) return addon;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(addonPath()) as NativeAddon;
}

/** Names, option values and limits as the native code defines them. */
export function nativeConstants(): NativeConstants {
  return loadAddon().constants;
}

/** Loads the addon, ORT and our EP once per process; later calls return the same runtime. */
export function loadNative(): { addon: NativeAddon; runtime: RuntimeInfo } {
  if (addon && runtime) return { addon, runtime };
  const file = addonPath();
  const epLibrary = epLibraryPath();
  if (!existsSync(epLibrary))
    throw new OnebitLibraryError(
      'ONEBIT_EP_LIBRARY',
      `the onebit EP library is missing: ${epLibrary}. Reinstall onebit-ep, run \`npm rebuild onebit-ep\`, ` +
        'or set ONEBIT_EP_LIB to the absolute path of a built libonebit_ep.so',
    );
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require(file) as NativeAddon;
  try {
    runtime = loaded.load(ortLibraryPath(), epLibrary);
  } catch (error) {
    throw fromNativeError(error);
  }
  addon = loaded;
  return { addon, runtime };
}
