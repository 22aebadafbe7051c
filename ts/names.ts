// SPDX-License-Identifier: Apache-2.0
// The EP's snake_case names as the package spells them. Imports nothing, so errors.ts can name an
// option the EP refused without importing the addon's rules.

/** The EP's snake_case names (option keys, counters) as the package spells them: `group_runs` -> `groupRuns`. */
export function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
