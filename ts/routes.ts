// SPDX-License-Identifier: Apache-2.0
// Routes files: what ep-probe --save-routes writes and the EP option `routes` reads. Text, one
// entry a line, `K N rows host|device`, '#' starts a comment. For a call of M rows on (K, N) the
// EP takes the route of the largest listed rows <= M; it says nothing below the smallest listed
// rows or for a shape not listed (min_device_rows alone decides there). Reading and that lookup
// are the EP's own (engine/routes_table.cpp, through the addon); this module formats and merges.
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';

import type { RouteEntry } from './addon_types.js';
import { OnebitError } from './errors.js';
import { loadAddon } from './native.js';

export type { Route, RouteEntry } from './addon_types.js';
export { routeFor } from './rules.js';

export const ROUTES_HEADER = '# onebit routes v1: K N rows route (host|device); the largest listed rows <= M decides';

export class RoutesFileError extends OnebitError {
  constructor(message: string) {
    super('ONEBIT_OPTION', message);
  }
}

/**
 * Parses a routes file's text with the EP's own reader (the entries the EP would use); throws
 * RoutesFileError naming the line of anything malformed. Comment lines directly above a shape's
 * first entry are returned as that shape's (kept when ep-probe rewrites the file).
 */
export function parseRoutes(
  text: string,
  file = 'routes file',
): { entries: RouteEntry[]; comments: Map<string, string[]> } {
  let entries: RouteEntry[];
  try {
    entries = loadAddon().parseRoutes(text, file);
  } catch (error) {
    throw new RoutesFileError((error as Error).message);
  }
  const comments = new Map<string, string[]>();
  let pending: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      if (line !== ROUTES_HEADER && !line.startsWith('# onebit routes v')) pending.push(line);
      continue;
    }
    const [K, N] = line.split(/\s+/);
    const key = `${K}x${N}`;
    if (pending.length > 0 && !comments.has(key)) comments.set(key, pending);
    pending = [];
  }
  return { entries, comments };
}

/**
 * A routes file's text: the header, then each shape (sorted by K, N) with its comments and rows.
 * Throws RoutesFileError for an entry the file's reader would refuse or misread (K, N or rows not
 * an integer >= 1, a route not host or device); a comment is kept to one comment line.
 */
export function formatRoutes(entries: RouteEntry[], comments = new Map<string, string[]>()): string {
  for (const e of entries) {
    if (
      ![e.K, e.N, e.rows].every((v) => Number.isSafeInteger(v) && v >= 1) ||
      (e.route !== 'host' && e.route !== 'device')
    )
      throw new RoutesFileError(
        `cannot write routes entry K=${e.K} N=${e.N} rows=${e.rows} route=${String(e.route)}: expected integers >= 1 and host or device`,
      );
  }
  const commentLine = (text: string) => `${text.startsWith('#') ? '' : '# '}${text.replace(/[\r\n]+/g, ' ')}`;
  const byShape = new Map<string, RouteEntry[]>();
  const sorted = [...entries].sort((a, b) => a.K - b.K || a.N - b.N || a.rows - b.rows);
  for (const e of sorted) {
    const key = `${e.K}x${e.N}`;
    const list = byShape.get(key) ?? [];
    if (list.length > 0 && list[list.length - 1].rows === e.rows)
      list[list.length - 1] = e; // one route per rows
    else list.push(e);
    byShape.set(key, list);
  }
  const lines = [ROUTES_HEADER];
  for (const [key, list] of byShape) {
    lines.push(...(comments.get(key) ?? []).map(commentLine));
    for (const e of list) lines.push(`${e.K} ${e.N} ${e.rows} ${e.route}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Writes `entries` (one shape) into `file`: the shape's old lines are replaced, other shapes'
 * lines kept. A malformed existing file, or one that is not a regular file, is an error (it is
 * not overwritten).
 */
export function saveRoutes(file: string, entries: RouteEntry[], comment: string): void {
  // A FIFO would block the read below, a directory fail the rename with a bare errno.
  if (existsSync(file) && !statSync(file).isFile())
    throw new RoutesFileError(`${file} is not a regular file: routes files are written only to regular files`);
  const existing = existsSync(file)
    ? parseRoutes(readFileSync(file, 'utf8'), file)
    : { entries: [], comments: new Map<string, string[]>() };
  const shapes = new Set(entries.map((e) => `${e.K}x${e.N}`));
  const kept = existing.entries.filter((e) => !shapes.has(`${e.K}x${e.N}`));
  const comments = new Map([...existing.comments].filter(([key]) => !shapes.has(key)));
  for (const key of shapes) comments.set(key, [comment]);
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, formatRoutes([...kept, ...entries], comments));
  renameSync(tmp, file);
}
