// SPDX-License-Identifier: Apache-2.0
// Typed errors for what users run into; each message says what to do about it.
import { camelCase } from './names.js';

export type OnebitErrorCode =
  | 'ONEBIT_OPTION' // an unknown or invalid option
  | 'ONEBIT_MODEL_NOT_FOUND' // the model file does not exist
  | 'ONEBIT_INPUT' // a feed with a wrong name, dtype or shape
  | 'ONEBIT_EP_LIBRARY' // libonebit_ep.so missing, broken, or built for another ORT API
  | 'ONEBIT_ADDON' // the native addon is not built for this platform
  | 'ONEBIT_ORT' // ONNX Runtime reported an error
  | 'ONEBIT_DISPOSED' // the session was released
  | 'ONEBIT_NOT_ONEBIT_SESSION' // counters() asked of a session another backend runs
  | 'ONEBIT_OUTPUT' // an output JS cannot carry (a type it has no array for, over 4 GiB)
  | 'ONEBIT_INTERNAL';

export class OnebitError extends Error {
  readonly code: OnebitErrorCode;
  constructor(code: OnebitErrorCode, message: string) {
    super(message);
    this.code = code;
    this.name = new.target.name;
  }
}

export class OnebitOptionError extends OnebitError {
  /** The option at fault as the caller spells it (`costModel`, `routes`), when it is one option. */
  readonly option: string | undefined;
  constructor(message: string, option?: string) {
    super('ONEBIT_OPTION', message);
    this.option = option;
  }
}

export class OnebitModelNotFoundError extends OnebitError {
  readonly path: string;
  constructor(path: string) {
    super(
      'ONEBIT_MODEL_NOT_FOUND',
      `model file not found: ${path} (pass an existing .onnx path, or the model bytes as a Uint8Array)`,
    );
    this.path = path;
  }
}

export class OnebitInputError extends OnebitError {
  constructor(message: string) {
    super('ONEBIT_INPUT', message);
  }
}

/** The EP library or the addon cannot be used: missing, or built for another ORT API. */
export class OnebitLibraryError extends OnebitError {
  constructor(code: 'ONEBIT_EP_LIBRARY' | 'ONEBIT_ADDON', message: string) {
    super(code, message);
  }
}

export class OnebitRuntimeError extends OnebitError {
  constructor(message: string) {
    super('ONEBIT_ORT', message);
  }
}

export class OnebitSessionDisposedError extends OnebitError {
  constructor(message: string) {
    super('ONEBIT_DISPOSED', message);
  }
}

/** Turns an error thrown by the native addon (which carries a `code`) into its typed class. */
export function fromNativeError(error: unknown): Error {
  if (error instanceof OnebitError || !(error instanceof Error)) return error as Error;
  const code = (error as { code?: string }).code;
  switch (code) {
    case 'ONEBIT_EP_LIBRARY':
      return new OnebitLibraryError('ONEBIT_EP_LIBRARY', error.message);
    case 'ONEBIT_INPUT':
      return new OnebitInputError(error.message);
    case 'ONEBIT_DISPOSED':
      return new OnebitSessionDisposedError(error.message);
    case 'ONEBIT_ORT':
      return new OnebitRuntimeError(error.message);
    case 'ONEBIT_OPTION': {
      // The addon names a provider option the EP refused by its key (snake_case).
      const option = (error as { option?: string }).option;
      return new OnebitOptionError(error.message, option === undefined ? undefined : camelCase(option));
    }
    case 'ONEBIT_OUTPUT':
      return new OnebitError('ONEBIT_OUTPUT', error.message);
    case 'ONEBIT_NOT_INITIALIZED':
    case 'ONEBIT_NO_COUNTERS':
    case 'ONEBIT_INTERNAL':
      return new OnebitError('ONEBIT_INTERNAL', error.message);
    default:
      return error;
  }
}
