#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// onebit-run: a model with the onebit EP against ORT's CPU EP: speed, agreement, memory, counters.
// SmolLM2 generates text (generate.ts); the projection stack or a given model file is timed per length.
import { performance } from 'node:perf_hooks';

import type { InferenceSession, Tensor } from 'onnxruntime-node';

import { OnebitError } from '../../errors.js';
import { onebit } from '../../onebit.js';
import { cachedModel } from '../model/model_cache.js';
import { GENERATOR_VERSION, projectionStack } from '../model/projection_stack.js';
import { parseArgs, usage, type RunArgs } from './args.js';
import { UsageError } from './flags.js';
import { runGeneration } from './generate.js';
import { formatGenerationReport } from './generate_report.js';
import { hasFreeDimension, makeFeeds } from './inputs.js';
import { jsonText } from './json_output.js';
import { modelledArms } from './modelled_arm.js';
import { checkOrtInt8 } from './ort_int8_check.js';
import { Progress } from './progress.js';
import { formatReport, type LengthResult, type RunReport } from './report.js';
import { agreement, peakRssMiB, summarize, type Timing } from './statistics.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');

interface ArmResult {
  timing: Timing;
  outputs: Record<string, Tensor>;
}

async function timeRuns(
  session: InferenceSession,
  feeds: Record<string, Tensor>,
  args: RunArgs,
  label: string,
  progress: Progress,
): Promise<ArmResult> {
  let outputs: Record<string, Tensor> = {};
  for (let i = 0; i < args.warmup; ++i) {
    progress.update(`${label}: warm-up ${i + 1}/${args.warmup}`);
    outputs = (await session.run(feeds)) as Record<string, Tensor>;
  }
  const samples: number[] = [];
  for (let i = 0; i < args.repeat; ++i) {
    progress.update(`${label}: run ${i + 1}/${args.repeat}`);
    const start = performance.now();
    outputs = (await session.run(feeds)) as Record<string, Tensor>;
    samples.push(performance.now() - start);
  }
  return { timing: summarize(samples), outputs };
}

function resolveModel(args: RunArgs, progress: Progress): RunReport['model'] {
  if (args.model !== 'stack') return { path: args.model, defaultModel: false, layers: null, groups: null };
  const layers = args.layers ?? 2;
  const name = `projection-stack-v${GENERATOR_VERSION}-l${layers}.onnx`;
  // The weights go to an external-data file: ORT maps them, so the session peaks at one copy.
  const { file } = cachedModel(name, () =>
    projectionStack(
      layers,
      (done) => progress.update(`building the projection stack: layer ${done}/${layers}`),
      1,
      `${name}.data`,
    ),
  );
  progress.done();
  return { path: file, defaultModel: true, layers, groups: layers * 7 };
}

export async function runOnebit(args: RunArgs, progress = new Progress()): Promise<RunReport> {
  const runtime = onebit.register();
  const model = resolveModel(args, progress);
  const common = { intraOpNumThreads: args.threads, interOpNumThreads: 1 };

  progress.update('creating the onebit session');
  const ours = await ort.InferenceSession.create(model.path, {
    ...common,
    executionProviders: [{ name: 'onebit', device: args.device } as InferenceSession.ExecutionProviderConfig],
  });
  const lens = hasFreeDimension(ours.inputMetadata) ? args.lens : [0];
  const onebitArms: ArmResult[] = [];
  for (const len of lens)
    onebitArms.push(
      await timeRuns(ours, makeFeeds(ort.Tensor, ours.inputMetadata, len), args, `onebit len ${len}`, progress),
    );
  const counters = onebit.counters(ours);
  const onebitPhase = peakRssMiB();
  await ours.release();

  progress.update('creating the ORT CPU EP session');
  const cpu = await ort.InferenceSession.create(model.path, { ...common, executionProviders: ['cpu'] });
  const lengths: LengthResult[] = [];
  for (const [i, len] of lens.entries()) {
    const arm = await timeRuns(
      cpu,
      makeFeeds(ort.Tensor, cpu.inputMetadata, len),
      args,
      `ORT CPU len ${len}`,
      progress,
    );
    const theirs = onebitArms[i];
    lengths.push({
      len,
      onebit: theirs.timing,
      cpu: arm.timing,
      speedup: arm.timing.medianMs / theirs.timing.medianMs,
      agreement: agreement(theirs.outputs, arm.outputs),
    });
  }
  await cpu.release();
  const modelled =
    args.costModel === undefined
      ? null
      : await modelledArms(
          {
            create: (options) =>
              ort.InferenceSession.create(model.path, {
                ...common,
                executionProviders: [{ name: 'onebit', ...options } as InferenceSession.ExecutionProviderConfig],
              }),
            feeds: (session, len) => makeFeeds(ort.Tensor, session.inputMetadata, len),
            run: (session, feeds, label) => timeRuns(session, feeds, args, label, progress),
            warmup: args.warmup,
            repeat: args.repeat,
          },
          lens,
          args.costModel,
        );
  progress.done();

  return {
    model,
    ortVersion: runtime.ortVersion,
    ortInt8: await checkOrtInt8(),
    threads: args.threads,
    device: args.device,
    warmup: args.warmup,
    repeat: args.repeat,
    lengths,
    peakRssMiB: { onebitPhase, total: peakRssMiB() },
    counters,
    expectedGroupRuns: counters.groups * lens.length * (args.warmup + args.repeat),
    modelled,
  };
}

async function main(argv: string[]): Promise<number> {
  let args: RunArgs;
  try {
    args = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`onebit-run: ${error.message}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  try {
    if (args.model === 'smollm2') {
      // Text streams to stdout as it is generated; with --json only the report is printed.
      const write = args.json ? () => {} : (text: string) => process.stdout.write(text);
      const report = await runGeneration(args, new Progress(), write);
      process.stdout.write(args.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatGenerationReport(report)}\n`);
      return 0;
    }
    const report = await runOnebit(args);
    process.stdout.write(args.json ? `${jsonText(report, 'report')}\n` : `${formatReport(report)}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof OnebitError)) throw error;
    process.stderr.write(`onebit-run: ${error.message}\n`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
