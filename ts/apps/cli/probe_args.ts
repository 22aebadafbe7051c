// SPDX-License-Identifier: Apache-2.0
// Command line of ep-probe, parsed into typed options; mistakes throw UsageError.
import { type OnebitDevice, costModelsFlagText, devicesFlagText } from '../../rules.js';
import {
  UsageError,
  costModelOption,
  count,
  counts,
  deviceOption,
  nonEmpty,
  readFlags,
  text,
  type FlagOptions,
} from './flags.js';

/** ep-probe --help (the device and cost-model values as the EP defines them). */
export function probeUsage(): string {
  return `usage: ep-probe --shape KxN [options]

Times one int8 GEMM shape per call on the host (prepare + gemm_q8 on one thread + epilogue) and
through the whole device path (A upload + sync, launches + wait, C sync, host epilogue), as
medians with min-max over --repeat calls, and checks that both give identical results. The emu
device is an emulator: its timings are labelled as emulated and are not NPU timings.

options:
  --shape KxN          the GEMM shape: K (depth) x N (output columns), e.g. 1024x2048
  --rows 1,4,32,36     rows values (M) to time (default 1,4,32,36)
  --repeat N           timed calls per route and rows value (default 20)
  --device ${devicesFlagText()}  device to probe (default emu; none: host column only)
  --cost-model ${costModelsFlagText()}
                       also show each device rows value's MODELLED time on that XDNA generation
                       (a cost model calibrated to published figures, docs/cost-model.md) and
                       the rows from which it beats the host; needs --device emu
  --save-routes FILE   write the faster route per rows into FILE (other shapes' lines are kept);
                       read by the EP option routes. With --cost-model, chosen on the modelled times
  --designs-dir DIR    design cache directory (default under the user's cache directory)
  --seed N             seed of the random operands (default 1)
  --json               print one JSON object instead of the table
  --help               print this text`;
}

export interface ProbeArgs {
  K: number;
  N: number;
  rows: number[];
  repeat: number;
  device: OnebitDevice;
  saveRoutes?: string;
  designsDir?: string;
  seed: number;
  costModel?: string;
  json: boolean;
  help: boolean;
}

const FLAGS = {
  shape: { type: 'string' },
  rows: { type: 'string' },
  repeat: { type: 'string' },
  device: { type: 'string' },
  'cost-model': { type: 'string' },
  model: { type: 'string' }, // the old name of --cost-model, for one release
  'save-routes': { type: 'string' },
  'designs-dir': { type: 'string' },
  seed: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} satisfies FlagOptions;

// --cost-model, or its old name --model with a deprecation warning (one of the two).
function costModelFlag(costModel: string | boolean | undefined, old: string | boolean | undefined): string | undefined {
  if (old === undefined) return costModel === undefined ? undefined : costModelOption('--cost-model', text(costModel));
  if (costModel !== undefined) throw new UsageError('--model is the old name of --cost-model: give one of them');
  process.emitWarning(
    'ep-probe --model is deprecated: use --cost-model (the old name goes in the next release)',
    'DeprecationWarning',
  );
  return costModelOption('--cost-model', text(old));
}

export function parseProbeArgs(argv: readonly string[]): ProbeArgs {
  const { values, positionals, unknown } = readFlags(argv, FLAGS);
  const stray = unknown ?? positionals[0];
  if (stray !== undefined) throw new UsageError(`unknown argument ${stray}; run ep-probe --help for the list`);
  const given = (name: keyof typeof FLAGS) => values[name] !== undefined;
  const args: ProbeArgs = {
    K: 0,
    N: 0,
    rows: given('rows') ? counts('--rows', text(values.rows), 1) : [1, 4, 32, 36],
    repeat: given('repeat') ? count('--repeat', text(values.repeat), 1) : 20,
    device: given('device') ? deviceOption(text(values.device)) : 'emu',
    saveRoutes: given('save-routes')
      ? nonEmpty('--save-routes', text(values['save-routes']), 'a file name')
      : undefined,
    designsDir: given('designs-dir')
      ? nonEmpty('--designs-dir', text(values['designs-dir']), 'a directory')
      : undefined,
    seed: given('seed') ? count('--seed', text(values.seed), 1) : 1,
    costModel: costModelFlag(values['cost-model'], values.model),
    json: given('json'),
    help: given('help'),
  };
  if (args.help) return args;
  if (args.costModel !== undefined && args.device === 'none')
    throw new UsageError('--cost-model models the device calls: use it with --device emu');
  const shape = text(values.shape);
  if (shape === undefined) throw new UsageError('--shape KxN is required, e.g. --shape 1024x2048');
  const match = /^(\d+)x(\d+)$/i.exec(shape.trim());
  if (!match) throw new UsageError(`--shape takes KxN, e.g. 1024x2048, got '${shape}'`);
  args.K = count('--shape K', match[1], 1);
  args.N = count('--shape N', match[2], 1);
  return args;
}
