'use strict';
// What a start costs: node's compile cache, kept beside funcrun's own files, and nothing loaded
// at start that the first requests do not need (node:crypto, the multipart parser, fs/promises).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const lib = path.join(__dirname, '..', 'lib');
// A child node, without the caller's compile-cache variables, printing what `script` writes. The
// script runs from a file: `node -e` loads node:crypto itself, before the script.
function inChild(script, env = {}) {
  const clean = { ...process.env };
  delete clean.NODE_COMPILE_CACHE;
  delete clean.NODE_DISABLE_COMPILE_CACHE;
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-startup-'));
  try {
    fs.writeFileSync(path.join(folder, 'script.js'), script);
    return execFileSync(process.execPath, [path.join(folder, 'script.js')], { env: { ...clean, ...env }, encoding: 'utf8' }).trim();
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
}

describe('start-up', () => {
  it("serve.js run as a program keeps node's compile cache in lib/.cache, before the function loads", async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-startup-'));
    try {
      fs.writeFileSync(
        path.join(folder, 'index.js'),
        "process.stderr.write('cache:' + require('node:module').getCompileCacheDir() + '\\n');\nmodule.exports = { handle: () => 'ok' };\n",
      );
      const clean = { ...process.env };
      delete clean.NODE_COMPILE_CACHE;
      delete clean.NODE_DISABLE_COMPILE_CACHE;
      const child = spawn(process.execPath, [path.join(lib, 'serve.js'), folder, '--port', '0', '--host', '127.0.0.1'], {
        env: clean,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      const line = await new Promise((resolve, reject) => {
        child.stderr.on('data', (chunk) => {
          stderr += chunk;
          const m = /cache:(.*)\n/.exec(stderr);
          if (m) resolve(m[1]);
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
      });
      child.kill('SIGTERM');
      // node keeps a folder per node version inside the one it is given.
      assert.equal(path.dirname(line), path.join(lib, '.cache'));
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('required as a module, serve.js turns nothing on; NODE_DISABLE_COMPILE_CACHE turns it off', () => {
    assert.equal(
      inChild(
        `require(${JSON.stringify(path.join(lib, 'serve.js'))}); console.log(String(require('node:module').getCompileCacheDir()), process.sourceMapsEnabled)`,
      ),
      'undefined false',
    );
    const disabled = inChild(
      `require(${JSON.stringify(path.join(lib, 'boot', 'compile-cache.js'))}); console.log(String(require('node:module').getCompileCacheDir()))`,
      { NODE_DISABLE_COMPILE_CACHE: '1' },
    );
    assert.equal(disabled, 'undefined');
  });

  it('the funcrun command turns the caches and source maps on before it loads anything else', () => {
    const out = inChild(`const seen = []; const M = require('node:module'); const load = M._load;
      M._load = function (request, ...rest) { if (request.startsWith('.')) seen.push(request); return load.call(this, request, ...rest); };
      process.argv = [process.argv[0], 'funcrun', '--version'];
      process.on('exit', () => console.log('first:' + seen.slice(0, 3).join(',')));
      require(${JSON.stringify(path.join(lib, 'tools', 'cli.js'))});`);
    assert.equal(out.split('\n').pop(), 'first:../boot/compile-cache,./code-cache,../boot/source-maps');
  });

  it('loading funcrun loads neither the multipart parser nor node:fs/promises (and its readline), nor child_process', () => {
    const out = inChild(`const before = new Set(process.moduleLoadList);
      require(${JSON.stringify(path.join(lib, 'index.js'))});
      const loaded = process.moduleLoadList.filter((m) => !before.has(m) && /fs\\/promises|readline|child_process/.test(m));
      console.log(JSON.stringify({ loaded, busboy: Object.keys(require.cache).some((f) => f.includes('busboy')) }));`);
    assert.deepEqual(JSON.parse(out.split('\n').pop()), { loaded: [], busboy: false });
  });

  it('starting a function loads no node:crypto until something needs an id', async () => {
    const out = inChild(`const before = new Set(process.moduleLoadList);
      const { start, stop } = require(${JSON.stringify(path.join(lib, 'index.js'))});
      (async () => {
        const server = await start({ handle: () => ({ ok: true }) }, { port: 0, host: '127.0.0.1', logLevel: 'silent' });
        const { port } = server.address();
        // node:http, not fetch: undici loads node:crypto itself.
        const res = await new Promise((resolve) =>
          require('node:http').request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-type': 'application/json' } }, (answer) => {
            answer.resume();
            answer.on('end', () => resolve({ status: answer.statusCode }));
          }).end('{}'),
        );
        const loaded = process.moduleLoadList.filter((m) => !before.has(m) && /crypto/.test(m));
        const metrics = await (await fetch('http://127.0.0.1:' + port + '/metrics')).text();
        await stop(server);
        console.log(JSON.stringify({ status: res.status, loaded, id: /faas_id="[^"]*-([0-9a-f-]{36})"/.exec(metrics)?.[1] }));
      })();`);
    const { status, loaded, id } = JSON.parse(out.split('\n').pop());
    assert.equal(status, 200);
    assert.deepEqual(loaded, []);
    // The metrics' instance id is made at the first scrape, still a UUID.
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
