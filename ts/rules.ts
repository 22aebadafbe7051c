// SPDX-License-Identifier: Apache-2.0
// The rules TypeScript shares with the EP, each taken from the native code through the addon
// (bindings/constants.cpp) rather than written again here: device and lock values, the cost-model
// and trace-path rules, counter names, the routes lookup. The library's option checks and both
// CLIs' flag checks are built from these.
import type { OnebitDevice, OnebitDeviceLock, Route } from './addon_types.js';
import { camelCase } from './names.js';
import { loadAddon, nativeConstants } from './native.js';

export type { OnebitDevice, OnebitDeviceLock, Route } from './addon_types.js';

export { camelCase } from './names.js';

/** 'a', 'b' or 'c' */
export function quotedList(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  return quoted.length < 2 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

/** A value of the EP's device option (npu::kDeviceOptions). */
export function isDevice(value: unknown): value is OnebitDevice {
  return nativeConstants().deviceOptions.includes(value as string);
}

/** The device values as a flag's help lists them: `auto|emu|none`. */
export function devicesFlagText(): string {
  return nativeConstants().deviceOptions.join('|');
}

/** A value of the EP's device lock option (npu::kLockPolicyNames). */
export function isDeviceLock(value: unknown): value is OnebitDeviceLock {
  return nativeConstants().lockPolicies.includes(value as string);
}

/** A built-in XDNA generation's name or a cost file's path (npu::is_cost_model_reference). */
export function isCostModel(value: unknown): value is string {
  return loadAddon().isCostModel(value);
}

/** Why the EP cannot use this cost model (read by its own reader: a bad cost file fails here, at once), or null. */
export function costModelProblem(value: string): string | null {
  return loadAddon().costModelProblem(value);
}

/** A cost-model value names a file (not a generation) and is resolved as a path. */
export function isCostFile(value: string): boolean {
  return value.endsWith(nativeConstants().costFileSuffix);
}

/** What a cost model may be, in words: `'xdna1', 'xdna2' or a cost file path ending in .json` (quoted) or unquoted. */
export function costModelsText(quoted: boolean, file = 'a cost file path'): string {
  const { costModels, costFileSuffix } = nativeConstants();
  const names = quoted ? costModels.map((m) => `'${m}'`) : costModels;
  return `${names.join(', ')} or ${file} ending in ${costFileSuffix}`;
}

/** The cost-model values as a flag's help lists them: `xdna1|xdna2|FILE.json`. */
export function costModelsFlagText(): string {
  const { costModels, costFileSuffix } = nativeConstants();
  return [...costModels, `FILE${costFileSuffix}`].join('|');
}

/** A trace option's string names a file rather than being a typo (engine/ep_options' is_trace_path). */
export function isTracePath(value: unknown): value is string {
  return loadAddon().isTracePath(value);
}

/** The trace-path rule in words, as the EP's own messages give it. */
export function tracePathRule(): string {
  return nativeConstants().tracePathRule;
}

/** The EP's counters, camel-cased, in its order (engine/counters.cpp). */
export function counterNames(): string[] {
  return nativeConstants().counters.map(camelCase);
}

/** The EP's routes lookup (engine/routes_table.cpp): the route of the largest listed rows <= M for (K, N); null = no say. */
export function routeFor(
  entries: readonly { K: number; N: number; rows: number; route: Route }[],
  K: number,
  N: number,
  M: number,
): Route | null {
  return loadAddon().routeFor(entries, K, N, M);
}
