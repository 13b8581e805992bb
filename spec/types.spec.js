'use strict';
// The exported types, checked by compiling TypeScript functions against them.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const TSC = require.resolve('typescript/bin/tsc');
const ROOT = path.join(__dirname, '..');

function compile(file) {
  const result = spawnSync(process.execPath, [TSC, '--noEmit', '--strict', '--target', 'ES2022', '--module', 'node16', '--moduleResolution', 'node16', '--skipLibCheck', '--types', 'node', file], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { code: result.status, output: result.stdout + result.stderr };
}

describe('exported types', () => {
  // The fixtures import 'funcrun' by name, which resolves to this package (its "exports" field)
  // and its built declarations: what a function project gets.
  it('a typed TypeScript function compiles against them', () => {
    const { code, output } = compile('spec/types/typed-function.ts');
    assert.equal(code, 0, output);
  });

  it('each mistake in a wrongly typed function is reported', () => {
    const { code, output } = compile('spec/types/wrong-function.ts');
    assert.notEqual(code, 0);
    const lines = fs.readFileSync(path.join(__dirname, 'types', 'wrong-function.ts'), 'utf8').split('\n');
    const marked = lines.map((line, i) => (line.includes('// error') ? i + 1 : 0)).filter(Boolean);
    const reported = new Set([...output.matchAll(/wrong-function\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1])));
    assert.deepEqual(marked.filter((line) => !reported.has(line)), [], output);
  });
});
