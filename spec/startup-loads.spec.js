'use strict';
// A function loads only what its shape uses: a plain HTTP function's start loads funcrun's core
// bundle and nothing of event contracts, idempotency, uploads, XML, fetch handlers or the funcrun command, and no
// dependency; each of those parts loads when a function or a request first needs it.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { project, runServing } = require('./helpers.js');

const ROOT = path.join(__dirname, '..');

// Preloaded into the server: at exit, the files its process loaded, relative to the checkout or
// the function's folder, and the packages it loaded from node_modules.
const RECORDER = `process.on('exit', () => {
  const files = Object.keys(require.cache);
  require('node:fs').writeFileSync(process.env.LOADS_FILE, JSON.stringify(files));
});\n`;

async function loadsOf(t, files, requests = []) {
  const folder = project(files);
  const record = path.join(folder, 'recorder.cjs');
  fs.writeFileSync(record, RECORDER);
  const loadsFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-loads-')), 'loads.json');
  t.after(() => {
    fs.rmSync(folder, { recursive: true, force: true });
    fs.rmSync(path.dirname(loadsFile), { recursive: true, force: true });
  });
  const proc = await runServing([folder], { env: { LOADS_FILE: loadsFile }, execArgv: ['--require', record] });
  let statuses = [];
  try {
    const ready = await fetch(`${proc.url}/health/readiness`);
    assert.equal(ready.status, 200);
    for (const { path: at = '/', ...init } of requests) statuses.push((await fetch(proc.url + at, { method: 'POST', ...init })).status);
  } finally {
    await proc.stop();
  }
  const loaded = JSON.parse(fs.readFileSync(loadsFile, 'utf8'));
  const own = loaded
    .filter((f) => f.startsWith(path.join(ROOT, 'lib') + path.sep))
    .map((f) => path.relative(path.join(ROOT, 'lib'), f).split(path.sep).join('/'))
    .sort();
  const packages = [
    ...new Set(loaded.filter((f) => f.includes(`${path.sep}node_modules${path.sep}`)).map((f) => /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(f)[1])),
  ].sort();
  return { own, packages, statuses };
}

const PLAIN = { 'index.js': 'module.exports = { handle: (context, body) => ({ got: typeof body }) };\n' };
const CORE = ['boot/code-cache.js', 'boot/compile-cache.js', 'boot/source-maps.js', 'runtime.js', 'serve.js'];

describe('what a start loads', () => {
  it("a plain HTTP function's start and its JSON requests load the core bundle and no dependency", async (t) => {
    const { own, packages, statuses } = await loadsOf(t, PLAIN, [{ body: '{"a":1}', headers: { 'content-type': 'application/json' } }]);
    assert.deepEqual(statuses, [200]);
    assert.deepEqual(own, CORE);
    assert.deepEqual(packages, []);
  });

  it('a multipart body loads the uploads part and its parser, at the first such request', async (t) => {
    const form = new FormData();
    form.append('name', 'ann');
    const { own, packages, statuses } = await loadsOf(t, PLAIN, [{ body: form }]);
    assert.deepEqual(statuses, [200]);
    assert.ok(own.includes('runtime-uploads.js'), own.join(', '));
    assert.ok(!own.includes('runtime-events.js'), own.join(', '));
    assert.deepEqual(packages, ['@fastify/busboy']);
  });

  it('an XML body loads the XML part and its parser', async (t) => {
    const { own, packages, statuses } = await loadsOf(t, PLAIN, [{ body: '<a>1</a>', headers: { 'content-type': 'application/xml' } }]);
    assert.deepEqual(statuses, [200]);
    assert.ok(own.includes('runtime-xml.js'), own.join(', '));
    assert.deepEqual(packages, ['@xmldom/xmldom']);
  });

  it('a module that declares event contracts loads the events part at start', async (t) => {
    const files = {
      'index.js': `module.exports = {
  events: { types: { 'com.example.ping': { type: 'object' } } },
  handle: () => undefined,
};\n`,
    };
    const { own, packages } = await loadsOf(t, files);
    assert.ok(own.includes('runtime-events.js'), own.join(', '));
    assert.ok(!own.includes('runtime-uploads.js'), own.join(', '));
    assert.ok(packages.includes('ajv'), packages.join(', '));
  });

  it('a fetch handler loads the fetch part with its first request, and no dependency', async (t) => {
    const files = { 'index.js': 'module.exports = { fetch: async (request) => Response.json({ got: await request.text() }) };\n' };
    const { own, packages, statuses } = await loadsOf(t, files, [{ body: 'hi' }]);
    assert.deepEqual(statuses, [200]);
    assert.ok(own.includes('runtime-fetch.js'), own.join(', '));
    for (const part of ['runtime-events.js', 'runtime-uploads.js', 'runtime-xml.js']) assert.ok(!own.includes(part), own.join(', '));
    assert.deepEqual(packages, []);
  });

  it('a handle function returning a Response loads the fetch part', async (t) => {
    const files = { 'index.js': "module.exports = { handle: () => new Response('web') };\n" };
    const { own, statuses } = await loadsOf(t, files, [{}]);
    assert.deepEqual(statuses, [200]);
    assert.ok(own.includes('runtime-fetch.js'), own.join(', '));
  });
});
