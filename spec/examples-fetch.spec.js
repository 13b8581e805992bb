'use strict';
// The fetch-handler examples, served as a user serves them (node lib/serve.js, and funcrun/testing
// in-process): examples/hono, a real Hono app from the registry, and examples/fetch, a plain
// { fetch } object. Both answer the same routes; funcrun keeps its probes, limits, logs and drain.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { serve } = require('funcrun/testing');
const { runServing, request } = require('./helpers');

const EXAMPLES = path.join(__dirname, '..', 'examples');
const JSON_HEADERS = { 'content-type': 'application/json' };

/** Serves examples/<name> with node lib/serve.js for the test `t`: a 1 KiB limit on the (streamed) body, access lines on. */
async function example(t, name, env = {}) {
  const proc = await runServing([path.join(EXAMPLES, name)], { env: { FUNC_BODY_LIMIT: '1kb', FUNC_ACCESS_LOG: 'true', ...env } });
  t.after(() => proc.stop());
  return proc;
}

/** Reads a streamed answer, noting when each chunk arrived (ms after the request was sent). */
async function chunks(url, init) {
  const started = performance.now();
  const res = await fetch(url, init);
  const arrived = [];
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    arrived.push(performance.now() - started);
    text += decoder.decode(chunk, { stream: true });
  }
  return { res, arrived, text };
}

/** The server-sent events of a text/event-stream body: [{ event, id, data }]. */
function events(text) {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()])));
}

const TICKS = [1, 2, 3].map((tick) => ({ event: 'tick', id: String(tick), data: JSON.stringify({ tick }) }));

for (const name of ['hono', 'fetch']) {
  describe(`examples/${name}: a fetch handler served by funcrun`, () => {
    it('a JSON GET with a path parameter, a JSON POST echoed; a path it does not have is its own 404', async (t) => {
      const { url } = await example(t, name);
      const item = await request(`${url}/items/7`);
      assert.equal(item.status, 200);
      assert.match(item.headers.get('content-type'), /^application\/json/);
      assert.deepEqual(item.json, { id: 7, name: 'item 7' });
      assert.equal((await request(`${url}/items/seven`)).status, name === 'hono' ? 400 : 404);
      const echoed = await request(`${url}/echo`, { method: 'POST', headers: JSON_HEADERS, body: '{"message":"hello","n":[1,2]}' });
      assert.equal(echoed.status, 200);
      assert.deepEqual(echoed.json, { received: { message: 'hello', n: [1, 2] } });
      assert.equal((await request(`${url}/nowhere`)).status, 404);
    });

    it("funcrun's probes and /metrics are answered before the app", async (t) => {
      const { url } = await example(t, name, { FUNC_METRICS: 'true' });
      const ready = await request(`${url}/health/readiness`);
      assert.equal(ready.status, 200);
      assert.equal(ready.text, 'OK');
      assert.equal((await request(`${url}/health/liveness`)).status, 200);
      await request(`${url}/items/1`);
      const metrics = await request(`${url}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /^# (HELP|TYPE) /m);
    });

    it("a body past the limit is funcrun's JSON 413, with its stable code", async (t) => {
      const { url } = await example(t, name);
      const big = JSON.stringify({ text: 'x'.repeat(4096) });
      // A Content-Length over the limit, refused before the app runs.
      const declared = await request(`${url}/echo`, { method: 'POST', headers: JSON_HEADERS, body: big });
      assert.equal(declared.status, 413);
      assert.equal(declared.json.code, 'FUNCRUN_BODY_TOO_LARGE');
      // Chunked, without a length: the limit is met while the app reads it (its json() rejects).
      const chunked = new ReadableStream({
        async start(controller) {
          for (let at = 0; at < big.length; at += 512) {
            controller.enqueue(new TextEncoder().encode(big.slice(at, at + 512)));
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          controller.close();
        },
      });
      const read = await request(`${url}/echo`, { method: 'POST', headers: JSON_HEADERS, body: chunked, duplex: 'half' });
      assert.equal(read.status, 413);
      assert.equal(read.json.code, 'FUNCRUN_BODY_TOO_LARGE');
      // Just under the limit still reaches the app.
      const small = JSON.stringify({ text: 'x'.repeat(900) });
      assert.deepEqual((await request(`${url}/echo`, { method: 'POST', headers: JSON_HEADERS, body: small })).json, { received: JSON.parse(small) });
    });

    it('server-sent events stream: the first arrives well before the last', async (t) => {
      const { url } = await example(t, name);
      const { res, arrived, text } = await chunks(`${url}/ticks`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type'), /^text\/event-stream/);
      assert.deepEqual(events(text), TICKS);
      assert.ok(arrived.length >= 3, `${arrived.length} chunks`);
      // Ticks are 200 ms apart: written as produced, the first comes some 400 ms before the last.
      assert.ok(arrived[0] < arrived.at(-1) - 250, `first chunk at ${Math.round(arrived[0])} ms, last at ${Math.round(arrived.at(-1))} ms`);
    });

    it('a client that goes away cancels the stream: no more ticks are made', async (t) => {
      const proc = await example(t, name);
      const controller = new AbortController();
      const res = await fetch(`${proc.url}/ticks`, { signal: controller.signal });
      const reader = res.body.getReader();
      await reader.read();
      controller.abort();
      const cancelled = await proc.waitFor((l) => l.msg === 'ticks cancelled', 'the cancel line');
      assert.equal(typeof cancelled.reqId, 'number');
      // Still serving, and nothing logged at error level.
      assert.equal((await request(`${proc.url}/items/2`)).status, 200);
      assert.deepEqual(
        proc.lines().filter((l) => l.level >= 50),
        [],
      );
    });

    it("a throw is funcrun's JSON 500 without the message, logged at error level with reqId", async (t) => {
      const proc = await example(t, name);
      const res = await request(`${proc.url}/boom`);
      assert.equal(res.status, 500);
      assert.match(res.headers.get('content-type'), /^application\/json/);
      assert.equal(typeof res.json.message, 'string');
      assert.doesNotMatch(res.text, /10\.0\.0\.7|database/);
      const error = await proc.waitFor((l) => l.level >= 50, 'the error line');
      assert.equal(typeof error.reqId, 'number');
      assert.match(JSON.stringify(error), /the database at 10\.0\.0\.7 is down/);
    });

    it("the app's log lines carry the request's reqId, as funcrun's access line does", async (t) => {
      const proc = await example(t, name);
      await request(`${proc.url}/items/41`);
      await request(`${proc.url}/items/42`);
      const read = await proc.waitFor((l) => l.msg === 'item read' && l.id === 42, 'the item line');
      const earlier = proc.lines().find((l) => l.msg === 'item read' && l.id === 41);
      assert.equal(typeof read.reqId, 'number');
      assert.notEqual(read.reqId, earlier.reqId);
      const access = await proc.waitFor((l) => l.reqId === read.reqId && l.msg !== 'item read', 'the access line');
      assert.match(JSON.stringify(access), /\/items\/42/);
    });

    it('SIGTERM while a stream is being written: the drain lets it finish, then the process exits 0', async (t) => {
      const proc = await example(t, name);
      const res = await fetch(`${proc.url}/ticks`);
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value, { stream: true });
      proc.child.kill('SIGTERM');
      for (let part = await reader.read(); !part.done; part = await reader.read()) text += decoder.decode(part.value, { stream: true });
      assert.deepEqual(events(text), TICKS);
      assert.equal((await proc.exited).code, 0);
    });

    it('funcrun/testing serves the module in-process', async (t) => {
      const handler = require(path.join(EXAMPLES, name));
      const running = await serve(t, handler);
      assert.deepEqual((await request(`${running.url}/items/3`)).json, { id: 3, name: 'item 3' });
      const { text } = await chunks(`${running.url}/ticks`);
      assert.deepEqual(events(text), TICKS);
    });
  });
}

describe('the fetch-handler examples', () => {
  it("a Hono app's own routes property (an array) does not stop the start", async (t) => {
    const app = require(path.join(EXAMPLES, 'hono'));
    assert.ok(Array.isArray(app.routes) && app.routes.length >= 4, 'Hono keeps its routes in app.routes');
    assert.equal(typeof app.fetch, 'function');
    const proc = await example(t, 'hono');
    assert.equal((await request(`${proc.url}/items/5`)).status, 200);
    assert.ok(!proc.lines().some((l) => /routes/.test(String(l.msg)) && l.level >= 40));
  });

  it('use only the public API: hono, and funcrun by its package name', () => {
    for (const name of ['hono', 'fetch']) {
      const source = fs.readFileSync(path.join(EXAMPLES, name, 'index.js'), 'utf8');
      const required = [...source.matchAll(/(?:require\(|from )'([^']+)'/g)].map((m) => m[1]);
      for (const id of required) assert.match(id, /^(hono(\/[a-z-]+)?|funcrun(\/testing)?)$/, `${name}/index.js requires ${id}`);
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(EXAMPLES, 'hono', 'package.json'), 'utf8'));
    assert.match(manifest.devDependencies.hono, /^\^4\./);
    assert.equal(manifest.dependencies.funcrun, 'file:../..');
  });
});
