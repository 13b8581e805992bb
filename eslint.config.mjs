// npm run lint: eslint (with typescript-eslint) over the TypeScript sources, specs, scripts and
// examples; prettier checks the formatting (.prettierrc.json).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', 'lib/**', 'examples/image-integration/build/**', 'examples/**/*.d.ts', '**/dist/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // Unused names are errors, with `_` marking an argument kept for its position.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // `const crypto = require('node:crypto')` names the module as node's global does.
      'no-redeclare': ['error', { builtinGlobals: false }],
      // Control characters are what the escaping code looks for.
      'no-control-regex': 'off',
      // Errors thrown while handling another deliberately leave it out: it may be a client's input
      // or carry a secret, and the logged error would show it.
      'preserve-caught-error': 'off',
      // Runtime code reads hostile values: `catch {}` that deliberately ignores is the pattern.
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    // Dependencies load on first use (a plain HTTP function never loads the CloudEvents SDK, the
    // YAML parser or ajv): require() where they are needed is the point.
    files: ['src/**/*.ts', 'examples/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The loggers' methods read `arguments` rather than a rest array: no array per call when the
    // level is off, as pino's do.
    files: ['src/log/*.ts'],
    rules: { 'prefer-rest-params': 'off', '@typescript-eslint/no-this-alias': 'off' },
  },
  {
    // The public handler types take `any` where a user's own types must fit (faas-js-runtime's do
    // the same), and name a CloudEvent's picked members as an interface of their own.
    files: ['src/types.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-empty-object-type': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
