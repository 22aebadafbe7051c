// SPDX-License-Identifier: Apache-2.0
// What the CLIs share to read their flags: node:util parseArgs, lenient so that each command words
// its own mistakes, and the checks of flag values (the device and cost-model ones are the EP's
// rules, from ts/rules.ts). Mistakes throw UsageError.
import { parseArgs, type ParseArgsConfig } from 'node:util';

import { OnebitOptionError } from '../../errors.js';
import { nativeConstants } from '../../native.js';
import { type OnebitDevice, costModelProblem, costModelsText, isCostModel, isDevice } from '../../rules.js';

export class UsageError extends OnebitOptionError {}

export type FlagOptions = NonNullable<ParseArgsConfig['options']>;

/**
 * argv read against `options` (every flag, positional and token), and the first flag that
 * `options` does not name, as written. A string flag given no value reads as `true`: see text().
 */
export function readFlags(argv: readonly string[], options: FlagOptions) {
  const { values, positionals, tokens } = parseArgs({
    args: [...argv],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const unknown = tokens.find((t) => t.kind === 'option' && !Object.hasOwn(options, t.name));
  return { values, positionals, tokens, unknown: unknown?.kind === 'option' ? unknown.rawName : undefined };
}

/** A string flag's value; undefined when the flag is absent or was given without a value. */
export function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function shown(value: string | undefined): string {
  return value === undefined ? 'nothing' : `'${value}'`;
}

/** A flag's value as an integer >= min, or a UsageError naming the flag. */
export function count(flag: string, value: string | undefined, min: number): number {
  // Decimal digits only: Number() alone would take '0x20', '1e2' and ' 40 '.
  const n = value !== undefined && /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (value === undefined || !Number.isSafeInteger(n) || n < min)
    throw new UsageError(`${flag} needs an integer >= ${min}, got ${shown(value)}`);
  return n;
}

/** A comma-separated list of integers >= min (`--lens 1,32`). */
export function counts(flag: string, value: string | undefined, min: number): number[] {
  return (value ?? '').split(',').map((v) => count(flag, v.trim(), min));
}

/** A flag's value, one of `choices`. */
export function choice<T extends string>(flag: string, value: string | undefined, choices: readonly T[]): T {
  if (!choices.includes(value as T)) throw new UsageError(`${flag} takes ${choices.join(' or ')}, got ${shown(value)}`);
  return value as T;
}

/** A flag's value, not empty; `what` says what the flag needs. */
export function nonEmpty(flag: string, value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`${flag} needs ${what}`);
  return value;
}

/** A --device value, checked against the EP's device options. */
export function deviceOption(value: string | undefined): OnebitDevice {
  if (!isDevice(value))
    throw new UsageError(`--device takes ${nativeConstants().deviceOptions.join(', ')}, got '${value ?? ''}'`);
  return value;
}

/**
 * A cost-model flag's value (--cost-model, --model), checked by the EP's cost-model rule and read
 * by its reader now, so that a bad cost file fails before anything runs.
 */
export function costModelOption(flag: string, value: string | undefined): string {
  if (!isCostModel(value))
    throw new UsageError(`${flag} takes ${costModelsText(false, 'a cost file')}, got ${shown(value)}`);
  const problem = costModelProblem(value);
  if (problem !== null) throw new UsageError(`${flag} ${value}: ${problem}`);
  return value;
}
