// SPDX-License-Identifier: Apache-2.0
// The EP's snake_case names as the package spells them. Imports nothing, so errors.ts can name an
// option the EP refused without importing the addon's rules.

/** The EP's snake_case names (option keys, counters) as the package spells them: `group_runs` -> `groupRuns`. */
export function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The EP's host gemm_q8 kernels as `hostKernel` reports them and ONEBIT_KERNEL names them, fastest
 *  first (kernels/gemm_q8_host.cpp's table; test_registration.py checks the two agree). */
export const HOST_KERNELS = ['amx', 'avx512vnni', 'avxvnni', 'avx2', 'portable'] as const;
