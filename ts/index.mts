// SPDX-License-Identifier: Apache-2.0
// The ESM entry: the very same CommonJS module (one backend, one addon, one ORT per process).
export {
  onebit,
  validateOnebitOptions,
  SUPPORTED_DATA_TYPES,
  OnebitError,
  OnebitOptionError,
  OnebitModelNotFoundError,
  OnebitInputError,
  OnebitLibraryError,
  OnebitRuntimeError,
  OnebitSessionDisposedError,
} from './index.js';
export type {
  OnebitOptions,
  OnebitExecutionProviderOption,
  OnebitCounters,
  RuntimeInfo,
  OnebitDataType,
  OnebitErrorCode,
} from './index.js';
