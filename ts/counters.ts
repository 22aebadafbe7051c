// SPDX-License-Identifier: Apache-2.0
// The EP's counters, typed. The EP names them in snake_case (as in its trace line); we camel-case.

export interface OnebitCounters {
  /** Fused-group executions: every run adds one per group the EP claimed. */
  qdqRuns: number;
  /** Fused groups the EP compiled for the session (quantized MatMul groups it claimed). */
  groups: number;
  /** Counters a newer EP library reports that this version does not name yet. */
  [counter: string]: number;
}

function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

export function toCounters(raw: Record<string, number>): OnebitCounters {
  const counters: Record<string, number> = { qdqRuns: 0, groups: 0 };
  for (const [name, value] of Object.entries(raw)) counters[camelCase(name)] = value;
  return counters as OnebitCounters;
}
