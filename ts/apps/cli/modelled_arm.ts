// SPDX-License-Identifier: Apache-2.0
// onebit-run --cost-model: the whole model's device arm with MODELLED device times, per phase,
// beside the host arm. Per length, three traced onebit sessions run the same feeds: the host arm
// (device none), and the emulated device with the route policy on (the EP's min_device_rows and
// routes as configured) and off (min_device_rows 0: every call on the device). Each timed run is
// read back from its session's trace (every run makes the same gemm_q8 calls, in order): its span
// from the first call's start to the last call's end, with each device call's device part (A
// upload, launches, C sync: emulated) replaced by its modelled time,
//   modelled run ms = span - emulated device parts + modelled device parts   (paired within the run)
// so host-routed calls, the host side of device calls (activation, epilogue) and the gaps between
// calls keep their measured times on this CPU. Medians over the timed runs; warm-ups left out.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { InferenceSession, Tensor } from 'onnxruntime-node';

import { OnebitError } from '../../errors.js';
import { readTrace, type TraceCall } from '../../trace.js';

export interface ModelledArm {
  /** Device calls per run. */
  deviceCallsPerRun: number;
  /** Median over the timed runs: the run's span with its device calls' modelled times. */
  modelledMs: number;
  /** Median over the timed runs: the run's span as measured (device calls emulated). */
  measuredMs: number;
}

export interface ModelledPhase {
  len: number;
  /** decode: one row per call; prefill: more. */
  phase: 'decode' | 'prefill';
  /** The host arm (device none): median span of its runs, measured. */
  hostMs: number;
  policyOn: ModelledArm;
  policyOff: ModelledArm;
}

export interface ModelledArms {
  /** The generation the device times are modelled on. */
  costModel: string;
  phases: ModelledPhase[];
}

/** What modelledArms needs from onebit-run: a session factory and its runs. */
export interface ArmRunner {
  create(options: Record<string, unknown>): Promise<InferenceSession>;
  feeds(session: InferenceSession, len: number): Record<string, Tensor>;
  /** Runs the feeds `warmup` times, then `repeat` times (both traced). */
  run(session: InferenceSession, feeds: Record<string, Tensor>, label: string): Promise<unknown>;
  warmup: number;
  repeat: number;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// The timed runs of a trace's calls, split in order into runs of equal call counts.
function timedRuns(calls: TraceCall[], runner: ArmRunner, label: string): TraceCall[][] {
  const runs = runner.warmup + runner.repeat;
  if (calls.length === 0 || calls.length % runs !== 0)
    throw new OnebitError(
      'ONEBIT_INTERNAL',
      `${label}: ${calls.length} traced gemm_q8 calls do not split into ${runs} equal runs`,
    );
  const per = calls.length / runs;
  const sorted = [...calls].sort((a, b) => a.startUs - b.startUs);
  return Array.from({ length: runner.repeat }, (_, i) =>
    sorted.slice((runner.warmup + i) * per, (runner.warmup + i + 1) * per),
  );
}

async function tracedArm(
  runner: ArmRunner,
  len: number,
  options: Record<string, unknown>,
  label: string,
  dir: string,
): Promise<ModelledArm> {
  const trace = path.join(dir, `${label.replace(/\W+/g, '-')}.json`);
  const session = await runner.create({ ...options, trace });
  await runner.run(session, runner.feeds(session, len), label);
  await session.release(); // writes the trace
  const runs = timedRuns(readTrace(trace).calls, runner, label);
  const measured: number[] = [];
  const modelled: number[] = [];
  for (const run of runs) {
    const span = Math.max(...run.map((c) => c.startUs + c.durUs)) - run[0].startUs;
    const device = run.filter((c) => c.route === 'device');
    const swap = device.reduce(
      (s, c) => s + (c.modelledUs !== null && c.deviceUs !== null ? c.modelledUs - c.deviceUs : 0),
      0,
    );
    measured.push(span / 1000);
    modelled.push((span + swap) / 1000);
  }
  return {
    deviceCallsPerRun: runs[0].filter((c) => c.route === 'device').length,
    modelledMs: median(modelled),
    measuredMs: median(measured),
  };
}

export async function modelledArms(runner: ArmRunner, lens: number[], costModel: string): Promise<ModelledArms> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-modelled-'));
  try {
    const phases: ModelledPhase[] = [];
    for (const len of lens) {
      const device = { device: 'emu', costModel };
      phases.push({
        len,
        phase: len <= 1 ? 'decode' : 'prefill',
        hostMs: (await tracedArm(runner, len, { device: 'none' }, `host arm len ${len}`, dir)).measuredMs,
        policyOn: await tracedArm(runner, len, device, `policy on len ${len}`, dir),
        policyOff: await tracedArm(runner, len, { ...device, minDeviceRows: 0 }, `policy off len ${len}`, dir),
      });
    }
    return { costModel, phases };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (t: number) => (t >= 100 ? t.toFixed(0) : t >= 10 ? t.toFixed(1) : t.toFixed(2));

export function formatModelledArms(m: ModelledArms): string[] {
  const lines = [
    '',
    `modelled device arm on ${m.costModel}, gemm_q8 span per run (first call's start to last call's end, median): MODELLED device calls (cost model, docs/cost-model.md), everything else measured on this CPU`,
    `${'len'.padStart(5)}  ${'phase'.padEnd(8)}${'host arm ms'.padStart(12)}${'policy on: modelled ms'.padStart(24)}${'device calls'.padStart(14)}${'policy off: modelled ms'.padStart(25)}${'device calls'.padStart(14)}`,
  ];
  for (const p of m.phases)
    lines.push(
      `${String(p.len).padStart(5)}  ${p.phase.padEnd(8)}${ms(p.hostMs).padStart(12)}${ms(p.policyOn.modelledMs).padStart(24)}${String(p.policyOn.deviceCallsPerRun).padStart(14)}` +
        `${ms(p.policyOff.modelledMs).padStart(25)}${String(p.policyOff.deviceCallsPerRun).padStart(14)}`,
    );
  lines.push(
    "policy on: the EP's min_device_rows (default 8) decides; off: every call on the device. host arm: device none.",
  );
  return lines;
}
