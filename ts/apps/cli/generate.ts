// SPDX-License-Identifier: Apache-2.0
// onebit-run --model smollm2: greedy generation with the onebit EP, then ORT's CPU EP on the same
// A8W8 QDQ model and ORT on the fp32 model, teacher-forced on the EP's tokens (the same work per
// arm): speed per arm, agreement of each position's logits, peak RSS and the EP's counters.
// --quality adds the teacher-forced evaluation text: KL(fp32 || QDQ) and top-1 per arm.
// --prompt-tokens N makes a prompt of exactly N tokens from the evaluation text.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import type { InferenceSession } from 'onnxruntime-node';

import type { OnebitCounters } from '../../counters.js';
import { OnebitInputError, OnebitRuntimeError } from '../../errors.js';
import { ChatTokenizer, TextStream } from '../llm/chat_tokenizer.js';
import { argmax, KvDecoder } from '../llm/kv_decoder.js';
import { sizedPrompt } from '../llm/sized_prompt.js';
import { smollm2, type ActivationType, type Smollm2Files, type WeightFormat } from '../model/smollm2.js';
import { nativeConstants } from '../../native.js';
import { onebit } from '../../onebit.js';
import type { RunArgs } from './args.js';
import type { Progress } from './progress.js';
import { ARM_NAMES, compare, type ArmName, type Comparison } from './comparison.js';
import { checkOrtInt8, type OrtInt8Check } from './ort_int8_check.js';
import { evaluationPassages, measureQuality, type QualityReport } from './quality.js';
import { peakRssMiB } from './statistics.js';

export type { ArmName, Comparison } from './comparison.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');

const FORMAT_LABELS: Record<WeightFormat, string> = { a8w8: 'A8W8 QDQ model', int4: 'int4 MatMulNBits model' };

/** An arm as reports name it; `ortQdq` is ORT's CPU EP on the same quantized model as onebit's. */
export function armLabel(arm: ArmName, format: WeightFormat): string {
  if (arm === 'onebit') return `onebit EP, ${FORMAT_LABELS[format]}`;
  return arm === 'ortQdq' ? `ORT CPU EP, same ${FORMAT_LABELS[format]}` : 'ORT CPU EP, fp32 model';
}

export interface ArmSpeed {
  arm: ArmName;
  prefillMs: number;
  promptTokensPerS: number;
  decodeSteps: number;
  decodeMs: number;
  decodeTokensPerS: number;
}

export interface GenerationReport {
  /** format: the quantized model the onebit and ortQdq arms ran; activations: the A8W8 model's type. */
  model: {
    dir: string;
    layers: number;
    projections: number;
    format: WeightFormat;
    activations: ActivationType;
    weights: string;
  };
  ortVersion: string;
  /** Whether ORT's uint8 x int8 kernel is exact on this CPU (it saturates on AVX2 without VNNI). */
  ortInt8: OrtInt8Check;
  /** The EP's host kernel (one of HOST_KERNELS). */
  hostKernel: string;
  threads: number;
  /** Untimed generations of each arm before its timed one (--warmup). */
  warmup: number;
  device: string;
  /** The user turn: --prompt, or with --prompt-tokens the start of the evaluation text. */
  prompt: string;
  /** Tokens of the chat-formatted prompt (equal to --prompt-tokens when given). */
  promptTokens: number;
  promptSource: 'prompt' | 'evaluation text';
  generatedTokens: number;
  stop: 'eos' | 'max-tokens';
  text: string;
  arms: ArmSpeed[];
  /** Over the generated positions: onebit against ORT's CPU EP on the same model, each QDQ arm against fp32. */
  agreement: Comparison[];
  /** Teacher-forced over the built-in evaluation passages (--quality). */
  quality: QualityReport | null;
  peakRssMiB: { onebitPhase: number; total: number };
  counters: OnebitCounters;
  /** groupRuns the counters must show if every projection ran on the EP in every forward pass. */
  expectedGroupRuns: number;
}

async function createSession(arm: ArmName, files: Smollm2Files, args: RunArgs): Promise<InferenceSession> {
  // Errors only: ORT's warning that shape ops stay on the CPU EP is expected for this model.
  const common = { intraOpNumThreads: args.threads, interOpNumThreads: 1, logSeverityLevel: 3 as const };
  if (arm === 'onebit')
    return ort.InferenceSession.create(files.quantizedModel, {
      ...common,
      executionProviders: [{ name: 'onebit', device: args.device } as InferenceSession.ExecutionProviderConfig],
    });
  return ort.InferenceSession.create(arm === 'ortQdq' ? files.quantizedModel : files.fp32Model, {
    ...common,
    executionProviders: ['cpu'],
  });
}

interface ArmRun {
  speed: ArmSpeed;
  /** Logits of each position that predicts a generated token (the prompt's last, then each step's). */
  steps: Float32Array<ArrayBufferLike>[];
}

/** Prefill, then one forward per token: generated greedily (onebit) or given (the other arms). */
async function runArm(
  arm: ArmName,
  decoder: KvDecoder,
  promptIds: number[],
  vocab: number,
  next: (step: number, logits: Float32Array) => number | null,
): Promise<ArmRun> {
  let start = performance.now();
  let logits = await decoder.forward(promptIds);
  const prefillMs = performance.now() - start;
  const steps: Float32Array<ArrayBufferLike>[] = [logits.slice((promptIds.length - 1) * vocab)];
  let decodeMs = 0;
  for (let token = next(0, steps[0]); token !== null; token = next(steps.length - 1, steps.at(-1)!)) {
    start = performance.now();
    logits = await decoder.forward([token]);
    decodeMs += performance.now() - start;
    steps.push(logits);
  }
  const decodeSteps = steps.length - 1;
  return {
    speed: {
      arm,
      prefillMs,
      promptTokensPerS: (promptIds.length * 1000) / prefillMs,
      decodeSteps,
      decodeMs,
      decodeTokensPerS: decodeSteps ? (decodeSteps * 1000) / decodeMs : 0,
    },
    steps,
  };
}

/**
 * `passes` untimed runs of the arm, each from an empty cache, before its timed one (--warmup): what a
 * long-running app has done before its next generation (V8 has compiled the run path; the first
 * ~128 runs of a 121-value decoder step were 2-4 times slower in Node: docs/benchmarks-log.md, Session 17).
 * Returns the forward passes it ran.
 */
async function warmUp(
  arm: ArmName,
  decoder: KvDecoder,
  passes: number,
  promptIds: number[],
  vocab: number,
  next: (step: number, logits: Float32Array) => number | null,
  progress: Progress,
): Promise<number> {
  let forwards = 0;
  for (let i = 0; i < passes; ++i) {
    progress.update(`${arm}: untimed generation ${i + 1} of ${passes} (--warmup)`);
    forwards += (await runArm(arm, decoder, promptIds, vocab, next)).steps.length;
    decoder.reset();
  }
  return forwards;
}

/** The folder's evaluation text; missing or empty, the error names the file. */
function evaluationText(files: Smollm2Files): string {
  let text: string;
  try {
    text = readFileSync(files.evaluationText, 'utf8');
  } catch (error) {
    throw new OnebitRuntimeError(
      `cannot read ${files.evaluationText} (${(error as Error).message}): delete ${files.dir} and run again to rebuild it`,
    );
  }
  if (text.trim() === '')
    throw new OnebitRuntimeError(`${files.evaluationText} is empty: delete ${files.dir} and run again to rebuild it`);
  return text;
}

export async function runGeneration(
  args: RunArgs,
  progress: Progress,
  write: (text: string) => void,
): Promise<GenerationReport> {
  const runtime = onebit.register();
  const files = smollm2(args.layers ?? undefined, args.activations, (line) => progress.update(line), args.weights);
  progress.done();
  const vocab = files.config.vocab;
  const tokenizer = new ChatTokenizer(files.tokenizerJson, files.chat);
  const checkFits = (promptTokens: number) => {
    if (promptTokens + args.maxTokens > files.config.context)
      throw new OnebitInputError(
        `the prompt is ${promptTokens} tokens; with --max-tokens ${args.maxTokens} that exceeds the model's context of ${files.config.context} tokens`,
      );
  };
  // A requested length is checked before the prompt is made, so a huge one costs nothing.
  if (args.promptTokens !== null) checkFits(args.promptTokens);
  const { user, ids: promptIds } =
    args.promptTokens === null
      ? { user: args.prompt, ids: tokenizer.encode(tokenizer.chatPrompt(args.prompt)) }
      : sizedPrompt(tokenizer, evaluationText(files), args.promptTokens);
  checkFits(promptIds.length);

  // The onebit arm generates: greedy until the end-of-turn token or --max-tokens.
  progress.update('creating the onebit session');
  let session = await createSession('onebit', files, args);
  progress.done();
  const generated: number[] = [];
  const stream = new TextStream(tokenizer);
  const eos = files.chat.eos_token_id;
  const decoder = new KvDecoder(session, files, ort.Tensor);
  // The warm-up generates as the timed run does (greedy, the same stop), without streaming the text.
  const warmUpForwards = await warmUp(
    'onebit',
    decoder,
    args.warmup,
    promptIds,
    vocab,
    (step, logits) => {
      const token = argmax(logits, 0, vocab);
      return token === eos || step + 1 >= args.maxTokens ? null : token;
    },
    progress,
  );
  progress.done();
  const ours = await runArm('onebit', decoder, promptIds, vocab, (step, logits) => {
    const token = argmax(logits, 0, vocab);
    generated.push(token);
    if (token !== eos) write(stream.push(token));
    return token === eos || generated.length >= args.maxTokens ? null : token;
  });
  write('\n');
  const counters = onebit.counters(session);
  const expectedGroupRuns = files.projections * (ours.steps.length + warmUpForwards);
  const onebitPhase = peakRssMiB();
  await session.release();

  // The other arms: the same forward passes on the same tokens.
  const arms: Record<ArmName, ArmRun> = { onebit: ours } as Record<ArmName, ArmRun>;
  for (const arm of ['ortQdq', 'ortFp32'] as const) {
    progress.update(`${armLabel(arm, files.weights)}: prefill and ${generated.length - 1} decode steps`);
    session = await createSession(arm, files, args);
    const forced = new KvDecoder(session, files, ort.Tensor);
    const teacher = (step: number) => (step < generated.length - 1 ? generated[step] : null);
    await warmUp(arm, forced, args.warmup, promptIds, vocab, teacher, progress);
    arms[arm] = await runArm(arm, forced, promptIds, vocab, teacher);
    await session.release();
  }
  progress.done();

  let quality: GenerationReport['quality'] = null;
  if (args.quality) {
    const passages = evaluationPassages(evaluationText(files));
    quality = await measureQuality(
      passages,
      tokenizer,
      files,
      ort.Tensor,
      (arm) => createSession(arm, files, args),
      (i, tokens) =>
        progress.update(`quality: passage ${i + 1} of ${passages.length} (${tokens} tokens) through each arm`),
    );
    progress.done();
  }

  return {
    model: {
      dir: files.dir,
      layers: files.config.layers,
      projections: files.projections,
      format: files.weights,
      activations: files.activations,
      weights: `dequantized from the Q4_1 GGUF of SmolLM2-135M-Instruct, then ${files.weights === 'int4' ? 'int4 MatMulNBits (block 32, symmetric, accuracy_level 4)' : 'A8W8'}`,
    },
    ortVersion: runtime.ortVersion,
    ortInt8: await checkOrtInt8(),
    hostKernel: nativeConstants().hostKernel,
    threads: args.threads,
    warmup: args.warmup,
    device: args.device,
    prompt: user,
    promptTokens: promptIds.length,
    promptSource: args.promptTokens === null ? 'prompt' : 'evaluation text',
    generatedTokens: generated.length,
    stop: generated.at(-1) === eos ? 'eos' : 'max-tokens',
    text: tokenizer.decode(generated.filter((t) => t !== eos)),
    arms: ARM_NAMES.map((a) => arms[a].speed),
    agreement: [
      compare('ortQdq', 'onebit', arms.ortQdq.steps, ours.steps, vocab),
      compare('ortFp32', 'onebit', arms.ortFp32.steps, ours.steps, vocab),
      compare('ortFp32', 'ortQdq', arms.ortFp32.steps, arms.ortQdq.steps, vocab),
    ],
    quality,
    peakRssMiB: { onebitPhase, total: peakRssMiB() },
    counters,
    expectedGroupRuns,
  };
}
