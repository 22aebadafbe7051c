// SPDX-License-Identifier: Apache-2.0
// The JSON documents the CLIs print (ep-probe --json, ep-trace --json): strict JSON whatever the
// values. JSON.stringify writes NaN and ±Infinity as null, a number silently lost: here that is
// an error naming the field (every number of these reports is a time, a count or a ratio that
// must be finite; one that is not is a bug or a damaged input to report, not to hide). A lone
// UTF-16 surrogate, which JSON.stringify writes as an escape strict readers refuse, becomes U+FFFD.
import { OnebitError } from '../../errors.js';

export class JsonOutputError extends OnebitError {
  constructor(message: string) {
    super('ONEBIT_INTERNAL', message);
  }
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function strict(value: unknown, where: string): unknown {
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new JsonOutputError(`cannot write ${where}: ${value} is not a number JSON can hold`);
    return value;
  }
  if (typeof value === 'string') return value.replace(loneSurrogate, '\uFFFD');
  if (Array.isArray(value)) return value.map((item, i) => strict(item, `${where}[${i}]`));
  if (typeof value === 'object' && value !== null) {
    const plain =
      typeof (value as { toJSON?: unknown }).toJSON === 'function' ? (value as { toJSON(): unknown }).toJSON() : value;
    if (plain !== value) return strict(plain, where);
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [strict(key, where), strict(item, `${where}.${key}`)]),
    );
  }
  return value;
}

/** `value` as indented JSON text; JsonOutputError naming the field (under `name`) of a non-finite number. */
export function jsonText(value: unknown, name: string): string {
  return JSON.stringify(strict(value, name), null, 2);
}
