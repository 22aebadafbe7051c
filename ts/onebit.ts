// SPDX-License-Identifier: Apache-2.0
// The public `onebit` object: registration, counters, library paths.
import type { InferenceSession } from 'onnxruntime-node';

import { OnebitBackend } from './backend.js';
import { toCounters, type OnebitCounters } from './counters.js';
import { OnebitError } from './errors.js';
import { epLibraryPath, loadNative, ortLibraryPath, type RuntimeInfo } from './native.js';
import { BACKEND_NAME } from './options.js';
import { OnebitSessionHandler } from './session_handler.js';

// Below every built-in backend: only sessions that name 'onebit' ever reach it.
const BACKEND_PRIORITY = -1;

const backend = new OnebitBackend();
let backendRegistered = false;

/** Registers the backend in the CJS onnxruntime-common registry that onnxruntime-node's sessions use. */
function registerBackend(): void {
  if (backendRegistered) return;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');
  ort.registerBackend(BACKEND_NAME, backend, BACKEND_PRIORITY);
  backendRegistered = true;
}

function handlerOf(session: InferenceSession | OnebitSessionHandler): OnebitSessionHandler {
  if (session instanceof OnebitSessionHandler) return session;
  const handler = (session as unknown as { handler?: unknown }).handler;
  if (handler instanceof OnebitSessionHandler) return handler;
  throw new OnebitError(
    'ONEBIT_NOT_ONEBIT_SESSION',
    "this session does not run on the onebit backend: create it with executionProviders: ['onebit'] (after importing onebit-ep)",
  );
}

export const onebit = {
  /** The backend name to put in `executionProviders`. */
  name: BACKEND_NAME,

  /**
   * Registers the 'onebit' backend and loads ORT with our EP (idempotent). Importing onebit-ep
   * registers the backend already; calling this surfaces a missing or mismatched library now
   * rather than at the first session.
   */
  register(): RuntimeInfo {
    registerBackend();
    return loadNative().runtime;
  },

  /** The EP's counters for a session created with the onebit backend (final values after release). */
  counters(session: InferenceSession | OnebitSessionHandler): OnebitCounters {
    return handlerOf(session).counters();
  },

  /** The counters summed over every session of this process. */
  processCounters(): OnebitCounters {
    return toCounters(loadNative().addon.processCounters());
  },

  /** Absolute path of libonebit_ep.so, to register the same EP in another ORT host. */
  epLibraryPath(): string {
    return epLibraryPath();
  },

  /** Absolute path of the ORT library of onnxruntime-node, which the backend runs in. */
  ortLibraryPath(): string {
    return ortLibraryPath();
  },
};

registerBackend();
