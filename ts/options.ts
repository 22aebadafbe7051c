// SPDX-License-Identifier: Apache-2.0
// OnebitOptions: the EP's provider options, typed and validated before ORT sees them.
import { OnebitOptionError } from './errors.js';

/** Options of the `onebit` execution provider (the EP's provider options, camel-cased). */
export interface OnebitOptions {
  /** Offload device: 'auto' uses one if found, 'none' keeps everything on the host CPU. Default 'auto'. */
  device?: 'auto' | 'none';
  /** Calls with fewer rows than this never go to a device. Integer >= 0, default 8. */
  minDeviceRows?: number;
  /** Print the EP's counter line to stderr when the session is released. Default false. */
  trace?: boolean;
}

/** The entry for `executionProviders`: `{ name: 'onebit', ...OnebitOptions }`. */
export interface OnebitExecutionProviderOption extends OnebitOptions {
  name: 'onebit';
}

export const BACKEND_NAME = 'onebit';

const VALID_KEYS = ['device', 'minDeviceRows', 'trace'] as const;
const DEVICES = ['auto', 'none'];

// The EP's own spelling of each key, for users who copied them from the C/Python docs.
const EP_SPELLING: Record<string, string> = { min_device_rows: 'minDeviceRows' };

function suggestion(key: string): string {
  const known = EP_SPELLING[key] ?? VALID_KEYS.find((k) => k.toLowerCase() === key.toLowerCase().replace(/[_-]/g, ''));
  return known ? ` (did you mean '${known}'?)` : '';
}

/** Checks the options of our `executionProviders` entry; throws OnebitOptionError saying what is valid. */
export function validateOnebitOptions(entry: unknown): OnebitOptions {
  if (entry === undefined || entry === null || entry === BACKEND_NAME) return {};
  if (typeof entry !== 'object') throw new OnebitOptionError(`the onebit execution provider entry must be 'onebit' or an object, got ${typeof entry}`);
  const options: OnebitOptions = {};
  for (const [key, value] of Object.entries(entry)) {
    if (key === 'name') continue;
    if (key === 'device') {
      if (!DEVICES.includes(value as string))
        throw new OnebitOptionError(`onebit option device=${JSON.stringify(value)} is invalid: use 'auto' or 'none'`);
      options.device = value as 'auto' | 'none';
    } else if (key === 'minDeviceRows') {
      if (!Number.isSafeInteger(value) || (value as number) < 0)
        throw new OnebitOptionError(`onebit option minDeviceRows=${JSON.stringify(value)} is invalid: use an integer >= 0`);
      options.minDeviceRows = value as number;
    } else if (key === 'trace') {
      if (typeof value !== 'boolean') throw new OnebitOptionError(`onebit option trace=${JSON.stringify(value)} is invalid: use true or false`);
      options.trace = value;
    } else {
      throw new OnebitOptionError(`unknown onebit option '${key}'${suggestion(key)}; valid options are: ${VALID_KEYS.join(', ')}`);
    }
  }
  return options;
}

/** The EP's provider options as key/value strings (its C spelling). */
export function providerOptions(options: OnebitOptions): [string, string][] {
  const pairs: [string, string][] = [];
  if (options.device !== undefined) pairs.push(['device', options.device]);
  if (options.minDeviceRows !== undefined) pairs.push(['min_device_rows', String(options.minDeviceRows)]);
  if (options.trace !== undefined) pairs.push(['trace', options.trace ? '1' : '0']);
  return pairs;
}
