// SPDX-License-Identifier: Apache-2.0
// ep-probe's outputs: the rows table (text) and the JSON document, whose schema ProbeReport is.
import { fasterRoute, type ProbeResult, type Spread } from '../../probe.js';
import type { Route } from '../../rules.js';

export interface ProbeReport extends ProbeResult {
  tool: 'ep-probe';
  schemaVersion: 1;
  /** "KxN", e.g. "64x48". */
  shape: string;
  /** How the device timings were obtained: 'emulated' (emu backend), 'hardware', or null (no device column). */
  deviceTimings: 'emulated' | 'hardware' | null;
  /** Each rows value with `route`: what --save-routes writes for it. */
  rows: (ProbeResult['rows'][number] & { route: Route })[];
  /** What `route` was chosen on: the measured device medians, or the modelled device times (with a cost model). */
  routesChosenOn: 'measured' | 'modelled';
  /**
   * With a cost model: the smallest probed rows value from which the modelled device is faster
   * than the measured host for that and every larger probed value; null if it never is (or no model).
   */
  modelledDeviceWinsFromRows: number | null;
  /** The routes file written (--save-routes), else null. */
  routesFile: string | null;
}

// The smallest rows value from which the modelled device wins for it and every larger one.
function modelledWinsFrom(rows: ProbeResult['rows']): number | null {
  let from: number | null = null;
  for (const r of [...rows].sort((a, b) => b.rows - a.rows)) {
    if (fasterRoute(r, 'modelled') !== 'device') break;
    from = r.rows;
  }
  return from;
}

export function toReport(
  result: ProbeResult,
  routesFile: string | null,
  on: 'measured' | 'modelled' = 'measured',
): ProbeReport {
  const hasDevice = result.rows.some((r) => r.device !== null);
  return {
    tool: 'ep-probe',
    schemaVersion: 1,
    shape: `${result.K}x${result.N}`,
    ...result,
    deviceTimings: hasDevice ? (result.device.emulated ? 'emulated' : 'hardware') : null,
    rows: result.rows.map((r) => ({ ...r, route: fasterRoute(r, on) })),
    routesChosenOn: on,
    modelledDeviceWinsFromRows: result.device.costModel !== null ? modelledWinsFrom(result.rows) : null,
    routesFile,
  };
}

function ms(v: number): string {
  return v >= 100 ? v.toFixed(1) : v >= 10 ? v.toFixed(2) : v >= 0.1 ? v.toFixed(3) : v.toFixed(4);
}

function spread(s: Spread): string {
  return `${ms(s.medianMs)} (${ms(s.minMs)}-${ms(s.maxMs)})`;
}

function bytes(n: number): string {
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

export function formatProbe(report: ProbeReport): string {
  const d = report.device;
  const emulated = report.deviceTimings === 'emulated';
  const out: string[] = [];
  out.push(
    `ep-probe ${report.shape}: host gemm_q8 (${report.hostKernel}, ${report.hostThreads} thread) vs device ${d.name ?? d.selected}` +
      (emulated ? ' -- device timings are EMULATED (emu backend on this CPU), not NPU timings' : ''),
  );
  if (d.reason) out.push(`device: ${d.selected} (${d.reason})`);
  if (d.error) out.push(`device unavailable: ${d.error}; host column only`);
  if (d.designsLoaded > 0)
    out.push(
      `designs: ${d.designsLoaded} loaded, ${d.designsBuilt} built, in ${d.designsDir}; weights ${bytes(d.weightBytes)} uploaded once (setup ${ms(d.setupMs)} ms)`,
    );
  out.push(`per call, ms: median (min-max) over ${report.repeat} calls${emulated ? '; device columns emulated' : ''}`);
  out.push(
    "both routes run the EP's own per-call code: host = prepare activation + gemm_q8 + epilogue; " +
      'device = prepare activation + lock + int8 narrowing + A upload+sync + launches+wait + C sync + zero-point fold + epilogue',
  );
  out.push('');
  const withDevice = report.deviceTimings !== null;
  const model = d.costModel;
  const devLabel = emulated ? 'device ms (emulated)' : 'device ms';
  const modelHeader = model !== null ? [`device ms (modelled ${model})`, 'host/modelled'] : [];
  const header = withDevice
    ? [
        'rows',
        'host ms',
        devLabel,
        'host/device',
        ...modelHeader,
        'A upload+sync',
        'launches+wait',
        'C sync',
        'epilogue',
        'launches',
        'exact',
        'faster',
      ]
    : ['rows', 'host ms'];
  const rows = report.rows.map((r) => {
    if (!withDevice) return [String(r.rows), spread(r.host)];
    if (r.device === null)
      return [
        String(r.rows),
        spread(r.host),
        '-',
        '-',
        ...modelHeader.map(() => '-'),
        '-',
        '-',
        '-',
        '-',
        '-',
        '-',
        'host',
      ];
    const b = r.device.breakdown;
    const m = r.device.modelled;
    const modelCells = model !== null ? [m ? ms(m.totalMs) : '-', `${(r.modelledRatio ?? 0).toFixed(2)}x`] : [];
    return [
      String(r.rows),
      spread(r.host),
      spread(r.device),
      `${(r.ratio ?? 0).toFixed(2)}x`,
      ...modelCells,
      ms(b.upload.medianMs),
      ms(b.launchWait.medianMs),
      ms(b.cSync.medianMs),
      ms(b.epilogue.medianMs),
      String(r.device.launches),
      String(r.exact),
      r.route,
    ];
  });
  out.push(...table(header, rows));
  if (withDevice) {
    out.push('');
    out.push(
      'host/device > 1: the device path is faster per call. exact: device and host int32 accumulators identical on every call.',
    );
    if (emulated)
      out.push(
        'Emulated timings measure the emulator, not an NPU: use them to test the mechanism, not to choose routes for hardware.',
      );
    if (model !== null) {
      const from = report.modelledDeviceWinsFromRows;
      out.push(
        `modelled ${model}: device time on that NPU from a cost model (launch, syncs, array roofline; docs/cost-model.md), not measured; ` +
          `host times are measured on this CPU. ${from === null ? 'The modelled device wins at none of these rows.' : `The modelled device wins from ${from} rows.`}`,
      );
      out.push(`faster: chosen on the ${report.routesChosenOn} device time.`);
    }
  }
  if (report.routesFile) out.push(`routes for ${report.shape} written to ${report.routesFile}`);
  return out.join('\n');
}
