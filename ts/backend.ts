// SPDX-License-Identifier: Apache-2.0
// The onnxruntime-common backend named 'onebit': what `executionProviders: ['onebit']` resolves to.
import { existsSync } from 'node:fs';

import type { Backend, InferenceSession } from 'onnxruntime-node';

import { fromNativeError, OnebitModelNotFoundError } from './errors.js';
import { loadNative } from './native.js';
import { nativeSessionConfig } from './session_options.js';
import { OnebitSessionHandler } from './session_handler.js';

export class OnebitBackend implements Backend {
  async init(): Promise<void> {
    loadNative();
  }

  async createInferenceSessionHandler(
    model: string | Uint8Array,
    options?: InferenceSession.SessionOptions,
  ): Promise<OnebitSessionHandler> {
    const config = nativeSessionConfig(options);
    if (typeof model === 'string' && !existsSync(model)) throw new OnebitModelNotFoundError(model);
    const { addon } = loadNative();
    try {
      return new OnebitSessionHandler(await addon.createSession(model, config));
    } catch (error) {
      throw fromNativeError(error);
    }
  }
}
