// SPDX-License-Identifier: Apache-2.0
// The public `onebit` object: registration, counters, library paths.
import type { InferenceSession, Tensor } from 'onnxruntime-node';

import type { RuntimeInfo } from './addon_types.js';
import { OnebitBackend } from './backend.js';
import { toCounters, type OnebitCounters } from './counters.js';
import { isSupportedDataType, onnxTypeOf, SUPPORTED_DATA_TYPES, typedArrayOf } from './dtypes.js';
import { fromNativeError, OnebitError, OnebitInputError } from './errors.js';
import { epLibraryPath, loadNative, ortLibraryPath, ortNode } from './native.js';
import { BACKEND_NAME } from './options.js';
import { OnebitSessionHandler } from './session_handler.js';
import type { BoundRun } from './bound_run.js';

// Below every built-in backend: only sessions that name 'onebit' ever reach it.
const BACKEND_PRIORITY = -1;

const backend = new OnebitBackend();
let backendRegistered = false;

/** Registers the backend in the CJS onnxruntime-common registry that onnxruntime-node's sessions use. */
function registerBackend(): void {
  if (backendRegistered) return;
  ortNode().registerBackend(BACKEND_NAME, backend, BACKEND_PRIORITY);
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

  /**
   * A zeroed CPU tensor in memory the addon owns. In a run's fetches it is written in place while
   * the run is in flight (a tensor over JS memory is filled when the run resolves instead, since JS
   * memory can be transferred or resized meanwhile); as an input it is read in place. One such
   * tensor can so be a decoder's KV cache as both past input and present output: an input and an
   * output over the same memory is for operators that work in place (GroupQueryAttention's shared
   * KV buffer, elementwise ones). Leave it alone while a run that uses it is in flight. Its memory
   * returns when the tensor is collected and the event loop turns: allocate once and reuse, not in
   * a synchronous loop.
   */
  allocateTensor(type: Tensor.Type, dims: readonly number[]): Tensor {
    if (type === 'string' || !isSupportedDataType(type))
      throw new OnebitInputError(
        `allocateTensor: type ${type} is not one onebit-ep allocates; supported: ${SUPPORTED_DATA_TYPES.filter((t) => t !== 'string').join(', ')}`,
      );
    if (!Array.isArray(dims) || !dims.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw new OnebitInputError(
        `allocateTensor: dims ${JSON.stringify(dims)} must be an array of non-negative integers`,
      );
    let buffer: ArrayBuffer;
    try {
      buffer = loadNative().addon.allocateTensor(onnxTypeOf(type), [...dims]);
    } catch (error) {
      throw fromNativeError(error);
    }
    return new (ortNode().Tensor)(type, typedArrayOf(type, buffer) as never, dims);
  },

  /**
   * Runs of a onebit session with the inputs in `feeds` and the pre-allocated outputs in `fetches`
   * fixed, as ORT's IO binding: each `run(feeds)` of the binding passes only the other inputs and
   * returns the other outputs (Tensors by name). Made for a decoder's KV cache: allocateTensor
   * buffers bound as its past inputs and present outputs, which the runs then read and write in
   * place. The fixed tensors are checked once, here; leave them as they are while the binding is used.
   */
  bind(
    session: InferenceSession | OnebitSessionHandler,
    fixed: { feeds?: Record<string, Tensor>; fetches?: Record<string, Tensor> } = {},
  ): BoundRun {
    return handlerOf(session).bind(fixed?.feeds ?? {}, fixed?.fetches ?? {});
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
