'use strict';
// Stacks through funcrun name its TypeScript (lib/<module>.ts:<line>), not lines of the bundle: in
// the processes funcrun runs, the logger maps the stacks it writes through lib/runtime.js.map,
// leaving node's source maps off; a process that loads funcrun with require() keeps its own choice.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { project, runServing, request } = require('./helpers');

const checkout = path.join(__dirname, '..');
const lib = path.join(checkout, 'lib');
// The invocation calls the handler: its frame is on the stack of whatever the handler throws.
const INVOCATION_FRAME = /\(.*\bsrc[\\/]invocation\.ts:\d+:\d+\)/;

const throwing = () => project({ 'index.js': "module.exports = { handle() { throw new Error('broken on purpose'); } };\n" });

describe('source maps', () => {
  const running = [];
  after(() =>
    Promise.all(
      running.map(async (proc) => {
        proc.child.kill('SIGKILL');
        await proc.exited;
      }),
    ),
  );

  /** Serves `folder`, has its handler throw, and returns the stack of funcrun's error line and what node said on stderr. */
  async function loggedStack(folder, { env, args = [folder], script } = {}) {
    const proc = await runServing(args, { env, script });
    running.push(proc);
    assert.equal((await request(proc.url, { method: 'POST' })).status, 500);
    const line = await proc.waitFor((l) => l.level === 50 && l.err?.message === 'broken on purpose', 'the error line');
    proc.child.kill('SIGTERM');
    await proc.exited;
    return { stack: line.err.stack, stderr: proc.out.stderr };
  }

  it("node lib/serve.js logs a handler's error with funcrun's frames in its TypeScript, the bundle loaded with its code cache too", async (t) => {
    const folder = throwing();
    // A cache folder of its own: the first start fills it, the second loads the bundle with it.
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-cache-'));
    t.after(() => fs.rmSync(cache, { recursive: true, force: true }));
    const env = { NODE_COMPILE_CACHE: cache };
    const bundleCache = () =>
      fs
        .readdirSync(cache, { recursive: true })
        .map((name) => path.join(cache, name))
        .find((file) => path.basename(file) === `runtime.js.${process.version}-${process.arch}.v8cache`);
    let written;
    for (const start of ['first', 'cached']) {
      const { stack } = await loggedStack(folder, { env });
      assert.match(stack, INVOCATION_FRAME, `${start} start`);
      assert.doesNotMatch(stack, /runtime\.js/, `${start} start`);
      if (start === 'first') {
        // Written just after the first answer.
        for (let tries = 0; bundleCache() === undefined; tries++) {
          assert.ok(tries < 100, 'the bundle’s code cache was written');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        written = fs.statSync(bundleCache()).ino;
      } else assert.equal(fs.statSync(bundleCache()).ino, written, 'the cached start used the cache as it was, rather than writing another');
    }
  });

  it('frames in a part loaded on demand are named by their TypeScript too (an event contract whose validator throws)', async () => {
    const folder = project({
      'index.js': `const boom = { '~standard': { version: 1, vendor: 'spec', validate() { throw new Error('broken on purpose'); } } };
module.exports = { events: { types: { 'com.example.boom': boom } }, handle: () => ({ ok: true }) };\n`,
    });
    const proc = await runServing([folder]);
    running.push(proc);
    const headers = { 'content-type': 'application/json', 'ce-id': '1', 'ce-source': '/spec', 'ce-type': 'com.example.boom', 'ce-specversion': '1.0' };
    assert.equal((await request(proc.url, { method: 'POST', headers, body: '{}' })).status, 500);
    const line = await proc.waitFor((l) => l.level === 50 && l.err?.message === 'broken on purpose', 'the error line');
    proc.child.kill('SIGTERM');
    await proc.exited;
    assert.match(line.err.stack, /\(.*\bsrc[\\/]events[\\/]contracts\.ts:\d+:\d+\)/);
    assert.doesNotMatch(line.err.stack, /runtime-events\.js/);
  });

  it("the funcrun command and faas-js-runtime's bin/cli.js log the same frames", async () => {
    const folder = throwing();
    for (const [script, args] of [
      [path.join(lib, 'tools', 'cli.js'), ['serve', folder]],
      [path.join(checkout, 'bin', 'cli.js'), [folder]],
    ]) {
      const { stack } = await loggedStack(folder, { script, args });
      assert.match(stack, INVOCATION_FRAME, script);
    }
  });

  it("node's source maps stay off while the function loads and while it answers; a process started with them on keeps them on", async () => {
    const folder = project({
      'index.js': 'const atLoad = process.sourceMapsEnabled;\nmodule.exports = { handle: () => ({ atLoad, serving: process.sourceMapsEnabled }) };\n',
    });
    for (const [execArgv, expected] of [
      [[], { atLoad: false, serving: false }],
      [['--enable-source-maps'], { atLoad: true, serving: true }],
    ]) {
      const proc = await runServing([folder], { execArgv });
      running.push(proc);
      assert.deepEqual((await request(proc.url, { method: 'POST' })).json, expected, execArgv.join(' '));
    }
  });

  it("the map ships with the package, without the sources' text, and names only files of the checkout", () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: checkout, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    );
    for (const bundle of fs.readdirSync(lib).filter((f) => /^runtime(-[a-z]+)?\.js$/.test(f)))
      assert.ok(
        packed[0].files.some((f) => f.path === `lib/${bundle}.map`),
        `lib/${bundle}.map is not in the package`,
      );
    const map = JSON.parse(fs.readFileSync(path.join(lib, 'runtime.js.map'), 'utf8'));
    assert.equal(map.sourcesContent, undefined);
    for (const source of map.sources) assert.ok(fs.existsSync(path.join(lib, source)), `${source} does not exist`);
    assert.ok(map.sources.includes('../src/invocation.ts'));
    assert.match(fs.readFileSync(path.join(lib, 'runtime.js'), 'utf8'), /\n\/\/# sourceMappingURL=runtime\.js\.map\n?$/);
  });

  it("require('funcrun') leaves source maps to the process: off unless node is told, then funcrun's frames are mapped", async () => {
    const script = `const { start, stop } = require(${JSON.stringify(path.join(lib, 'index.js'))});
      (async () => {
        const lines = [];
        const server = await start({ handle() { throw new Error('broken on purpose'); } }, { port: 0, host: '127.0.0.1', logDestination: { write: (l) => lines.push(JSON.parse(l)) } });
        await (await fetch('http://127.0.0.1:' + server.address().port + '/', { method: 'POST' })).text();
        await stop(server);
        console.log(JSON.stringify({ enabled: process.sourceMapsEnabled, stack: lines.find((l) => l.level === 50).err.stack }));
      })();`;
    const inChild = (flags) =>
      JSON.parse(
        execFileSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8' })
          .trim()
          .split('\n')
          .pop(),
      );
    const plain = inChild([]);
    assert.equal(plain.enabled, false);
    assert.match(plain.stack, /lib[\\/]runtime\.js:\d+:\d+/);
    const told = inChild(['--enable-source-maps']);
    assert.equal(told.enabled, true);
    assert.match(told.stack, INVOCATION_FRAME);
  });
});
