// SPDX-License-Identifier: Apache-2.0
// Lint for the TypeScript library, its applications and tests, and the Node scripts (scripts/lint.sh).
// Formatting is prettier's (.prettierrc.json); eslint-config-prettier turns off the rules it owns.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/**', 'build/**', 'prebuilds/**', 'node_modules/**', 'bench/llama_cpp/node_modules/**', '.venv/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        globalThis: 'readonly',
        SharedArrayBuffer: 'readonly',
        Atomics: 'readonly',
        AbortController: 'readonly',
      },
    },
  },
  // A name starting with _ is unused on purpose (a loop that only counts).
  { rules: { '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_' }] } },
  { files: ['**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  prettier,
);
