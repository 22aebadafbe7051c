// SPDX-License-Identifier: Apache-2.0
// Vitest global setup: every test file's temporary folders (model caches of hundreds of MB among
// them) go under one root, removed when the run ends, so runs do not fill the disk.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(path.join(os.tmpdir(), 'onebit-vitest-'));
  // The test processes are forked after this runs and inherit it; os.tmpdir() reads it per call.
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
