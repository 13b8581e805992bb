#!/usr/bin/env node
// faas-js-runtime's own test suite (spec/peers/faas-js-runtime-tests.tar.gz: its test/ folder at
// commit 53505e5) run against this checkout through start(), once in each mode: funcrun's own
// behaviour, and FUNC_COMPAT=faas-js-runtime. Fails when an assertion fails in a test that the
// list of accepted failures in docs/migrating.md does not name for that mode, so the list stays the truth.
//
//   node .ci/faas-js-runtime.js          (the checkout built; installs tape, supertest, cloudevents
//                                         from the npm registry into a scratch folder)
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..');
const scratch = mkdtempSync(join(tmpdir(), 'faas-js-runtime-suite-'));
process.on('exit', () => process.env.FAAS_KEEP === '1' || rmSync(scratch, { recursive: true, force: true }));

execFileSync('tar', ['-xzf', join(root, 'spec/peers/faas-js-runtime-tests.tar.gz'), '-C', scratch]);
// The suite requires '..': that is funcrun here, as a function's test would require the runtime.
writeFileSync(join(scratch, 'index.js'), `module.exports = require(${JSON.stringify(root)});\n`);
const upstream = JSON.parse(readFileSync(join(scratch, 'package.json'), 'utf8'));
const tools = ['tape', 'supertest', 'cloudevents'];
const deps = Object.fromEntries(Object.entries({ ...upstream.dependencies, ...upstream.devDependencies }).filter(([name]) => tools.includes(name)));
writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'faas-js-runtime-suite', private: true, dependencies: deps }));
execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent'], { cwd: scratch, stdio: ['ignore', 'ignore', 'inherit'] });

const accepted = acceptedFailures(readFileSync(join(root, 'docs', 'migrating.md'), 'utf8'));
// test-function-loading.js tests faas-js-runtime's own loader module, which funcrun does not have.
const files = readdirTests(join(scratch, 'test'));
let ok = true;
for (const mode of ['default', 'compat']) {
  const env = { ...process.env, NODE_PATH: join(root, 'node_modules') };
  delete env.FUNC_COMPAT;
  if (mode === 'compat') env.FUNC_COMPAT = 'faas-js-runtime';
  const run = spawnSync(process.execPath, [join(scratch, 'node_modules/tape/bin/tape'), ...files], { cwd: scratch, env, encoding: 'utf8', timeout: 300_000 });
  const { passed, failed } = parseTap(run.stdout);
  const unexpected = failed.filter((f) => !accepted[mode].has(f.test));
  const stale = [...accepted[mode]].filter((name) => !failed.some((f) => f.test === name));
  console.log(
    `faas-js-runtime suite, ${mode} mode: ${passed} passed, ${failed.length} failed (${failed.length - unexpected.length} of them accepted in docs/migrating.md)`,
  );
  for (const f of unexpected) console.log(`  UNEXPECTED: ${f.test} -> ${f.assertion}`);
  for (const name of stale) console.log(`  note: "${name}" is accepted for ${mode} mode in docs/migrating.md but passes now`);
  if (unexpected.length > 0 || passed === 0 || run.status === null) ok = false;
}
process.exit(ok ? 0 : 1);

function readdirTests(folder) {
  return require('node:fs')
    .readdirSync(folder)
    .filter((name) => /^test.*\.js$/.test(name) && name !== 'test-function-loading.js')
    .map((name) => join('test', name));
}

/** Tape's output: each `# name` line opens a test; `not ok N message` is a failed assertion in it. */
function parseTap(text) {
  let test = '';
  let passed = 0;
  const failed = [];
  for (const line of text.split('\n')) {
    if (/^# (tests|pass|fail|ok)\b/.test(line)) continue;
    if (line.startsWith('# ')) test = line.slice(2).trim();
    else if (/^ok \d+/.test(line)) passed++;
    else if (/^not ok \d+/.test(line)) failed.push({ test, assertion: line.replace(/^not ok \d+ ?/, '') });
  }
  return { passed, failed };
}

/** docs/migrating.md's table between the `faas-js-runtime accepted failures` markers: | mode | test | why |. */
function acceptedFailures(page) {
  const start = page.indexOf('<!-- faas-js-runtime accepted failures -->');
  const end = page.indexOf('<!-- end faas-js-runtime accepted failures -->');
  if (start === -1 || end === -1) throw new Error('docs/migrating.md has no faas-js-runtime accepted failures table');
  const out = { default: new Set(), compat: new Set() };
  for (const line of page.slice(start, end).split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 4) continue;
    const [, modes, test] = cells;
    for (const mode of modes.split(/,\s*/)) if (mode in out) out[mode].add(test.replace(/^`|`$/g, ''));
  }
  return out;
}
