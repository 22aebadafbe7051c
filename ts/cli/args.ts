// SPDX-License-Identifier: Apache-2.0
// Command line of onebit-run, parsed into typed options; mistakes throw UsageError.
import { OnebitOptionError } from '../errors.js';
import { nativeConstants } from '../native.js';

export const USAGE = `usage: onebit-run [model.onnx] [options]

Runs a model with the onebit EP and with ORT's CPU EP (onnxruntime-node) and prints speed per
length, agreement between the two, peak RSS and the EP's counters. Without a model it runs the
default: a Qwen3-0.6B-shaped A8W8 QDQ projection stack (7 groups a layer), generated and cached.

options:
  --bench            time more runs (defaults become --warmup 3 --repeat 20)
  --lens 1,32        lengths to run: the first free dimension of each input takes each value
  --warmup N         untimed runs before timing (default 1)
  --repeat N         timed runs per length and EP (default 5)
  --threads N        ORT intra-op threads for both EPs (default 1)
  --device auto|emu|none  the EP's offload device (default auto; emu: the emulated array)
  --layers N         layers of the default model (default 2; 28 = the full 196 groups)
  --cost-model xdna1|xdna2|FILE.json
                     with --device emu: also run the host arm and the device arm with the
                     route policy on and off, and report the device arm's MODELLED time per
                     phase on that XDNA generation (docs/cost-model.md)
  --json             print one JSON object instead of the table
  --help             print this text`;

export class UsageError extends OnebitOptionError {}

/** A --device value, checked against the EP's device options. */
export function deviceOption(value: string | undefined): 'auto' | 'emu' | 'none' {
  const devices = nativeConstants().deviceOptions;
  if (value === undefined || !devices.includes(value)) throw new UsageError(`--device takes ${devices.join(', ')}, got '${value ?? ''}'`);
  return value as 'auto' | 'emu' | 'none';
}

export interface RunArgs {
  model?: string;
  bench: boolean;
  lens: number[];
  warmup: number;
  repeat: number;
  threads: number;
  device: 'auto' | 'emu' | 'none';
  layers: number;
  costModel?: string;
  json: boolean;
  help: boolean;
}

function count(flag: string, text: string | undefined, min: number): number {
  const value = Number(text);
  if (text === undefined || !Number.isSafeInteger(value) || value < min)
    throw new UsageError(`${flag} needs an integer >= ${min}, got ${text === undefined ? 'nothing' : `'${text}'`}`);
  return value;
}

export function parseArgs(argv: readonly string[]): RunArgs {
  const args: RunArgs = { bench: false, lens: [1, 32], warmup: NaN, repeat: NaN, threads: 1, device: 'auto', layers: 2, json: false, help: false };
  for (let i = 0; i < argv.length; ++i) {
    const [flag, inline] = argv[i].startsWith('--') && argv[i].includes('=') ? argv[i].split(/=(.*)/s, 2) : [argv[i], undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--bench': args.bench = true; break;
      case '--json': args.json = true; break;
      case '--help': case '-h': args.help = true; break;
      case '--warmup': args.warmup = count(flag, value(), 0); break;
      case '--repeat': args.repeat = count(flag, value(), 1); break;
      case '--threads': args.threads = count(flag, value(), 0); break;
      case '--layers': args.layers = count(flag, value(), 1); break;
      case '--lens': {
        const text = value();
        args.lens = (text ?? '').split(',').map((len) => count('--lens', len.trim(), 0));
        break;
      }
      case '--device': {
        const device = value();
        args.device = deviceOption(device);
        break;
      }
      case '--cost-model': {
        const model = value();
        if (model !== 'xdna1' && model !== 'xdna2' && !model?.endsWith('.json'))
          throw new UsageError(`--cost-model takes xdna1, xdna2 or a cost file ending in .json, got ${model === undefined ? 'nothing' : `'${model}'`}`);
        args.costModel = model;
        break;
      }
      default:
        if (flag.startsWith('-')) throw new UsageError(`unknown option ${flag}; run onebit-run --help for the list`);
        if (args.model !== undefined) throw new UsageError(`one model at a time: got '${args.model}' and '${flag}'`);
        args.model = flag;
    }
  }
  if (args.costModel !== undefined && args.device !== 'emu') throw new UsageError('--cost-model models the emulated device: use it with --device emu');
  if (Number.isNaN(args.warmup)) args.warmup = args.bench ? 3 : 1;
  if (Number.isNaN(args.repeat)) args.repeat = args.bench ? 20 : 5;
  return args;
}
