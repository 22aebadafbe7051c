#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// ep-trace: a trace file the EP wrote (ONEBIT_EP_TRACE=<file>) summarised per shape and route.
import { OnebitError } from '../../errors.js';
import { summarizeTrace, type TraceSummary } from '../../trace.js';
import { readFlags } from './flags.js';
import { jsonText } from './json_output.js';

export const TRACE_USAGE = `usage: ep-trace <trace.json> [--json]

Summarises a trace file written by the onebit EP (ONEBIT_EP_TRACE=<file>, or the option
trace: '<file>') per GEMM shape and route: calls, rows, total and median time per call,
launches, bytes synced, routing reasons; then the session's counters. A session with the
option costModel also shows each device group's MODELLED time on that XDNA generation.

options:
  --json   print one JSON object instead of the table
  --help   print this text`;

function bytes(n: number): string {
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
}

function msOrDash(v: number | null): string {
  return v === null ? '-' : v.toFixed(3);
}

export function formatTrace(s: TraceSummary): string {
  const model = s.costModel;
  const modelHeader = model !== null ? [`modelled total ms (${model})`, 'modelled median ms'] : [];
  const header = [
    'shape',
    'route',
    'calls',
    'rows',
    'total ms',
    'median ms',
    ...modelHeader,
    'launches',
    'A synced',
    'C synced',
    'reasons',
  ];
  const rows = s.groups.map((g) => [
    g.shape,
    g.route,
    String(g.calls),
    String(g.rowsTotal),
    g.totalMs.toFixed(3),
    g.medianMs.toFixed(3),
    ...(model !== null ? [msOrDash(g.modelledTotalMs), msOrDash(g.modelledMedianMs)] : []),
    String(g.launches),
    bytes(g.aBytes),
    bytes(g.cBytes),
    Object.entries(g.reasons)
      .map(([r, n]) => `${r || '?'}=${n}`)
      .join(' '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const right = new Set(header.map((_, i) => i).filter((i) => i >= 2 && i < header.length - 1));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [
    `${s.file}: ${s.events} gemm_q8 calls${s.droppedEvents ? ` (${s.droppedEvents} more dropped: the EP keeps a bounded number of events)` : ''}` +
      (s.hostKernel ? `; host kernel ${s.hostKernel}` : ''),
    '',
  ];
  out.push(line(header), ...rows.map(line));
  if (model !== null)
    out.push(
      '',
      `modelled: the device part of device calls (A upload, launches, C sync) on ${model}, from the cost model (docs/cost-model.md), not measured; total/median ms are whole calls measured on this machine.`,
    );
  if (s.counters) {
    out.push('');
    out.push(
      `counters: ${Object.entries(s.counters)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  }
  return out.join('\n');
}

function main(argv: string[]): number {
  const {
    values,
    positionals: files,
    unknown,
  } = readFlags(argv, { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
  if (values.help !== undefined) {
    process.stdout.write(`${TRACE_USAGE}\n`);
    return 0;
  }
  if (unknown !== undefined || files.length !== 1) {
    process.stderr.write(
      `ep-trace: ${unknown !== undefined ? `unknown option ${unknown}` : 'give exactly one trace file'}\n${TRACE_USAGE}\n`,
    );
    return 2;
  }
  try {
    const summary = summarizeTrace(files[0]);
    process.stdout.write(values.json !== undefined ? `${jsonText(summary, 'summary')}\n` : `${formatTrace(summary)}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof OnebitError)) throw error;
    process.stderr.write(`ep-trace: ${error.message}\n`);
    return 1;
  }
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
