// SPDX-License-Identifier: Apache-2.0
// onnxruntime-common SessionOptions -> the plain object the addon reads (bindings/session_config.cpp).
import type { InferenceSession } from 'onnxruntime-node';

import type { NativeSessionConfig } from './addon_types.js';
import { OnebitOptionError } from './errors.js';
import { BACKEND_NAME, providerOptions, validateOnebitOptions } from './options.js';

const OPTIMIZATION_LEVELS: Record<string, number> = { disabled: 0, basic: 1, extended: 2, layout: 3, all: 99 };
const EXECUTION_MODES: Record<string, number> = { sequential: 0, parallel: 1 };

function nonNegativeInteger(name: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 0)
    throw new OnebitOptionError(
      `session option ${name}=${JSON.stringify(value)} is invalid: use an integer >= 0`,
      name,
    );
  return value as number;
}

function oneOf(name: string, value: unknown, table: Record<string, number>): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !Object.hasOwn(table, value))
    throw new OnebitOptionError(
      `session option ${name}=${JSON.stringify(value)} is invalid: use one of ${Object.keys(table).join(', ')}`,
      name,
    );
  return table[value];
}

// `extra: { session: { disable_cpu_ep_fallback: '1' } }` -> ['session.disable_cpu_ep_fallback', '1'],
// the flattening onnxruntime-node applies too.
function flatten(prefix: string, value: unknown, out: [string, string][]): void {
  if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) flatten(prefix ? `${prefix}.${key}` : key, inner, out);
  } else if (value !== undefined) {
    out.push([prefix, String(value)]);
  }
}

/** Finds our entry in executionProviders (onnxruntime-common already dropped other backends' names). */
export function onebitEntry(options: InferenceSession.SessionOptions): unknown {
  return (options.executionProviders ?? []).find((ep) => (typeof ep === 'string' ? ep : ep.name) === BACKEND_NAME);
}

export function nativeSessionConfig(options: InferenceSession.SessionOptions = {}): NativeSessionConfig {
  const config: NativeSessionConfig = {
    intraOpNumThreads: nonNegativeInteger('intraOpNumThreads', options.intraOpNumThreads),
    interOpNumThreads: nonNegativeInteger('interOpNumThreads', options.interOpNumThreads),
    graphOptimizationLevel: oneOf('graphOptimizationLevel', options.graphOptimizationLevel, OPTIMIZATION_LEVELS),
    executionMode: oneOf('executionMode', options.executionMode, EXECUTION_MODES),
    logSeverityLevel: nonNegativeInteger('logSeverityLevel', options.logSeverityLevel),
    logVerbosityLevel: nonNegativeInteger('logVerbosityLevel', options.logVerbosityLevel),
    logId: options.logId,
    optimizedModelFilePath: options.optimizedModelFilePath,
    profileFilePrefix: options.enableProfiling ? (options.profileFilePrefix ?? 'onebit_profile') : undefined,
    enableCpuMemArena: options.enableCpuMemArena,
    enableMemPattern: options.enableMemPattern,
    configEntries: [],
    freeDimensionOverrides: [],
    epOptions: providerOptions(validateOnebitOptions(onebitEntry(options))),
  };
  if (config.logSeverityLevel !== undefined && config.logSeverityLevel > 4)
    throw new OnebitOptionError(
      `session option logSeverityLevel=${config.logSeverityLevel} is invalid: use 0 (verbose) to 4 (fatal)`,
      'logSeverityLevel',
    );
  flatten('', options.extra, config.configEntries);
  for (const [name, value] of Object.entries(options.freeDimensionOverrides ?? {}))
    config.freeDimensionOverrides.push([name, String(nonNegativeInteger(`freeDimensionOverrides.${name}`, value))]);
  return config;
}
