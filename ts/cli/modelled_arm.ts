// SPDX-License-Identifier: Apache-2.0
// onebit-run --cost-model: the whole model's device arm with MODELLED device times, per phase,
// beside the host arm. Per length, three onebit sessions run the same feeds: the host arm
// (device none), and the emulated device with the route policy on (the EP's min_device_rows and
// routes as configured) and off (min_device_rows 0: every call on the device). Each device
// session writes a trace; its device calls' emulated time is taken out of the measured run
// time and their modelled time put in:
//   modelled arm ms = measured run ms - emulated device ms per run + modelled device ms per run
// so host-routed calls and every other operator keep their measured times on this CPU.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { InferenceSession, Tensor } from 'onnxruntime-node';

import { readTrace } from '../trace.js';
import type { Timing } from './statistics.js';

export interface ModelledArm {
  /** Device calls per run and the modelled run time (ms, median run with the device part replaced). */
  deviceCallsPerRun: number;
  modelledMs: number;
  /** The measured median run with the emulated device, and its device calls' emulated and modelled ms per run. */
  measuredMs: number;
  emulatedDeviceMs: number;
  modelledDeviceMs: number;
}

export interface ModelledPhase {
  len: number;
  /** decode: one row per call; prefill: more. */
  phase: 'decode' | 'prefill';
  /** The host arm (device none), measured median run. */
  hostMs: number;
  policyOn: ModelledArm;
  policyOff: ModelledArm;
}

export interface ModelledArms {
  /** The generation the device times are modelled on. */
  costModel: string;
  phases: ModelledPhase[];
}

/** What modelledArms needs from onebit-run: a session factory and its timed loop. */
export interface ArmRunner {
  create(options: Record<string, unknown>): Promise<InferenceSession>;
  feeds(session: InferenceSession, len: number): Record<string, Tensor>;
  time(session: InferenceSession, feeds: Record<string, Tensor>, label: string): Promise<Timing>;
  /** Runs per length and session, warm-ups included (all of them are traced). */
  runsPerSession: number;
}

async function deviceArm(runner: ArmRunner, len: number, costModel: string, policy: Record<string, unknown>, label: string, dir: string): Promise<ModelledArm> {
  const trace = path.join(dir, `${label.replace(/\W+/g, '-')}.json`);
  const session = await runner.create({ device: 'emu', costModel, trace, ...policy });
  const timing = await runner.time(session, runner.feeds(session, len), label);
  await session.release(); // writes the trace
  const calls = readTrace(trace).calls.filter((c) => c.route === 'device');
  const per = (sum: number) => sum / runner.runsPerSession;
  const emulatedDeviceMs = per(calls.reduce((s, c) => s + c.durUs, 0) / 1000);
  const modelledDeviceMs = per(calls.reduce((s, c) => s + (c.modelledUs ?? 0), 0) / 1000);
  return {
    deviceCallsPerRun: per(calls.length),
    modelledMs: Math.max(0, timing.medianMs - emulatedDeviceMs) + modelledDeviceMs,
    measuredMs: timing.medianMs,
    emulatedDeviceMs,
    modelledDeviceMs,
  };
}

export async function modelledArms(runner: ArmRunner, lens: number[], costModel: string): Promise<ModelledArms> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onebit-modelled-'));
  try {
    const phases: ModelledPhase[] = [];
    for (const len of lens) {
      const host = await runner.create({ device: 'none' });
      const hostTiming = await runner.time(host, runner.feeds(host, len), `host arm len ${len}`);
      await host.release();
      phases.push({
        len,
        phase: len <= 1 ? 'decode' : 'prefill',
        hostMs: hostTiming.medianMs,
        policyOn: await deviceArm(runner, len, costModel, {}, `policy on len ${len}`, dir),
        policyOff: await deviceArm(runner, len, costModel, { minDeviceRows: 0 }, `policy off len ${len}`, dir),
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
    `modelled device arm on ${m.costModel}, per run (median): MODELLED device calls (cost model, docs/cost-model.md), everything else measured on this CPU`,
    `${'len'.padStart(5)}  ${'phase'.padEnd(8)}${'host arm ms'.padStart(12)}${'policy on: modelled ms'.padStart(24)}${'device calls'.padStart(14)}${'policy off: modelled ms'.padStart(25)}${'device calls'.padStart(14)}`,
  ];
  for (const p of m.phases)
    lines.push(
      `${String(p.len).padStart(5)}  ${p.phase.padEnd(8)}${ms(p.hostMs).padStart(12)}${ms(p.policyOn.modelledMs).padStart(24)}${String(p.policyOn.deviceCallsPerRun).padStart(14)}` +
        `${ms(p.policyOff.modelledMs).padStart(25)}${String(p.policyOff.deviceCallsPerRun).padStart(14)}`,
    );
  lines.push('policy on: the EP\'s min_device_rows (default 8) decides; off: every call on the device. host arm: device none.');
  return lines;
}
