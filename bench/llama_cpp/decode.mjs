// SPDX-License-Identifier: Apache-2.0
// llama.cpp's greedy decode speed on a GGUF file (the anchor for int4 decode): prints one JSON line
// per round, {"round", "threads", "prompt_tokens", "decode_tokens", "decode_tok_s"}. Decode time runs
// from the first generated token to the last, so the prompt's evaluation is not in it.
//   node bench/llama_cpp/decode.mjs --gguf FILE [--threads 1] [--tokens 64] [--rounds 3]
//                                   [--prompt TEXT | --prompt-file FILE [--prompt-tokens N]]
// --prompt-file: the prompt is the first N tokens of the file (default 64; the benchmarks pass
// SmolLM2's evaluation text, whose start onebit-run's --prompt-tokens prompt is made of too, and the
// same N, so every arm decodes after a context of the same length: attention's cost grows with it).
// Install first: npm ci --prefix bench/llama_cpp
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { getLlama } from 'node-llama-cpp';

const { values } = parseArgs({
  options: {
    gguf: { type: 'string' },
    threads: { type: 'string', default: '1' },
    tokens: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    prompt: { type: 'string', default: 'The lighthouse keeper climbed the stairs and' },
    'prompt-file': { type: 'string' },
    'prompt-tokens': { type: 'string', default: '64' },
  },
});
if (!values.gguf) throw new Error('decode.mjs: --gguf FILE is required');
const threads = Number(values.threads);
const tokens = Number(values.tokens);

const llama = await getLlama({ gpu: false, build: 'never' });
const model = await llama.loadModel({ modelPath: values.gguf });
const prompt = values['prompt-file']
  ? fileTokens(values['prompt-file'], Number(values['prompt-tokens']))
  : model.tokenize(values.prompt);

// The first `count` tokens of a text file.
function fileTokens(file, count) {
  const tokens = model.tokenize(readFileSync(file, 'utf8'));
  if (!(Number.isInteger(count) && count > 0 && count <= tokens.length))
    throw new Error(
      `decode.mjs: --prompt-tokens ${count}: ${file} holds ${tokens.length} tokens; give 1 to ${tokens.length}`,
    );
  return tokens.slice(0, count);
}
for (let round = 1; round <= Number(values.rounds); ++round) {
  // A fresh context a round: every round decodes from the same empty cache.
  const context = await model.createContext({ threads, contextSize: prompt.length + tokens + 16 });
  let generated = 0;
  let first = 0;
  for await (const _ of context.getSequence().evaluate(prompt, { temperature: 0 })) {
    if (generated === 0) first = performance.now();
    if (++generated > tokens) break;
  }
  const seconds = (performance.now() - first) / 1000;
  console.log(
    JSON.stringify({
      round,
      threads,
      prompt_tokens: prompt.length,
      decode_tokens: tokens,
      decode_tok_s: tokens / seconds,
    }),
  );
  await context.dispose();
}
await model.dispose();
