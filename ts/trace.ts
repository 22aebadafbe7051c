// SPDX-License-Identifier: Apache-2.0
// Trace files the EP writes (option trace=<file> or ONEBIT_EP_TRACE=<file>): Chrome trace-event
// JSON with one complete ("X") event per gemm_q8 call and the session's counters in
// otherData.onebit. Read and summarised per shape and route.
import { existsSync, readFileSync, statSync } from 'node:fs';

import { toCounters, type OnebitCounters } from './counters.js';
import { OnebitError } from './errors.js';

export class TraceFileError extends OnebitError {
  readonly file: string;
  constructor(file: string, message: string) {
    super('ONEBIT_OPTION', message);
    this.file = file;
  }
}

export interface TraceCall {
  node: string;
  K: number;
  N: number;
  rows: number;
  route: 'host' | 'device';
  reason: string;
  startUs: number;
  durUs: number;
  launches: number;
  aBytes: number;
  cBytes: number;
  cWhole: boolean;
  /** A device call: its device part as measured (A upload + launches + C sync), in µs; else null. */
  deviceUs: number | null;
  /** A device call under a cost model: that part's MODELLED time on that hardware, in µs; else null. */
  modelledUs: number | null;
}

export interface TraceGroupSummary {
  shape: string; // "KxN"
  K: number;
  N: number;
  route: 'host' | 'device';
  calls: number;
  rowsTotal: number;
  totalMs: number;
  medianMs: number;
  launches: number;
  aBytes: number;
  cBytes: number;
  /** Calls per routing reason, e.g. { "rows<min_device_rows": 3, device: 12 }. */
  reasons: Record<string, number>;
  /** Device calls under a cost model: their MODELLED time on that hardware, total and median per call; else null. */
  modelledTotalMs: number | null;
  modelledMedianMs: number | null;
}

export interface TraceSummary {
  file: string;
  events: number;
  groups: TraceGroupSummary[];
  counters: OnebitCounters | null;
  droppedEvents: number;
  /** The generation the modelled times are for (the session's cost_model option), else null. */
  costModel: string | null;
  /** The host kernel that ran the host calls (one of HOST_KERNELS), else null. */
  hostKernel: string | null;
}

function fail(file: string, what: string): never {
  throw new TraceFileError(file, `${file} is not an onebit trace file: ${what}`);
}

function num(file: string, where: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    fail(file, `${where} must be a number >= 0, got ${JSON.stringify(value)}`);
  return value;
}

/** Reads a trace file's calls and counters; throws TraceFileError saying what is wrong with it. */
export function readTrace(file: string): {
  calls: TraceCall[];
  counters: OnebitCounters | null;
  droppedEvents: number;
  costModel: string | null;
  hostKernel: string | null;
} {
  if (!existsSync(file))
    throw new TraceFileError(
      file,
      `no such trace file: ${file} (write one with ONEBIT_EP_TRACE=<file> or the option trace: '<file>')`,
    );
  if (!statSync(file).isFile()) throw new TraceFileError(file, `${file} is not a file`);
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    fail(file, `invalid JSON (${(error as Error).message})`);
  }
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as { traceEvents?: unknown }).traceEvents))
    fail(file, 'expected an object with a "traceEvents" array');
  const events = (doc as { traceEvents: unknown[] }).traceEvents;
  const calls: TraceCall[] = [];
  events.forEach((event, i) => {
    const where = `traceEvents[${i}]`;
    if (typeof event !== 'object' || event === null) fail(file, `${where} is not an object`);
    const e = event as Record<string, unknown>;
    if (e.ph !== 'X' || typeof e.name !== 'string' || !e.name.startsWith('gemm_q8')) return; // other events: not ours
    const args = e.args as Record<string, unknown> | undefined;
    if (typeof args !== 'object' || args === null) fail(file, `${where} has no "args"`);
    const route = args.route;
    if (route !== 'host' && route !== 'device')
      fail(file, `${where}.args.route must be "host" or "device", got ${JSON.stringify(route)}`);
    calls.push({
      node: typeof args.node === 'string' ? args.node : '',
      K: num(file, `${where}.args.K`, args.K),
      N: num(file, `${where}.args.N`, args.N),
      rows: num(file, `${where}.args.rows`, args.rows),
      route,
      reason: typeof args.reason === 'string' ? args.reason : '',
      startUs: num(file, `${where}.ts`, e.ts),
      durUs: num(file, `${where}.dur`, e.dur),
      launches: args.launches === undefined ? 0 : num(file, `${where}.args.launches`, args.launches),
      aBytes: args.a_bytes === undefined ? 0 : num(file, `${where}.args.a_bytes`, args.a_bytes),
      cBytes: args.c_bytes === undefined ? 0 : num(file, `${where}.args.c_bytes`, args.c_bytes),
      cWhole: args.c_whole === true,
      deviceUs: args.device_us === undefined ? null : num(file, `${where}.args.device_us`, args.device_us),
      modelledUs: args.modelled_us === undefined ? null : num(file, `${where}.args.modelled_us`, args.modelled_us),
    });
  });
  const other = (doc as { otherData?: Record<string, unknown> }).otherData;
  let counters: OnebitCounters | null = null;
  if (other !== undefined && other.onebit !== undefined) {
    const raw = other.onebit;
    if (typeof raw !== 'object' || raw === null || Object.values(raw).some((v) => typeof v !== 'number'))
      fail(file, 'otherData.onebit must be an object of numeric counters');
    counters = toCounters(raw as Record<string, number>);
  }
  const dropped = other?.dropped_events;
  const model = other?.cost_model;
  if (model !== undefined && typeof model !== 'string')
    fail(file, `otherData.cost_model must be a string, got ${JSON.stringify(model)}`);
  const kernel = other?.host_kernel;
  if (kernel !== undefined && typeof kernel !== 'string')
    fail(file, `otherData.host_kernel must be a string, got ${JSON.stringify(kernel)}`);
  return {
    calls,
    counters,
    droppedEvents: typeof dropped === 'number' ? dropped : 0,
    costModel: model ?? null,
    hostKernel: kernel ?? null,
  };
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Per (shape, route): calls, rows, time (total and median per call), launches, bytes synced. */
export function summarizeTrace(file: string): TraceSummary {
  const { calls, counters, droppedEvents, costModel, hostKernel } = readTrace(file);
  const groups = new Map<string, { K: number; N: number; route: 'host' | 'device'; calls: TraceCall[] }>();
  for (const c of calls) {
    const key = `${c.K}x${c.N} ${c.route}`;
    const g = groups.get(key) ?? { K: c.K, N: c.N, route: c.route, calls: [] };
    g.calls.push(c);
    groups.set(key, g);
  }
  const summaries = [...groups.values()]
    .sort((a, b) => a.K - b.K || a.N - b.N || a.route.localeCompare(b.route))
    .map((g): TraceGroupSummary => {
      const reasons: Record<string, number> = {};
      for (const c of g.calls) reasons[c.reason] = (reasons[c.reason] ?? 0) + 1;
      const modelled = g.calls.flatMap((c) => (c.modelledUs === null ? [] : [c.modelledUs]));
      return {
        shape: `${g.K}x${g.N}`,
        K: g.K,
        N: g.N,
        route: g.route,
        calls: g.calls.length,
        rowsTotal: g.calls.reduce((s, c) => s + c.rows, 0),
        totalMs: g.calls.reduce((s, c) => s + c.durUs, 0) / 1000,
        medianMs: median(g.calls.map((c) => c.durUs)) / 1000,
        launches: g.calls.reduce((s, c) => s + c.launches, 0),
        aBytes: g.calls.reduce((s, c) => s + c.aBytes, 0),
        cBytes: g.calls.reduce((s, c) => s + c.cBytes, 0),
        reasons,
        modelledTotalMs: modelled.length ? modelled.reduce((s, us) => s + us, 0) / 1000 : null,
        modelledMedianMs: modelled.length ? median(modelled) / 1000 : null,
      };
    });
  return { file, events: calls.length, groups: summaries, counters, droppedEvents, costModel, hostKernel };
}
