// SPDX-License-Identifier: Apache-2.0
// onebit-run --model smollm2 on a 2-layer model cut from the packaged GGUF (built by the Python
// builder into a temporary cache): generation with every projection on the EP, the report's
// fields, prompts of a requested length, the model with int8 activations, the tokenizer from Node
// against the Python `tokenizers` library, and the errors.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { ort, repoRoot, runNode, type Ran } from './helpers/package.js';
import { expectAgreementWithOrt, expectQualityAgainstOrt, type Report } from './helpers/smollm2_report.js';

const cli = path.join(repoRoot, 'dist', 'apps', 'cli', 'onebit_run.js');
const cache = mkdtempSync(path.join(os.tmpdir(), 'onebit-smollm2-'));
const env = { ONEBIT_CACHE_DIR: cache };
const python = process.env.ONEBIT_PYTHON || path.join(repoRoot, '.venv', 'bin', 'python');
const modelDir = path.join(cache, 'smollm2-v6-l2');

/* eslint-disable @typescript-eslint/no-require-imports */
const { ChatTokenizer } = require(
  path.join(repoRoot, 'dist', 'apps', 'llm', 'chat_tokenizer.js'),
) as typeof import('../../ts/apps/llm/chat_tokenizer.js');
const { KvDecoder } = require(
  path.join(repoRoot, 'dist', 'apps', 'llm', 'kv_decoder.js'),
) as typeof import('../../ts/apps/llm/kv_decoder.js');
const { smollm2 } = require(
  path.join(repoRoot, 'dist', 'apps', 'model', 'smollm2.js'),
) as typeof import('../../ts/apps/model/smollm2.js');
/* eslint-enable @typescript-eslint/no-require-imports */

let report: Report;

/** runNode without blocking the test worker (the first run builds the model for a minute or two). */
function runNodeAsync(args: string[], extraEnv: Record<string, string>): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, env: { ...process.env, ...extraEnv } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('onebit-run --model smollm2', () => {
  beforeAll(async () => {
    // Builds the 2-layer model (half a minute to two, with the machine busy), generates 6 tokens,
    // then teacher-forces the evaluation text through each arm.
    const ran = await runNodeAsync(
      [cli, '--layers', '2', '--max-tokens', '6', '--quality', '--json', '--prompt', 'Name a colour.'],
      env,
    );
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    report = JSON.parse(ran.stdout);
  }, 300_000);

  it('runs every projection of every forward pass on the EP', () => {
    expect(report.model).toMatchObject({ layers: 2, projections: 15 }); // 7 a layer + the output projection
    const forwards = report.generatedTokens; // the prefill, then one step per generated token but the last
    expect(report.counters.groups).toBe(15);
    expect(report.counters.groupRuns).toBe(15 * forwards);
    expect(report.expectedGroupRuns).toBe(15 * forwards);
    expect(report.counters.attentionRuns).toBe(2 * forwards); // each layer's GroupQueryAttention
    expect(report.counters.gateRuns).toBe(2 * forwards); // each layer's SwiGLU, with gate/up
    expect(report.counters.normRuns).toBe(2 * 2 * forwards); // each layer's two skip norms, with their projections
  });

  it('reports each arm over the same forward passes, and what each agreement column compares', () => {
    expect(report.stop === 'eos' || report.generatedTokens === 6).toBe(true);
    expect(report.arms.map((a) => a.arm)).toEqual(['onebit', 'ortQdq', 'ortFp32']);
    for (const arm of report.arms) {
      expect(arm.decodeSteps).toBe(report.generatedTokens - 1);
      expect(arm.promptTokensPerS).toBeCloseTo((report.promptTokens * 1000) / arm.prefillMs, 6);
      expect(arm.decodeTokensPerS).toBeGreaterThan(0);
    }
    expect(report.agreement.map((c) => `${c.candidate}|${c.reference}`)).toEqual([
      'onebit|ortQdq',
      'onebit|ortFp32',
      'ortQdq|ortFp32',
    ]);
    for (const c of report.agreement) expect(c.positions).toBe(report.generatedTokens);
    expectAgreementWithOrt(report);
    expect(report.peakRssMiB.total).toBeGreaterThanOrEqual(report.peakRssMiB.onebitPhase);
    expect(readdirSync(cache)).toEqual(['smollm2-v6-l2']); // the cached model folder only: nothing partial
  });

  it('measures quality over the evaluation passages: the EP costs no more KL against fp32 than ORT on the same model', () => {
    const { tokens, passages, comparisons } = report.quality;
    const written = readFileSync(path.join(modelDir, 'evaluation.txt'), 'utf8').split('\n\f\n');
    expect(passages).toHaveLength(written.length);
    expect(passages.length).toBeGreaterThanOrEqual(4);
    expect(tokens).toBe(passages.reduce((n, p) => n + p.tokens, 0));
    expect(tokens).toBeGreaterThan(1200);
    expect(comparisons.map((c) => `${c.candidate}|${c.reference}`)).toEqual([
      'onebit|ortFp32',
      'ortQdq|ortFp32',
      'onebit|ortQdq',
    ]);
    for (const c of comparisons) expect(c.positions).toBe(tokens - passages.length); // each passage's last token predicts nothing
    // The pooled means are the per-passage means weighted by their positions.
    const pooled = (arm: 'onebit' | 'ortQdq') =>
      passages.reduce((s, p) => s + p.meanKl[arm] * (p.tokens - 1), 0) / (tokens - passages.length);
    expect(comparisons[0].meanKl).toBeCloseTo(pooled('onebit'), 12);
    expect(comparisons[1].meanKl).toBeCloseTo(pooled('ortQdq'), 12);
    // The top-1 split accounts for the whole gap between the two arms' top-1 against fp32.
    const right = (c: (typeof comparisons)[number]) => Math.round(c.top1 * c.positions);
    const { onebitOnly, ortQdqOnly, pValue } = report.quality.top1Split;
    expect(onebitOnly - ortQdqOnly).toBe(right(comparisons[0]) - right(comparisons[1]));
    expect(onebitOnly + ortQdqOnly).toBeLessThanOrEqual(comparisons[0].positions);
    expect(pValue).toBeGreaterThan(0);
    expect(pValue).toBeLessThanOrEqual(1);
    expectQualityAgainstOrt(report);
  });

  it('makes a prompt of exactly --prompt-tokens tokens from the evaluation text', async () => {
    const ran = await runNodeAsync([cli, '--layers', '2', '--max-tokens', '2', '--prompt-tokens', '32', '--json'], env);
    expect(ran.status).toBe(0);
    const sized = JSON.parse(ran.stdout) as Report;
    expect(sized.promptTokens).toBe(32);
    expect(sized.promptSource).toBe('evaluation text');
    expect(sized.model.activations).toBe('uint8');
    // The reported count is the prompt's: the user turn it reports, chat-formatted, is 32 tokens.
    const tokenizer = new ChatTokenizer(
      path.join(modelDir, 'tokenizer.json'),
      JSON.parse(readFileSync(path.join(modelDir, 'chat.json'), 'utf8')),
    );
    expect(tokenizer.encode(tokenizer.chatPrompt(sized.prompt))).toHaveLength(32);
    const evaluation = readFileSync(path.join(modelDir, 'evaluation.txt'), 'utf8').replace(/\s+/g, ' ');
    expect(evaluation.startsWith(sized.prompt)).toBe(true);
    expect(sized.prompt.length).toBeGreaterThan(0);
    for (const arm of sized.arms) expect(arm.promptTokensPerS).toBeCloseTo((32 * 1000) / arm.prefillMs, 6);
  }, 120_000);

  it('runs the QDQ model with int8 activations: every projection on the EP, the same tokens as ORT', async () => {
    // Adds the int8 model to the cached folder (quantized from its fp32 model), then a 128-token
    // prompt: longer than the evaluation text's first paragraph.
    const ran = await runNodeAsync(
      [cli, '--layers', '2', '--max-tokens', '4', '--prompt-tokens', '128', '--activations', 'int8', '--json'],
      env,
    );
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    const int8 = JSON.parse(ran.stdout) as Report;
    expect(int8.model.activations).toBe('int8');
    expect(int8.promptTokens).toBe(128);
    expect(int8.counters.groups).toBe(15);
    expect(int8.counters.groupRuns).toBe(15 * int8.generatedTokens);
    expectAgreementWithOrt(int8);
    expect(readdirSync(cache)).toEqual(['smollm2-v6-l2']);
    expect(readdirSync(modelDir).filter((f) => f.startsWith('model-a8w8'))).toEqual([
      'model-a8w8-s8.onnx',
      'model-a8w8-s8.onnx.data',
      'model-a8w8.onnx',
      'model-a8w8.onnx.data',
    ]);
    expect(readdirSync(modelDir).filter((f) => f.includes('partial'))).toEqual([]);
  }, 300_000);

  it('runs the int4 MatMulNBits model: every projection on the EP, the same tokens as ORT on that model', async () => {
    // Adds the int4 model to the cached folder (MatMulNBits, block 32, symmetric, accuracy_level 4).
    // With one untimed generation per arm first (--warmup 1): the EP runs every pass twice.
    const ran = await runNodeAsync(
      [
        cli,
        '--layers',
        '2',
        '--max-tokens',
        '4',
        '--prompt-tokens',
        '64',
        '--weights',
        'int4',
        '--warmup',
        '1',
        '--json',
      ],
      env,
    );
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    const int4 = JSON.parse(ran.stdout) as Report;
    expect(int4.model.format).toBe('int4');
    expect(int4.warmup).toBe(1);
    expect(int4.counters.groups).toBe(15);
    expect(int4.counters.groupRuns).toBe(2 * 15 * int4.generatedTokens);
    expect(int4.expectedGroupRuns).toBe(2 * 15 * int4.generatedTokens);
    expect(int4.counters.attentionRuns).toBe(2 * 2 * int4.generatedTokens);
    expect(int4.counters.gateRuns).toBe(2 * 2 * int4.generatedTokens);
    expect(int4.counters.normRuns).toBe(2 * 2 * 2 * int4.generatedTokens);
    // ORT's accuracy_level 4 path and the EP's W4A8 contract quantize alike and differ by float
    // rounding in the block sums only (test_matmul_nbits_contract.py: at most 4 ulps of the terms'
    // magnitude per output, whatever the CPU). Through two layers that rounding gives a mean KL
    // that depends on ORT's kernel for the CPU: 2.0e-4 with its AVX-512 VNNI kernel (Xeon, session
    // 13), under 1e-4 with its AVX2 one; the same top-1 everywhere.
    const [between] = int4.agreement;
    expect(between).toMatchObject({ candidate: 'onebit', reference: 'ortQdq' });
    expect(between.top1).toBe(1);
    expect(between.meanKl).toBeLessThan(5e-4);
    expect(readdirSync(modelDir).filter((f) => f.startsWith('model-int4'))).toEqual([
      'model-int4.onnx',
      'model-int4.onnx.data',
    ]);
    expect(readdirSync(modelDir).filter((f) => f.includes('partial'))).toEqual([]);
  }, 300_000);

  it('decodes with the KV cache in shared buffers that grow: the last step equals a full recompute, on both backends', async () => {
    // The cache buffers start at 256 rows: 250 prompt tokens, then 12 steps one at a time, so the
    // buffers double midway (their rows copied) and GroupQueryAttention appends in place throughout.
    process.env.ONEBIT_CACHE_DIR = cache;
    const files = smollm2(2, 'uint8', () => {});
    const ids = Array.from({ length: 262 }, (_, i) => 100 + ((i * 37) % 4000));
    const vocab = files.config.vocab;
    for (const ep of [{ name: 'onebit', device: 'none' }, 'cpu']) {
      const session = await ort.InferenceSession.create(files.quantizedModel, { executionProviders: [ep as never] });
      const decoder = new KvDecoder(session, files, ort.Tensor);
      await decoder.forward(ids.slice(0, 250));
      let step = new Float32Array(0);
      for (const id of ids.slice(250)) step = await decoder.forward([id]);
      expect(decoder.length).toBe(262);
      const full = (await new KvDecoder(session, files, ort.Tensor).forward(ids)).subarray(261 * vocab);
      const scale = Math.max(...full.map(Math.abs));
      // Exact integer sums either way; attention's float rounding differs between one long call and many short ones.
      const worst = Math.max(...step.map((v, i) => Math.abs(v - full[i])));
      expect(worst).toBeLessThanOrEqual(2e-3 * scale);
      expect(step.indexOf(Math.max(...step))).toBe(full.indexOf(Math.max(...full)));
      await session.release();
    }
  }, 120_000);

  it('tokenizes as the Python tokenizers library does, and round-trips text and special tokens', () => {
    const tokenizer = new ChatTokenizer(path.join(modelDir, 'tokenizer.json'), {
      turn_start: '<|im_start|>',
      turn_end: '<|im_end|>',
      default_system: null,
      bos_token_id: 1,
      eos_token_id: 2,
    });
    const texts = [
      'Hello, world! 12345',
      'Grüße aus München — naïve café',
      '東京は日本の首都です。',
      'Привет, мир',
      'emoji 🙂🚀 and\ttabs\nnewlines',
      tokenizer.chatPrompt('Hi there'),
    ];
    const reference = spawnSync(
      python,
      [
        '-c',
        'import json,sys; from tokenizers import Tokenizer; t = Tokenizer.from_file(sys.argv[1]); ' +
          'print(json.dumps([t.encode(s).ids for s in json.load(sys.stdin)]))',
        path.join(modelDir, 'tokenizer.json'),
      ],
      { input: JSON.stringify(texts), encoding: 'utf8' },
    );
    expect(reference.status).toBe(0);
    const expected = JSON.parse(reference.stdout) as number[][];
    texts.forEach((text, i) => {
      expect(tokenizer.encode(text)).toEqual(expected[i]);
      expect(tokenizer.decode(tokenizer.encode(text))).toBe(text);
    });
    expect(tokenizer.encode(texts[5]).slice(0, 2)).toEqual([1, tokenizer.encode('user')[0]]); // <|im_start|> is one token
    expect(tokenizer.encode(texts[5])).toContain(2); // <|im_end|>
  });

  it('prints the generated text before the table', () => {
    const ran = runNode([cli, '--layers', '2', '--max-tokens', '3', '--prompt', 'Hi'], repoRoot, env, 120_000);
    expect(ran.status).toBe(0);
    expect(ran.stdout).toMatch(/onebit-run: SmolLM2-135M-Instruct, 2 layers, 15 A8W8 projections/);
    expect(ran.stdout).toMatch(/onebit EP, A8W8 QDQ model\s+[\d.]+\s+[\d.]+\s+[\d.]+/);
    expect(ran.stdout).toMatch(/counters: groupRuns=\d+ groups=15 /);
    expect(ran.stdout.indexOf('onebit-run:')).toBeGreaterThan(0); // the text came first
  });

  it('says when the prompt and --max-tokens exceed the context, and when the builder cannot run', () => {
    const long = runNode([cli, '--layers', '2', '--max-tokens', '8190', '--prompt', 'Hi'], repoRoot, env);
    expect(long.status).toBe(1);
    expect(long.stderr).toMatch(
      /the prompt is \d+ tokens; with --max-tokens 8190 that exceeds the model's context of 8192 tokens/,
    );
    const noPython = runNode([cli, '--layers', '3'], repoRoot, { ...env, ONEBIT_PYTHON: '/nonexistent/python' });
    expect(noPython.status).toBe(1);
    expect(noPython.stderr).toMatch(/cannot run the model builder with \/nonexistent\/python/);
    const usage = runNode([cli, '--max-tokens', '0']);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/--max-tokens needs an integer >= 1/);
    for (const loose of ['0x20', '1e2', ' 40 ', '40.0']) {
      const refused = runNode([cli, '--prompt-tokens', loose]);
      expect(refused.status).toBe(2);
      expect(refused.stderr).toContain(`--prompt-tokens needs an integer >= 1, got '${loose}'`);
    }
  });

  it('says what is wrong with a damaged cached folder, without a stack trace', () => {
    // A copy of the built folder's small files, one of them damaged (the models are never reached).
    const damaged = (edit: (dir: string) => void): Record<string, string> => {
      const root = mkdtempSync(path.join(os.tmpdir(), 'onebit-damaged-'));
      const dir = path.join(root, path.basename(modelDir));
      mkdirSync(dir);
      for (const file of ['manifest.json', 'tokenizer.json', 'chat.json', 'evaluation.txt'])
        copyFileSync(path.join(modelDir, file), path.join(dir, file));
      edit(dir);
      return { ONEBIT_CACHE_DIR: root };
    };
    const manifest = JSON.parse(readFileSync(path.join(modelDir, 'manifest.json'), 'utf8'));
    const cases: [string[], (dir: string) => void, RegExp][] = [
      [
        [],
        (dir) => writeFileSync(path.join(dir, 'manifest.json'), '{"version": 5, "qdq'),
        /manifest\.json: not a readable JSON manifest .*delete .*smollm2-v6-l2 and run again/,
      ],
      [
        [],
        (dir) => writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ ...manifest, qdq_models: undefined })),
        /manifest\.json: no qdq_models listed/,
      ],
      [
        ['--prompt-tokens', '40'],
        (dir) => writeFileSync(path.join(dir, 'evaluation.txt'), ''),
        /evaluation\.txt is empty: delete /,
      ],
    ];
    for (const [args, edit, message] of cases) {
      const ran = runNode([cli, '--layers', '2', ...args], repoRoot, damaged(edit));
      expect(ran.status).toBe(1);
      expect(ran.stderr).toMatch(message);
      expect(ran.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('says when --prompt-tokens is out of range or given with --prompt, and which --activations and --weights exist', () => {
    const short = runNode([cli, '--layers', '2', '--prompt-tokens', '30'], repoRoot, env);
    expect(short.status).toBe(1);
    expect(short.stderr).toMatch(
      /--prompt-tokens 30 is too short: the chat template alone takes 30 tokens; ask for at least 31/,
    );
    const long = runNode([cli, '--layers', '2', '--prompt-tokens', '8100', '--max-tokens', '100'], repoRoot, env);
    expect(long.status).toBe(1);
    expect(long.stderr).toMatch(
      /the prompt is 8100 tokens; with --max-tokens 100 that exceeds the model's context of 8192 tokens/,
    );
    const both = runNode([cli, '--prompt', 'Hi', '--prompt-tokens', '40']);
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/--prompt and --prompt-tokens: give one or the other/);
    const activations = runNode([cli, '--activations', 's8']);
    expect(activations.status).toBe(2);
    expect(activations.stderr).toMatch(/--activations takes uint8 or int8, got 's8'/);
    const weights = runNode([cli, '--weights', 'int3']);
    expect(weights.status).toBe(2);
    expect(weights.stderr).toMatch(/--weights takes a8w8 or int4, got 'int3'/);
    const mixed = runNode([cli, '--weights', 'int4', '--activations', 'int8']);
    expect(mixed.status).toBe(2);
    expect(mixed.stderr).toMatch(/--activations picks the A8W8 model/);
  });
});
