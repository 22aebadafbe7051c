// SPDX-License-Identifier: Apache-2.0
// What crosses the addon boundary (bindings/), as TypeScript types: the addon's functions, the
// objects they take and return, and the value sets the native code defines. This module imports
// nothing, so every other module can use these types without importing one another in a cycle.

/** Values of the EP's device option (npu::kDeviceOptions; rules.ts checks against the addon's list). */
export type OnebitDevice = 'auto' | 'emu' | 'none';
/** Values of the EP's device lock option (npu::kLockPolicyNames). */
export type OnebitDeviceLock = 'call' | 'session';
export type Route = 'host' | 'device';

export interface NativeValueMetadata {
  name: string;
  isTensor: boolean;
  type?: number;
  shape?: (number | string)[];
}

export interface NativeTensor {
  type: number;
  dims: readonly number[];
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
   * A run plan (run_plan.ts): inputs and outputs by their index in inputMetadata / outputMetadata; the outputs come
   * back in the plan's order, null where the plan gave a tensor to write that output into.
   */
  run(
    plan: Float64Array,
    data: (ArrayBufferView | string[] | null)[],
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
  /** The EP's counter names in its order, snake_case as the trace line and OnebitEp_GetCounters give them. */
  counters: string[];
  deviceMinRows: number;
  /** Largest device_timeout_ms (one day). */
  maxDeviceTimeoutMs: number;
  /** Largest packed_cache_max_mb. */
  maxPackedCacheMb: number;
  /** The host kernel this process selected (one of HOST_KERNELS; ONEBIT_KERNEL forces one). */
  hostKernel: string;
  /** Largest K whose int32 accumulators cannot overflow. */
  maxK: number;
  probeLimits: { maxK: number; maxN: number; maxRows: number; maxRepeat: number };
}

export interface NativeAddon {
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
  /** Why the EP's cost-model reader refuses `value` (an unknown generation, a bad cost file), or null. */
  costModelProblem(value: string): string | null;
}

export interface NativeSessionConfig {
  intraOpNumThreads?: number;
  interOpNumThreads?: number;
  graphOptimizationLevel?: number;
  executionMode?: number;
  logSeverityLevel?: number;
  logVerbosityLevel?: number;
  logId?: string;
  optimizedModelFilePath?: string;
  profileFilePrefix?: string;
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
  configEntries: [string, string][];
  freeDimensionOverrides: [string, string][];
  epOptions: [string, string][];
}

export interface RouteEntry {
  K: number;
  N: number;
  rows: number;
  route: Route;
}

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
  /** C synced as the whole buffer (ONEBIT_NPU_NO_C_NARROW / ONEBIT_NPU_DBG) rather than rows × N × 4 bytes. */
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

/** What the addon's probe resolves with; probe() types its counters (ProbeResult in probe.ts). */
export interface RawProbeResult {
  K: number;
  N: number;
  /** Timed calls per route and rows value (after one untimed warm-up call). */
  repeat: number;
  /** Operands are a pure function of (K, N, seed). */
  seed: number;
  /** Host threads of the host route (1). */
  hostThreads: number;
  /** The host gemm_q8 kernel: one of HOST_KERNELS. */
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
  deviceCounters: Record<string, number>;
}
