#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// ep-probe: one GEMM shape timed per call on the host and through the device path; rows table,
// JSON, or a routes file for the EP option `routes`.
import path from 'node:path';

import { OnebitError } from '../../errors.js';
import { probe } from '../../probe.js';
import { saveRoutes } from '../../routes.js';
import { UsageError } from './flags.js';
import { jsonText } from './json_output.js';
import { parseProbeArgs, probeUsage, type ProbeArgs } from './probe_args.js';
import { formatProbe, toReport } from './probe_report.js';

async function main(argv: string[]): Promise<number> {
  let args: ProbeArgs;
  try {
    args = parseProbeArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`ep-probe: ${error.message}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${probeUsage()}\n`);
    return 0;
  }
  try {
    const result = await probe({
      K: args.K,
      N: args.N,
      rows: args.rows,
      repeat: args.repeat,
      device: args.device,
      designsDir: args.designsDir,
      seed: args.seed,
      costModel: args.costModel,
    });
    let routesFile: string | null = null;
    const on = result.device.costModel !== null ? 'modelled' : 'measured';
    let report = toReport(result, null, on);
    if (args.saveRoutes !== undefined) {
      if (report.rows.some((r) => r.device === null)) {
        process.stdout.write(`${args.json ? jsonText(report, 'report') : formatProbe(report)}\n`);
        process.stderr.write(
          `ep-probe: --save-routes needs device timings for every rows value; ${result.device.error ?? `device ${result.device.selected}`}: nothing saved\n`,
        );
        return 1;
      }
      routesFile = path.resolve(args.saveRoutes);
      const label =
        on === 'modelled'
          ? ` (routes chosen on MODELLED ${result.device.costModel} device times against host times measured on this CPU)`
          : report.deviceTimings === 'emulated'
            ? ' (emulated timings)'
            : '';
      saveRoutes(
        routesFile,
        report.rows.map((r) => ({ K: result.K, N: result.N, rows: r.rows, route: r.route })),
        `# ${report.shape} from ep-probe on ${result.device.name}${label}, ${result.repeat} calls per rows, ${new Date().toISOString().slice(0, 10)}`,
      );
      report = toReport(result, routesFile, on);
    }
    process.stdout.write(`${args.json ? jsonText(report, 'report') : formatProbe(report)}\n`);
    if (report.rows.some((r) => r.exact === false)) {
      process.stderr.write('ep-probe: the device and host results differ: this is a bug, please report it\n');
      return 1;
    }
    if (args.device === 'emu' && result.device.error) {
      process.stderr.write(`ep-probe: the device could not be probed: ${result.device.error}\n`);
      return 1;
    }
    return 0;
  } catch (error) {
    if (!(error instanceof OnebitError)) throw error;
    process.stderr.write(`ep-probe: ${error.message}\n`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
