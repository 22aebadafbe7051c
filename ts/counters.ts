// SPDX-License-Identifier: Apache-2.0
// The EP's counters, typed. The EP names them in snake_case (engine/counters.cpp, handed over by
// the addon); we camel-case.
import { camelCase, counterNames } from './rules.js';

export interface OnebitCounters {
  /** Fused-group executions: every run adds one per group the EP claimed. */
  groupRuns: number;
  /** Fused groups the EP compiled for the session (quantized MatMul groups it claimed). */
  groups: number;
  /** Calls kept on the host because they had fewer rows than minDeviceRows. */
  hostRowsPolicy: number;
  /** Calls kept on the host by the routes table (option routes). */
  hostRoutes: number;
  /** Calls meant for the device that ran on the host after a device error (results still exact). */
  deviceFallbacks: number;
  /** Calls that found the device held by another process and ran on the host. */
  deviceBusy: number;
  /** Calls kept on the host while the device's circuit breaker was open (after repeated device failures). */
  deviceBreakerSkips: number;
  /** Calls that ran on the device. */
  deviceCalls: number;
  /** Device launches (a call of 36 rows is one m32 and one m4 launch). */
  deviceLaunches: number;
  /** Activation bytes synced to the device. */
  aBytesSynced: number;
  /** Accumulator bytes synced back from the device. */
  cBytesSynced: number;
  /** C syncs of only the rows read (rows × N × 4 bytes). */
  cSyncsNarrowed: number;
  /** C syncs of the whole buffer (ONEBIT_NPU_NO_C_NARROW=1 or ONEBIT_NPU_DBG=1). */
  cSyncsWhole: number;
  /** Designs generated and written to the design cache. */
  designsBuilt: number;
  /** Designs loaded onto the device. */
  designsLoaded: number;
  /** Shapes whose designs could not be had; their calls run on the host. */
  designsFailed: number;
  /** Weight bytes this session packed and uploaded to the device; 0 for weights another session of
   *  the process had uploaded already (shared, like the host's packed weights). */
  deviceWeightBytes: number;
  /** Calls kept on the host because the device has no design for their group kind: MatMulNBits
   *  (block-scaled weights), a B that is an activation, batched weights. 0 without a device. */
  hostOnlyKind: number;
  /** Weights mapped from the packed-weights cache folder (option packedCacheDir) instead of packed. */
  packedCacheHits: number;
  /** Weights packed and written to the packed-weights cache folder (then mapped from it). */
  packedCacheWrites: number;
  /** Nanoseconds in host calls (gemm_q8 + epilogue). */
  hostNs: number;
  /** Nanoseconds in device calls (upload, launches, syncs, epilogue). */
  deviceNs: number;
  /** GroupQueryAttention executions on the EP (its decoder attention: float32, over the KV cache). */
  attentionRuns: number;
  /** SwiGLU gates (Sigmoid, Mul, Mul after an MLP's gate and up projections) the EP computed with
   *  those projections, in the fused node that runs them. */
  gateRuns: number;
  /** SkipSimplifiedLayerNormalizations (an LLM's norms before its projections) the EP computed in the
   *  fused node of the projections that read them. */
  normRuns: number;
  /** @deprecated Renamed `groupRuns` (the same value); this alias warns once and goes in the next release. */
  readonly qdqRuns: number;
  /** Counters a newer EP library reports that this version does not name yet. */
  [counter: string]: number;
}

// The counter's name before it was groupRuns: a trace file of an older EP may still carry it.
const LEGACY_GROUP_RUNS = 'qdq_runs';
let warnedQdqRuns = false;

/** The snake_case counter names of the EP (`group_runs`, ...) as typed camelCase counters. */
export function toCounters(raw: Record<string, number>): OnebitCounters {
  // Every counter this version names, in the EP's order: 0 until the EP reports it (an EP library
  // older than the addon, or a trace file, may report fewer).
  const counters: Record<string, number> = {};
  for (const name of counterNames()) counters[name] = 0;
  for (const [name, value] of Object.entries(raw))
    counters[camelCase(name === LEGACY_GROUP_RUNS ? 'group_runs' : name)] = value;
  Object.defineProperty(counters, 'qdqRuns', {
    enumerable: false,
    get() {
      if (!warnedQdqRuns) {
        warnedQdqRuns = true;
        process.emitWarning('onebit: counters.qdqRuns is deprecated: use counters.groupRuns', 'DeprecationWarning');
      }
      return counters.groupRuns;
    },
  });
  return counters as OnebitCounters;
}
