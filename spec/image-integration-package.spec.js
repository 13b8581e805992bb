'use strict';
// examples/image-integration stands alone: copied out of the checkout, with funcrun installed
// from the tarball `npm pack` makes, `npm install && npm run build && npm start` serve it, and its
// specs find everything they use (funcrun/testing included) in its own dependencies.
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
