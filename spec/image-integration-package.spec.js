'use strict';
// examples/image-integration stands alone: copied out of the checkout, with funcrun installed
// from the tarball `npm pack` makes, `npm install && npm run build && npm start` serve it, and its
// specs find everything they use (funcrun/testing included) in its own dependencies. And in a
// fresh clone of the checkout, the README's and the example README's commands work in either order.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFile, execFileSync } = require('node:child_process');
const { promisify } = require('node:util');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort, waitUntilListening } = require('./helpers');
const { startRegistry } = require('./registry');

const ROOT = path.join(__dirname, '..');
const EXAMPLE = path.join(ROOT, 'examples', 'image-integration');

// npm installs from a loopback registry holding this checkout's packages (spec/registry.js), with
// none of the variables of the `npm test` running this, and none of funcrun's own.
let registry;
let ENV;
before(async () => {
  registry = await startRegistry();
  ENV = Object.fromEntries(Object.entries(registry.env).filter(([k]) => !/^(INIT_CWD$|FUNC_|PORT$)/i.test(k)));
});
after(() => registry.close());

// Asynchronous: the registry answers from this process's event loop.
async function npm(args, cwd) {
  return (await promisify(execFile)('npm', [...args, '--loglevel=error'], { cwd, env: ENV, encoding: 'utf8' })).stdout;
}

describe('examples/image-integration outside the checkout', () => {
  it('installs funcrun from its tarball, builds, serves with npm start, and its specs run', { timeout: 180_000 }, async (t) => {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-package-'));
    // lib/ is built already (npm test builds first); the tarball is what npm publishes.
    const [{ filename }] = JSON.parse(await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], ROOT));
    const outside = path.join(scratch, 'image-integration');
    fs.cpSync(EXAMPLE, outside, { recursive: true, filter: (from) => !/[/\\](node_modules|build)$/.test(from) });
    const manifestFile = path.join(outside, 'package.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    manifest.dependencies.funcrun = `file:${path.join(scratch, filename)}`;
    fs.writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));

    await npm(['install'], outside);
    assert.ok(!fs.lstatSync(path.join(outside, 'node_modules', 'funcrun')).isSymbolicLink(), 'funcrun comes from the tarball, not a link');
    await npm(['run', 'build'], outside);
    assert.ok(fs.existsSync(path.join(outside, 'build', 'index.js')));

    const port = await freePort();
    // Its own process group, so that the npm, shell and node processes all stop together.
    const child = spawn('npm', ['start'], { cwd: outside, env: { ...ENV, PORT: String(port) }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (c) => (out.stdout += c));
    child.stderr.on('data', (c) => (out.stderr += c));
    const exited = new Promise((resolve) => child.on('close', resolve));
    t.after(async () => {
      process.kill(-child.pid, 'SIGTERM');
      await exited;
    });
    // After the server has stopped (hooks run in the order they are registered).
    t.after(() => fs.rmSync(scratch, { recursive: true, force: true }));
    await waitUntilListening(port, { child, out });
    const res = await fetch(`http://127.0.0.1:${port}/v1/imageintegrations/test`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '',
    });
    const body = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.code, 3);

    // Two of its specs (the whole set runs in the workspace): the helpers resolve funcrun/testing from the tarball.
    execFileSync(process.execPath, ['--test', 'spec/json-only.spec.js', 'spec/sigv4.spec.js'], { cwd: outside, env: ENV, stdio: 'pipe' });
  });
});

// A fresh clone as a newcomer meets it: the files git has (tracked, and new ones not ignored; none
// of what npm install and the build make), in a folder whose parent has another `funcrun`, both as
// a command in node_modules/.bin and as a package, which must never run.
function freshClone(scratch) {
  const clone = path.join(scratch, 'clone');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  for (const file of files.filter(Boolean)) {
    const from = path.join(ROOT, file);
    if (!fs.existsSync(from)) continue; // deleted, not yet committed
    fs.mkdirSync(path.dirname(path.join(clone, file)), { recursive: true });
    fs.copyFileSync(from, path.join(clone, file));
    fs.chmodSync(path.join(clone, file), fs.statSync(from).mode);
  }
  // npm verifies what it fetches against the lockfile's integrity, of the tarballs registry.npmjs.org
  // serves; the loopback registry packs its own, so the install resolves the ranges instead.
  fs.rmSync(path.join(clone, 'package-lock.json'));
  const marker = path.join(scratch, 'the-other-funcrun-ran');
  const other = `#!/usr/bin/env node\nrequire('node:fs').writeFileSync(${JSON.stringify(marker)}, process.argv.join(' '));\nprocess.exit(1);\n`;
  fs.mkdirSync(path.join(scratch, 'node_modules', '.bin'), { recursive: true });
  fs.mkdirSync(path.join(scratch, 'node_modules', 'funcrun', 'lib', 'tools'), { recursive: true });
  fs.writeFileSync(
    path.join(scratch, 'node_modules', 'funcrun', 'package.json'),
    JSON.stringify({ name: 'funcrun', version: '9.9.9', bin: { funcrun: 'lib/tools/cli.js' } }),
  );
  fs.writeFileSync(path.join(scratch, 'node_modules', 'funcrun', 'lib', 'tools', 'cli.js'), other, { mode: 0o755 });
  fs.writeFileSync(path.join(scratch, 'node_modules', '.bin', 'funcrun'), other, { mode: 0o755 });
  return { clone, marker };
}

/** The first sh block of a README: the commands before the one that starts the server, and that one. */
function readmeCommands(file) {
  const block = /```sh\n([\s\S]*?)```/.exec(fs.readFileSync(file, 'utf8'))[1];
  const lines = block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
  const start = lines.findIndex((line) => /\bnpm start$/.test(line));
  return { setup: lines.slice(0, start), start: lines[start] };
}

const READMES = {
  top: { readme: 'README.md', folder: '.', check: checkHello },
  example: { readme: 'examples/image-integration/README.md', folder: 'examples/image-integration', check: checkImageIntegration },
};

async function checkHello(url) {
  const res = await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Ann"}' });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).greeting, 'Hello, Ann!');
}

async function checkImageIntegration(url) {
  // The README starts it with IMAGE_INTEGRATION_API_TOKEN=change-me.
  const refused = await fetch(`${url}/v1/imageintegrations/test`, { method: 'POST', body: '{}' });
  assert.equal(refused.status, 401);
  const res = await fetch(`${url}/v1/imageintegrations/test`, { method: 'POST', headers: { authorization: 'Bearer change-me' }, body: '{}' });
  assert.equal(res.status, 400);
  assert.match((await res.json()).message, /^invalid image integration: name: is required/);
}

/**
 * Runs a README's commands in the clone, literally, then its `npm start`, and checks what it
 * serves; with `setup: false`, only its `npm start`.
 */
async function followReadme(clone, { readme, folder, check }, { setup: withSetup = true } = {}) {
  const cwd = path.join(clone, folder);
  const { setup, start } = readmeCommands(path.join(clone, readme));
  for (const command of withSetup ? setup : []) await promisify(execFile)('sh', ['-c', command], { cwd, env: ENV, maxBuffer: 64 * 1024 * 1024 });
  const port = await freePort();
  const child = spawn('sh', ['-c', start], { cwd, env: { ...ENV, PORT: String(port) }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  child.stderr.on('data', (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.on('close', resolve));
  try {
    await waitUntilListening(port, { child, out });
    await check(`http://127.0.0.1:${port}`);
  } finally {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // It has exited already (waitUntilListening said why).
    }
    await exited;
  }
}

describe('a fresh clone, the READMEs followed as a newcomer does', () => {
  /** A fresh clone for the test `t`, removed when it ends; `marker` exists if the parent folder's funcrun ran. */
  function cloneFor(t) {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-newcomer-'));
    t.after(() => fs.rmSync(scratch, { recursive: true, force: true }));
    return freshClone(scratch);
  }
  function assertOwnFuncrun(clone, marker) {
    assert.ok(!fs.existsSync(marker), `the parent folder's funcrun ran: ${fs.existsSync(marker) && fs.readFileSync(marker, 'utf8')}`);
    // The example's funcrun is the clone's own, linked by the workspace.
    assert.equal(fs.realpathSync(path.join(clone, 'node_modules', 'funcrun')), fs.realpathSync(clone));
  }

  it(
    "README.md's commands, then npm start in the example (which they built) with no second npm install, then the example README's: each serves, with this checkout's funcrun",
    { timeout: 600_000 },
    async (t) => {
      const { clone, marker } = cloneFor(t);
      await followReadme(clone, READMES.top);
      await followReadme(clone, READMES.example, { setup: false });
      await followReadme(clone, READMES.example);
      assertOwnFuncrun(clone, marker);
    },
  );

  it("the example README's commands first (funcrun unbuilt), then README.md's: each serves, with this checkout's funcrun", { timeout: 600_000 }, async (t) => {
    const { clone, marker } = cloneFor(t);
    await followReadme(clone, READMES.example);
    await followReadme(clone, READMES.top);
    assertOwnFuncrun(clone, marker);
  });
});
