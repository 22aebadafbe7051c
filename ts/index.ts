// SPDX-License-Identifier: Apache-2.0
// onebit-ep: the onebit execution provider for onnxruntime-node. Importing this module registers
// the 'onebit' backend; use the standard onnxruntime-node API with executionProviders: ['onebit'].
export { onebit } from './onebit.js';
export type { BoundRun } from './bound_run.js';
export type { OnebitOptions, OnebitExecutionProviderOption, OnebitDevice, OnebitDeviceLock } from './options.js';
export { validateOnebitOptions } from './options.js';
export type { OnebitCounters } from './counters.js';
export type { RuntimeInfo } from './addon_types.js';
export type { OnebitDataType } from './dtypes.js';
export { SUPPORTED_DATA_TYPES } from './dtypes.js';
export {
  OnebitError,
  OnebitOptionError,
  OnebitModelNotFoundError,
  OnebitInputError,
  OnebitLibraryError,
  OnebitRuntimeError,
  OnebitSessionDisposedError,
  type OnebitErrorCode,
} from './errors.js';
export { probe, validateProbeOptions } from './probe.js';
export type { ProbeOptions, ProbeResult, ProbeRowsResult, DeviceRowsTiming, Spread } from './probe.js';
export { parseRoutes, formatRoutes, routeFor, RoutesFileError, type Route, type RouteEntry } from './routes.js';
export {
  readTrace,
  summarizeTrace,
  TraceFileError,
  type TraceCall,
  type TraceGroupSummary,
  type TraceSummary,
} from './trace.js';
