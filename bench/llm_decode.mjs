// SPDX-License-Identifier: Apache-2.0
// SmolLM2 decode speed, every arm in one interleaved run: onebit-run with the int4 MatMulNBits model
// (onebit EP, ORT's CPU EP on the same model, ORT fp32), onebit-run with the A8W8 model (onebit EP,
// ORT's CPU EP) and llama.cpp on the Q4_1 GGUF those models come from; per thread count, rounds
// alternate the three runs. Prints one JSON line a run, then median and min–max per arm, and the EP
// int4's ratio to llama.cpp, to ORT int4 and to the EP's A8W8 within each round. Each run times its
// process's first generation, as a one-shot command does; --warmup N times the one after N untimed
// generations instead (onebit-run --warmup N; llama.cpp's last of N + 1 rounds), as a long-running app
// sees it.
//   node bench/llm_decode.mjs [--threads 1,2] [--rounds 5] [--tokens 64] [--prompt-tokens 64] [--warmup 0]
// Needs npm run build:ts, the built models (onebit-run builds them) and npm ci --prefix bench/llama_cpp.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';

const root = path.join(path.dirname(new URL(import.meta.url).pathname), '..');
const { summarize } = createRequire(import.meta.url)(path.join(root, 'dist', 'apps', 'cli', 'statistics.js'));
const { values } = parseArgs({
  options: {
    threads: { type: 'string', default: '1,2' },
    rounds: { type: 'string', default: '5' },
    tokens: { type: 'string', default: '64' },
    'prompt-tokens': { type: 'string', default: '64' },
    warmup: { type: 'string', default: '0' },
  },
});
const python = path.join(root, '.venv', 'bin', 'python');
const [gguf, cache] = execFileSync(
  python,
  [
    '-c',
    'import sys; sys.path.insert(0, "models"); import gguf_llama, build_smollm2; ' +
      'print(gguf_llama.packaged_gguf_path()); print(build_smollm2.default_cache_dir())',
  ],
  { cwd: root, encoding: 'utf8' },
)
  .trim()
  .split('\n');
// llama.cpp's prompt: as many tokens from the start of the evaluation text as onebit-run's --prompt-tokens prompt
// (onebit-run builds the folder on first use: run it once before).
const evaluation = path.join(cache, 'smollm2-v6-full', 'evaluation.txt');

function onebitRun(weights, threads) {
  const out = execFileSync(
    process.execPath,
    [
      path.join(root, 'dist', 'apps', 'cli', 'onebit_run.js'),
      '--weights',
      weights,
      '--threads',
      String(threads),
      '--prompt-tokens',
      values['prompt-tokens'],
      '--max-tokens',
      values.tokens,
      '--warmup',
      values.warmup,
      '--json',
    ],
    { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const r = JSON.parse(out);
  return r.arms.map((a) => ({
    arm: a.arm === 'ortFp32' ? 'ortFp32' : `${a.arm}:${weights}`,
    decode: a.decodeTokensPerS,
    prefillMs: a.prefillMs,
    steps: a.decodeSteps,
    rssMiB: r.peakRssMiB.onebitPhase,
  }));
}

function llamaCpp(threads) {
  const out = execFileSync(
    process.execPath,
    [
      path.join(root, 'bench', 'llama_cpp', 'decode.mjs'),
      '--gguf',
      gguf,
      '--threads',
      String(threads),
      '--tokens',
      values.tokens,
      '--rounds',
      String(Number(values.warmup) + 1),
      '--prompt-file',
      evaluation,
      '--prompt-tokens',
      values['prompt-tokens'],
    ],
    { cwd: root, encoding: 'utf8' },
  );
  const r = JSON.parse(out.trim().split('\n').pop());
  return [{ arm: 'llama.cpp:q4_1', decode: r.decode_tok_s, prefillMs: null, steps: r.decode_tokens }];
}

// Median (min–max, count) of any samples, by onebit-run's own summary (its fields are named for ms).
const range = (samples, digits, unit) => {
  const s = summarize(samples);
  return `${s.medianMs.toFixed(digits)}  (${s.minMs.toFixed(digits)}–${s.maxMs.toFixed(digits)}, ${s.runs} ${unit})`;
};

// EP int4 over each of these, round by round: arms a minute apart drift less than whole runs do.
const PAIRED = ['llama.cpp:q4_1', 'ortQdq:int4', 'onebit:a8w8'];

for (const threads of values.threads.split(',').map(Number)) {
  const seen = new Map();
  const paired = new Map(PAIRED.map((arm) => [arm, []]));
  for (let round = 1; round <= Number(values.rounds); ++round) {
    const thisRound = new Map();
    for (const run of [() => onebitRun('int4', threads), () => onebitRun('a8w8', threads), () => llamaCpp(threads)]) {
      for (const a of run()) {
        console.log(JSON.stringify({ threads, round, warmup: Number(values.warmup), ...a }));
        if (!seen.has(a.arm)) seen.set(a.arm, []);
        seen.get(a.arm).push(a.decode);
        thisRound.set(a.arm, a.decode);
      }
    }
    for (const [arm, ratios] of paired) ratios.push(thisRound.get('onebit:int4') / thisRound.get(arm));
  }
  for (const [arm, xs] of seen)
    console.log(`threads ${threads}  ${arm.padEnd(18)} decode tok/s median ${range(xs, 1, 'runs')}`);
  for (const [arm, ratios] of paired)
    console.log(`threads ${threads}  onebit:int4 ÷ ${arm.padEnd(15)} per round: median ${range(ratios, 2, 'rounds')}`);
}
