// SPDX-License-Identifier: Apache-2.0
// The TypeScript imports point one way: no module of ts/ imports itself back through others
// (type imports count too: they tie the modules together for readers and for tsc), and the
// library (ts/ outside ts/apps/) never imports the applications in ts/apps/.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsRoot = path.join(root, 'ts');
const appsRoot = path.join(tsRoot, 'apps');

// `from './x.js'` (import and export, over several lines), `import './x.js'`, `import('./x.js')`.
const specifiers = /\bfrom\s*['"]([^'"]+)['"]|\bimport\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;

const sources = readdirSync(tsRoot, { recursive: true })
  .filter((name) => /\.m?ts$/.test(name))
  .map((name) => path.join(tsRoot, name));

// Each module's relative imports, as the source files they name (.js -> .ts, .mjs -> .mts).
const imports = new Map();
for (const file of sources) {
  const named = [...readFileSync(file, 'utf8').matchAll(specifiers)].map((m) => m[1] ?? m[2] ?? m[3]);
  imports.set(
    file,
    named
      .filter((s) => s.startsWith('.'))
      .map((s) =>
        path
          .resolve(path.dirname(file), s)
          .replace(/\.js$/, '.ts')
          .replace(/\.mjs$/, '.mts'),
      ),
  );
}

const relative = (file) => path.relative(root, file);
const inApps = (file) => file.startsWith(appsRoot + path.sep);
const problems = [];

for (const [file, targets] of imports) {
  for (const target of targets) {
    if (!imports.has(target))
      problems.push(`${relative(file)} imports ${relative(target)}, which is not a module of ts/`);
    else if (!inApps(file) && inApps(target))
      problems.push(`${relative(file)} (library) imports ${relative(target)} (an application)`);
  }
}

// Depth-first search; a module met again while still on the path closes a cycle.
const state = new Map(); // file -> 'open' | 'done'
function visit(file, trail) {
  state.set(file, 'open');
  for (const target of imports.get(file) ?? []) {
    if (state.get(target) === 'open') {
      const cycle = [...trail.slice(trail.indexOf(target)), target].map(relative);
      problems.push(`import cycle: ${cycle.join(' -> ')}`);
    } else if (!state.has(target) && imports.has(target)) {
      visit(target, [...trail, target]);
    }
  }
  state.set(file, 'done');
}
for (const file of [...imports.keys()].sort()) if (!state.has(file)) visit(file, [file]);

if (problems.length > 0) {
  console.error(`ts imports:\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`ts imports: ${imports.size} modules, no cycle, the library imports no application`);
