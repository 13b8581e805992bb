'use strict';
// TypeScript without a build step: a project's src/index.ts runs as it is where node strips types
// (22.18 and later, 24) when its build output is missing, with --from-source, and under --watch;
// otherwise the build runs, and where node cannot strip types the error says what to do.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { project, freePort, waitUntilListening, run, runServing, request } = require('./helpers');

const CLI = path.join(__dirname, '..', 'lib', 'tools', 'cli.js');
const strips = Boolean(process.features.typescript);

// The function contract's TypeScript layout, ESM as `funcrun create` writes it: main names the build output.
function tsProject(answer, extra = {}) {
  return project({
    'package.json': JSON.stringify({ name: 'ts-fn', type: 'module', main: 'build/src/index.js' }),
    'src/index.ts': `import type { IncomingHttpHeaders } from 'node:http';
import { shout } from './shout.ts';
interface Answer { from: string; loud: string }
export function handle(context: { headers: IncomingHttpHeaders }, body?: unknown): Answer {
  return { from: ${JSON.stringify(answer)}, loud: shout(String(context.headers['x-word'] ?? 'hi')) };
}
`,
    'src/shout.ts': 'export const shout = (word: string): string => word.toUpperCase();\n',
    ...extra,
  });
}

const BUILT = { 'build/src/index.js': 'export const handle = () => ({ from: "build" });\n' };

async function answer(url) {
  return (await request(url, { headers: { 'x-word': 'hey' } })).json;
}

/** Serves `args` with serve.js for the test `t`, which stops it once the test ends. */
async function serving(t, args, options) {
  const proc = await runServing(args, options);
  t.after(() => proc.stop());
  return proc;
}

/** Runs serve.js expecting it to fail at start: its exit code and its last stderr line, parsed. */
async function failedStart(args, options) {
  const proc = run([...args, '--port', '0'], options);
  const { code } = await proc.exited;
  return { code, line: JSON.parse(proc.out.stderr.trim().split('\n').at(-1)) };
}

describe('TypeScript without a build step', { skip: !strips && 'this node does not strip types (see the last case)' }, () => {
  it('an unbuilt project runs src/index.ts, relative .ts imports and all, and says so', async (t) => {
    const proc = await serving(t, [tsProject('source')]);
    assert.deepEqual(await answer(proc.url), { from: 'source', loud: 'HEY' });
    const line = await proc.waitFor((l) => /running the TypeScript source/.test(l.msg));
    assert.match(line.msg, /"main" \(build\/src\/index\.js\) is not built/);
    assert.match(line.file, /src\/index\.ts$/);
  });

  it("an editor's dangling lock link or a newer declaration under src/ is not a reason to warn, nor to fail", async (t) => {
    const dir = tsProject('source', BUILT);
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(dir, 'build/src/index.js'), later, later);
    fs.symlinkSync('user@host.1234:1700000000', path.join(dir, 'src', '.#index.ts'));
    fs.symlinkSync('loop.ts', path.join(dir, 'src', 'loop.ts'));
    fs.writeFileSync(path.join(dir, 'src', 'types.d.ts'), 'export type X = 1;\n');
    const latest = new Date(Date.now() + 120_000);
    fs.utimesSync(path.join(dir, 'src', 'types.d.ts'), latest, latest);
    const proc = await serving(t, [dir]);
    assert.deepEqual(await answer(proc.url), { from: 'build' });
    assert.ok(!proc.lines().some((l) => l.level >= 40), proc.out.stdout);
  });

  it('a built project runs its build, and warns when a source file is newer', async (t) => {
    const dir = tsProject('source', BUILT);
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(path.join(dir, 'build/src/index.js'), old, old);
    const proc = await serving(t, [dir]);
    assert.deepEqual(await answer(proc.url), { from: 'build' });
    const warning = await proc.waitFor((l) => l.level === 40);
    assert.equal(warning.file, path.join(dir, 'build/src/index.js'));
    assert.ok([path.join(dir, 'src/index.ts'), path.join(dir, 'src/shout.ts')].includes(warning.source));
    assert.match(warning.msg, /the build is older than the source/);
    // A fresh build: no warning.
    const fresh = tsProject('source', BUILT);
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(fresh, 'build/src/index.js'), later, later);
    const quiet = await serving(t, [fresh]);
    await answer(quiet.url);
    assert.ok(!quiet.lines().some((l) => l.level >= 40), quiet.out.stdout);
  });

  it('--from-source runs the source although a build exists', async (t) => {
    const { url } = await serving(t, [tsProject('source', BUILT), '--from-source']);
    assert.deepEqual(await answer(url), { from: 'source', loud: 'HEY' });
  });

  it('a .ts file given as the target runs', async (t) => {
    const file = path.join(tsProject('file'), 'src', 'index.ts');
    const { url } = await serving(t, [file]);
    assert.deepEqual(await answer(url), { from: 'file', loud: 'HEY' });
  });

  it('funcrun serve --watch runs the source and restarts on an edit, with no tsc', async (t) => {
    const dir = tsProject('first', BUILT);
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve', dir, '--watch', '--port', String(port), '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (c) => (out.stdout += c));
    child.stderr.on('data', (c) => (out.stderr += c));
    const exited = new Promise((resolve) => child.on('close', resolve));
    const url = `http://127.0.0.1:${port}`;
    t.after(async () => {
      child.kill('SIGTERM');
      await exited;
    });
    await waitUntilListening(port, { child, out });
    assert.deepEqual(await answer(url), { from: 'first', loud: 'HEY' });
    fs.writeFileSync(path.join(dir, 'src', 'shout.ts'), 'export const shout = (word: string): string => `${word}!`;\n');
    let seen;
    for (let i = 0; i < 200 && seen?.loud !== 'hey!'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      seen = await answer(url).catch(() => seen);
    }
    assert.deepEqual(seen, { from: 'first', loud: 'hey!' });
  });

  it('syntax node cannot strip (an enum) stops the start with one line naming the file', async () => {
    const dir = tsProject('x', { 'src/index.ts': 'enum Colour { Red }\nexport const handle = () => Colour.Red;\n' });
    const { code, line } = await failedStart([dir]);
    assert.equal(code, 1);
    assert.equal(line.level, 60);
    assert.match(line.msg, /src\/index\.ts:1:1: SyntaxError: .*enum/i);
  });
});

describe('where node cannot strip types', () => {
  // On a node that strips types, turning it off is the same situation; on an older one, it is as it is.
  const execArgv = strips ? ['--no-experimental-strip-types'] : [];
  const expected = strips ? /type stripping turned off \(--no-experimental-strip-types\)/ : /use Node 22\.18 or later/;

  for (const [what, files, target] of [
    ['an unbuilt project', {}, (dir) => dir],
    ['a .ts file', {}, (dir) => path.join(dir, 'src', 'index.ts')],
  ]) {
    it(`${what}: the start fails with one line saying what to do`, async () => {
      const { code, line } = await failedStart([target(tsProject('x', files))], { execArgv });
      assert.equal(code, 1);
      assert.match(line.msg, expected);
      if (what === 'an unbuilt project') assert.match(line.msg, /npm run build/);
    });
  }

  it('a built project still runs its build', async (t) => {
    const { url } = await serving(t, [tsProject('x', BUILT)], { execArgv });
    assert.deepEqual(await answer(url), { from: 'build' });
  });

  // Knative's TypeScript templates name no "main": `npm start` serves ./build/index.js.
  for (const built of ['build/index.js', 'build/src/index.js']) {
    it(`a project without "main" runs ${built}, where its tsc put the build`, async (t) => {
      const dir = tsProject('x', { [built]: 'exports.handle = () => ({ from: "build" });\n' });
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'ts-fn' }));
      const { url } = await serving(t, [dir], { execArgv });
      assert.deepEqual(await answer(url), { from: 'build' });
    });
  }
});
