'use strict';
// docs/fetch.md and the README's fetch handler do what they say: each example is written into a
// folder inside the repository (so that 'hono' and 'funcrun' resolve as in a project), served
// with funcrun/testing, and called; the TypeScript one compiles against funcrun's types.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { serve } = require('funcrun/testing');
const { request } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const PAGE = fs.readFileSync(path.join(ROOT, 'docs', 'fetch.md'), 'utf8');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const JSON_HEADERS = { 'content-type': 'application/json' };

/** The code blocks of `text` in `language`, in order. */
function blocks(text, language) {
  return [...text.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);
}

/** The block of `text` that contains `marker`. */
function blockWith(text, language, marker) {
  const found = blocks(text, language).find((code) => code.includes(marker));
  assert.ok(found, `a ${language} block with ${marker}`);
  return found;
}

/** Writes files into a new folder under .tmp/ for the test `t`, removed after it. */
function folder(t, files) {
  const dir = fs.mkdtempSync(path.join(ROOT, '.tmp', 'docs-fetch-'));
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

fs.mkdirSync(path.join(ROOT, '.tmp'), { recursive: true });

describe('fetch handlers in the docs', () => {
  it("the README's first screen shows a fetch handler of five lines, which answers as written", async (t) => {
    const firstScreen = README.slice(0, README.indexOf('\n## Common tasks'));
    assert.match(firstScreen, /\[fetch handlers\]\(docs\/fetch\.md\)/);
    const code = blockWith(firstScreen, 'js', 'module.exports = app');
    assert.equal(code.trim().split('\n').length, 5);
    const { url } = await serve(t, folder(t, { 'index.js': code }));
    assert.deepEqual((await request(`${url}/items/7`)).json, { id: '7' });
    assert.deepEqual((await request(`${url}/echo`, { method: 'POST', headers: JSON_HEADERS, body: '{"a":1}' })).json, { a: 1 });
    assert.equal((await request(`${url}/health/readiness`)).text, 'OK');
  });

  it('the Hono app and the plain { fetch } object of "The shape" answer as written', async (t) => {
    const shape = PAGE.slice(PAGE.indexOf('## The shape'), PAGE.indexOf('## request, env and ctx'));
    const [hono, plain] = blocks(shape, 'js');
    const app = await serve(t, folder(t, { 'index.js': hono }));
    assert.deepEqual((await request(`${app.url}/items/3`)).json, { id: '3' });
    assert.deepEqual((await request(`${app.url}/echo`, { method: 'POST', headers: JSON_HEADERS, body: '[1]' })).json, { received: [1] });
    const object = await serve(t, folder(t, { 'index.js': plain }));
    const got = await request(`${object.url}/any/path?x=1`);
    assert.deepEqual(got.json, { path: '/any/path', greeting: process.env.GREETING ?? 'Hello' });
    assert.deepEqual((await request(`${object.url}/`, { method: 'POST', headers: JSON_HEADERS, body: '{"b":2}' })).json, { received: { b: 2 } });
  });

  it('the hooks beside fetch are read: properties of a CommonJS app, named exports beside an ES default', async (t) => {
    const app = "const { Hono } = require('hono');\nconst app = new Hono();\napp.get('/', (c) => c.text('app'));\n";
    const cjs = await serve(t, folder(t, { 'index.js': `${app}module.exports = app;\nmodule.exports.readiness = () => false;\n` }));
    assert.equal((await request(`${cjs.url}/health/readiness`)).status, 503);
    assert.equal((await request(cjs.url)).text, 'app');
    const esm = `import { Hono } from 'hono';\nconst app = new Hono();\napp.get('/', (c) => c.text('esm'));\nexport default app;\nexport const readiness = () => false;\n`;
    const served = await serve(t, path.join(folder(t, { 'index.mjs': esm }), 'index.mjs'));
    assert.equal((await request(`${served.url}/health/readiness`)).status, 503);
    assert.equal((await request(served.url)).text, 'esm');
  });

  it('the streaming example sends its ticks as they are made', async (t) => {
    const code = blockWith(PAGE, 'js', 'streamSSE');
    const { url } = await serve(t, folder(t, { 'index.js': code }));
    const started = performance.now();
    const res = await fetch(`${url}/ticks`);
    const arrived = [];
    let text = '';
    for await (const chunk of res.body) {
      arrived.push(performance.now() - started);
      text += Buffer.from(chunk).toString();
    }
    assert.deepEqual(
      [...text.matchAll(/data: (\d)/g)].map((m) => m[1]),
      ['1', '2', '3'],
    );
    assert.ok(arrived[0] < arrived.at(-1) - 250, `first at ${Math.round(arrived[0])} ms, last at ${Math.round(arrived.at(-1))} ms`);
  });

  it('the Vercel move dispatches by method to the exported functions', async (t) => {
    const code = blockWith(PAGE, 'js', "require('./api/items.js')");
    const vercel =
      'exports.GET = () => Response.json({ items: [] });\nexports.POST = async (request) => Response.json(await request.json(), { status: 201 });\n';
    const { url } = await serve(t, folder(t, { 'index.js': code, 'api/items.js': vercel }));
    assert.deepEqual((await request(url)).json, { items: [] });
    const posted = await request(url, { method: 'POST', headers: JSON_HEADERS, body: '{"id":1}' });
    assert.equal(posted.status, 201);
    assert.deepEqual(posted.json, { id: 1 });
    const put = await request(url, { method: 'PUT' });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get('allow'), 'GET, HEAD, POST');
  });

  it('the Hono onError that throws errors on gives funcrun the error: its JSON 500, logged with reqId', async (t) => {
    const onError = blockWith(PAGE, 'js', 'app.onError');
    const code = `const { Hono } = require('hono');\nconst app = new Hono();\napp.get('/', () => { throw new Error('secret detail'); });\n${onError}\nmodule.exports = app;\n`;
    const { url, log } = await serveLogged(t, folder(t, { 'index.js': code }));
    const res = await request(url);
    assert.equal(res.status, 500);
    assert.equal(typeof res.json.message, 'string');
    assert.doesNotMatch(res.text, /secret detail/);
    const error = log.entries().find((l) => l.level >= 50);
    assert.equal(typeof error?.reqId, 'number');
  });

  it('the event contracts example: an event is checked before fetch runs, drop() is a 204, a duplicate is replayed', async (t) => {
    const code = blockWith(PAGE, 'js', "drop('an empty order')");
    const { url } = await serve(t, folder(t, { 'index.js': code }));
    const send = (data, id = 'e1') =>
      request(url, {
        method: 'POST',
        headers: { ...JSON_HEADERS, 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': '/shop', 'ce-type': 'com.example.order.created' },
        body: JSON.stringify(data),
      });
    const first = await send({ id: 'o1', total: 5 });
    assert.deepEqual(first.json, { accepted: 'o1' });
    // The same event again: the kept answer (its data changed would be another event, a 409).
    assert.deepEqual((await send({ id: 'o1', total: 5 })).json, { accepted: 'o1' });
    assert.equal((await send({ id: 'o1', total: 6 })).status, 409);
    assert.equal((await send({ id: 'o2', total: 0 }, 'e2')).status, 204);
    const refused = await send({ id: 'o3' }, 'e3');
    assert.equal(refused.status, 400);
    assert.equal(refused.json.code, 'FUNCRUN_INVALID_EVENT_DATA');
  });

  it("docs/cloudevents.md's Hono app with events: an admitted payment is answered, drop() thrown from its route is a 204, data its contract breaks a 400", async (t) => {
    const page = fs.readFileSync(path.join(ROOT, 'docs', 'cloudevents.md'), 'utf8');
    const code = blockWith(page.slice(page.indexOf('## CloudEvents in a fetch handler'), page.indexOf('## Event contracts')), 'js', 'throw drop(');
    const { url } = await serve(t, folder(t, { 'index.js': code }));
    const pay = (amount, id) =>
      request(url, {
        method: 'POST',
        headers: { ...JSON_HEADERS, 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': '/bank', 'ce-type': 'com.example.payment.received' },
        body: JSON.stringify({ amount }),
      });
    assert.deepEqual((await pay(12, 'p1')).json, { paid: 12 });
    assert.equal((await pay(0, 'p2')).status, 204);
    const refused = await pay('twelve', 'p3');
    assert.equal(refused.status, 400);
    assert.equal(refused.json.code, 'FUNCRUN_INVALID_EVENT_DATA');
  });

  it("the moves to funcrun name the tarball funcrun's npm pack makes", () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const moving = PAGE.slice(PAGE.indexOf('## Moving to funcrun'));
    const named = [...moving.matchAll(/funcrun-(\d[^\s`]*)\.tgz/g)].map((m) => m[1]);
    assert.ok(named.length > 0);
    for (const v of named) assert.equal(v, version);
  });

  it('the Testing example is a test that passes, beside the Hono app of the first screen', (t) => {
    const app = blockWith(README.slice(0, README.indexOf('\n## Common tasks')), 'js', 'module.exports = app');
    const unit = blockWith(PAGE.slice(PAGE.indexOf('## Testing')), 'js', 'createFetchContext()');
    const dir = folder(t, { 'index.js': app, 'test/unit.js': unit });
    // A run of its own, not a subtest reported to this one (node:test marks its children so).
    const env = { ...process.env, NODE_TEST_CONTEXT: undefined };
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=spec', 'test/unit.js'], { cwd: dir, encoding: 'utf8', env });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /pass 1/);
  });

  it("the TypeScript example compiles against funcrun's FetchHandler, FetchEnv and FetchContext", (t) => {
    const code = blockWith(PAGE, 'ts', 'FetchHandler');
    const dir = folder(t, { 'handler.ts': code });
    const tsc = require.resolve('typescript/bin/tsc');
    const args = [
      '--noEmit',
      '--strict',
      '--target',
      'ES2022',
      '--lib',
      'ES2022,DOM,DOM.Iterable',
      '--module',
      'nodenext',
      '--skipLibCheck',
      '--types',
      'node',
    ];
    const result = spawnSync(process.execPath, [tsc, ...args, path.join(dir, 'handler.ts')], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(result.status, 0, result.stdout + result.stderr);
    // And a handler that returns no Response is a type error.
    const wrong = folder(t, { 'wrong.ts': `import type { FetchHandler } from 'funcrun';\nexport const h: FetchHandler = { fetch: () => ({ ok: true }) };\n` });
    const failed = spawnSync(process.execPath, [tsc, ...args, path.join(wrong, 'wrong.ts')], { cwd: ROOT, encoding: 'utf8' });
    assert.notEqual(failed.status, 0);
    assert.match(failed.stdout, /wrong\.ts\(2,\d+\): error TS2322/);
  });
});

/** serve with the log kept in a sink at the default level. */
async function serveLogged(t, func) {
  const { createLogSink } = require('funcrun/testing');
  const log = createLogSink();
  return { ...(await serve(t, func, { logDestination: log, logLevel: 'info' })), log };
}
