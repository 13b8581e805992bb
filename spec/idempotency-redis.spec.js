'use strict';
// Replicas sharing one real Redis (redis-server on a loopback port, a scratch folder): the same
// event sent to two funcrun processes at the same moment runs once, and both senders end with the
// same answer. Redis unreachable: events are answered 503 with Retry-After and readiness says
// why; its password never appears in an answer or in the trace-level log.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { CloudEvent, HTTP } = require('cloudevents');
const { project, runServing, serve, request } = require('./helpers');
const { startRedis } = require('./redis');

const ROOT = path.join(__dirname, '..');
const PASSWORD = 's3cret-Redis-pass';

// Each run appends a line: the count of runs across both processes.
const FUNCTION = `
const fs = require('node:fs');
const path = require('node:path');
module.exports = {
  events: { idempotency: true },
  async handle(context, data) {
    fs.appendFileSync(path.join(__dirname, 'runs'), process.pid + '\\n');
    await new Promise((resolve) => setTimeout(resolve, 300));
    return context.cloudEventResponse({ charged: data.total, by: process.pid }).type('order.charged').response();
  },
};
`;

/** Status, headers (but Date and the connection's) and body. */
async function answerOf(res) {
  const headers = [...res.headers].filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name));
  return { status: res.status, headers, text: await res.text() };
}

/** Sends as a broker does: after a 429 or 503, again once Retry-After has passed. */
async function deliver(url, ce, seen) {
  for (let attempt = 0; attempt < 10; attempt++) {
    const { headers, body } = HTTP.binary(ce);
    const res = await fetch(url, { method: 'POST', headers, body });
    const answer = await answerOf(res);
    seen.push(answer);
    if (res.status !== 429 && res.status !== 503) return answer;
    await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get('retry-after')) * 1000));
  }
  throw new Error('still not answered');
}

async function replicas(t, redis, count = 2) {
  const folder = project({ 'index.js': FUNCTION, 'func.yaml': 'name: orders\n' });
  t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
  const env = { FUNC_IDEMPOTENCY_STORE: redis.url, FUNC_LOG_LEVEL: 'trace' };
  const started = [];
  for (let i = 0; i < count; i++) {
    // The redis client is found from the working folder, as from a function's own node_modules.
    const proc = await runServing([folder], { env, cwd: ROOT });
    t.after(() => proc.stop());
    started.push(proc);
  }
  return { folder, procs: started, runs: () => fs.readFileSync(path.join(folder, 'runs'), 'utf8').split('\n').filter(Boolean) };
}

async function post(url, ce, mode) {
  const { headers, body } = mode === 'binary' ? HTTP.binary(ce) : HTTP.structured(ce);
  return request(url, { method: 'POST', headers, body });
}

/** One event answered binary (attributes as ce-* headers, data as the body) and structured (the whole event as JSON, no ce-* header). */
function assertModes([binary, structured], data) {
  assert.equal(binary.status, 200);
  assert.equal(structured.status, 200);
  assert.deepEqual(JSON.parse(binary.text), data);
  assert.match(structured.headers.get('content-type'), /^application\/cloudevents\+json/);
  assert.deepEqual(
    [...structured.headers.keys()].filter((name) => name.startsWith('ce-')),
    [],
  );
  for (const name of ['id', 'source', 'type', 'specversion', 'time']) assert.equal(structured.json[name], binary.headers.get(`ce-${name}`), name);
  assert.deepEqual(structured.json.data, data);
}

/** Every form a leaked password could take. */
function assertNoPassword(text, where) {
  for (const form of [PASSWORD, encodeURIComponent(PASSWORD), Buffer.from(PASSWORD).toString('base64'), Buffer.from(`:${PASSWORD}`).toString('base64')]) {
    assert.ok(!text.includes(form), `${where} holds the password`);
  }
}

describe('idempotency with Redis shared by replicas', () => {
  it('the same event sent to two replicas at the same moment runs once, and both senders get the same answer', async (t) => {
    const redis = await startRedis(t, { password: PASSWORD });
    const { procs, runs } = await replicas(t, redis);
    const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: { total: 12 } });
    const seen = [];
    const [a, b] = await Promise.all(procs.map((proc) => deliver(proc.url, ce, seen)));
    assert.equal(runs().length, 1, 'the handler ran once');
    assert.equal(a.status, 200);
    assert.deepEqual(b, a);
    // One of them was told to come back while the other ran.
    assert.ok(seen.some((answer) => answer.status === 429));
    for (const answer of seen) assertNoPassword(JSON.stringify(answer), 'an answer');
    for (const proc of procs) assertNoPassword(proc.out.stdout + proc.out.stderr, 'the log');
  });

  it('ids that differ only in lone surrogates are different events: keys are hashed from UTF-16, not UTF-8', async (t) => {
    const redis = await startRedis(t);
    let runs = 0;
    const { serve } = require('./helpers');
    const { url } = await serve(t, () => ({ runs: ++runs }), { idempotency: true, idempotencyStore: redis.url, name: 'orders' });
    for (const id of ['\ud800x', '\ufffdx', '\udc00x']) {
      const body = JSON.stringify({ specversion: '1.0', id, source: 'a', type: 't' });
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body });
      assert.equal(res.status, 200);
    }
    assert.equal(runs, 3);
  });

  it("a duplicate sent to another replica in the other mode gets the answer's event in its own mode, and the function runs once", async (t) => {
    const redis = await startRedis(t);
    let runs = 0;
    const handle = (context, data) => (runs++, context.cloudEventResponse({ charged: data.total }).type('order.charged').response());
    const options = { idempotency: true, idempotencyStore: redis.url, name: 'orders' };
    const [a, b] = await Promise.all([serve(t, handle, options), serve(t, handle, options)]);
    for (const [firstMode, otherMode, total] of [
      ['binary', 'structured', 1],
      ['structured', 'binary', 2],
    ]) {
      const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: { total } });
      const first = await post(a.url, ce, firstMode);
      const other = await post(b.url, ce, otherMode);
      assert.equal(runs, total, 'the function ran once per event');
      assertModes(firstMode === 'binary' ? [first, other] : [other, first], { charged: total });
    }
  });

  it('an answer kept by the previous version (no mode in what it wrote) is replayed in the mode of the duplicate too', async (t) => {
    const redis = await startRedis(t);
    let runs = 0;
    const handle = (context, data) => (runs++, context.cloudEventResponse({ charged: data.total }).type('order.charged').response());
    const { url } = await serve(t, handle, { idempotency: true, idempotencyStore: redis.url, name: 'orders' });
    const raw = require('redis')
      .createClient({ url: redis.url })
      .withTypeMapping({ [require('redis').RESP_TYPES.BLOB_STRING]: Buffer });
    raw.on('error', () => {});
    await raw.connect();
    t.after(() => raw.close().catch(() => {}));
    for (const [firstMode, otherMode, total] of [
      ['binary', 'structured', 1],
      ['structured', 'binary', 2],
    ]) {
      const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: { total } });
      const first = await post(url, ce, firstMode);
      // The kept answer rewritten as the previous version wrote it: `a:`, the head's length, the head (status, headers, digest), the body.
      const keys = await raw.keys('funcrun:orders:*');
      assert.equal(keys.length, total);
      let rewritten = 0;
      for (const key of keys) {
        const value = await raw.get(key);
        const length = value.readUInt32BE(2);
        const head = JSON.parse(value.subarray(6, 6 + length).toString());
        if (!('mode' in head)) continue;
        assert.equal(head.mode, firstMode, 'the mode it was written in is kept');
        delete head.mode;
        const old = Buffer.from(JSON.stringify(head));
        const prefix = Buffer.alloc(6);
        prefix.write('a:');
        prefix.writeUInt32BE(old.length, 2);
        await raw.sendCommand(['SET', key, Buffer.concat([prefix, old, value.subarray(6 + length)]), 'KEEPTTL']);
        rewritten++;
      }
      assert.equal(rewritten, 1);
      const other = await post(url, ce, otherMode);
      assert.equal(runs, total, 'the function ran once per event');
      assertModes(firstMode === 'binary' ? [first, other] : [other, first], { charged: total });
    }
  });

  it('a hung Redis (paused): events are answered 503 within the bound, readiness says why, and both recover when it answers again', async (t) => {
    const redis = await startRedis(t);
    const { serve } = require('./helpers');
    const { url } = await serve(t, () => 'ok', { idempotency: true, idempotencyStore: redis.url, name: 'orders' });
    redis.process.kill('SIGSTOP');
    t.after(() => redis.process.kill('SIGCONT'));
    const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: {} });
    const { headers, body } = HTTP.binary(ce);
    const refused = await fetch(url, { method: 'POST', headers, body });
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).code, 'FUNCRUN_STORE_UNAVAILABLE');
    const notReady = await fetch(`${url}/health/readiness`);
    assert.equal(notReady.status, 503);
    assert.match((await notReady.json()).reason, /did not answer/);
    redis.process.kill('SIGCONT');
    for (let i = 0; ; i++) {
      if ((await fetch(`${url}/health/readiness`)).status === 200) break;
      assert.ok(i < 100, 'ready again once Redis answers');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal((await fetch(url, { method: 'POST', headers, body })).status, 200);
  });

  it('Redis unreachable: events are answered 503 with Retry-After and not run, readiness says why; both recover when it is back', async (t) => {
    const redis = await startRedis(t, { password: PASSWORD });
    const { procs, runs, folder } = await replicas(t, redis, 1);
    const [proc] = procs;
    await redis.stop();
    const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: { total: 1 } });
    const { headers, body } = HTTP.binary(ce);
    const started = performance.now();
    const refused = await fetch(proc.url, { method: 'POST', headers, body });
    const refusedText = await refused.text();
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '5');
    assert.equal(JSON.parse(refusedText).code, 'FUNCRUN_STORE_UNAVAILABLE');
    assert.ok(performance.now() - started < 10_000, 'answered without waiting for Redis');
    assert.ok(!fs.existsSync(path.join(folder, 'runs')), 'the function did not run without its claim');
    const notReady = await fetch(`${proc.url}/health/readiness`);
    const notReadyText = await notReady.text();
    assert.equal(notReady.status, 503);
    assert.match(JSON.parse(notReadyText).reason, /idempotency store/);

    await redis.start();
    for (let i = 0; ; i++) {
      if ((await fetch(`${proc.url}/health/readiness`)).status === 200) break;
      assert.ok(i < 200, 'ready again once Redis is back');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const again = await fetch(proc.url, { method: 'POST', headers, body });
    assert.equal(again.status, 200);
    assert.equal(runs().length, 1);
    for (const text of [refusedText, notReadyText, proc.out.stdout, proc.out.stderr]) assertNoPassword(text, 'an answer or the log');
  });

  it("functions sharing one Redis are kept apart by their names: neither answers the other's events", async (t) => {
    const redis = await startRedis(t);
    const { serve } = require('./helpers');
    const [a, b] = await Promise.all(
      ['billing', 'shipping'].map((name) => serve(t, () => ({ by: name }), { idempotency: true, idempotencyStore: redis.url, name })),
    );
    const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: {} });
    const { headers, body } = HTTP.binary(ce);
    for (const [server, name] of [
      [a, 'billing'],
      [b, 'shipping'],
    ]) {
      assert.deepEqual(await (await fetch(server.url, { method: 'POST', headers, body })).json(), { by: name });
    }
  });

  it("a shared store needs the function's name: without one (func.yaml's, or Knative's K_SERVICE) the start is refused, saying so", async (t) => {
    const redis = await startRedis(t);
    const folder = project({ 'index.js': 'module.exports = { events: { idempotency: true }, handle: () => "ok" };' });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const { run, runServing } = require('./helpers');
    const refused = run([folder], { env: { FUNC_IDEMPOTENCY_STORE: redis.url }, cwd: ROOT });
    const { code } = await refused.exited;
    assert.equal(code, 2);
    assert.match(refused.out.stderr, /set name in func\.yaml \(Knative sets K_SERVICE/);
    const named = await runServing([folder], { env: { FUNC_IDEMPOTENCY_STORE: redis.url, K_SERVICE: 'orders' }, cwd: ROOT });
    t.after(() => named.stop());
    const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: {} });
    const { headers, body } = HTTP.binary(ce);
    assert.equal((await fetch(named.url, { method: 'POST', headers, body })).status, 200);
    const raw = require('redis').createClient({ url: redis.url });
    raw.on('error', () => {}); // Redis stops before this client closes.
    await raw.connect();
    t.after(() => raw.close().catch(() => {}));
    assert.match((await raw.keys('*'))[0], /^funcrun:orders:/);
  });
});
