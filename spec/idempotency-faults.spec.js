'use strict';
// Exactly once under faults: a duplicate never runs twice, and is never refused for good, through
// a drain, a crash, a timeout, a reply from Redis lost or late, a claim outlived by its function
// and a Redis restart. Replicas are funcrun processes sharing a real redis-server; the lost and
// late replies go through a loopback proxy that drops or holds exactly the reply in question.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { CloudEvent, HTTP } = require('cloudevents');
const { project, runServing, serve, request } = require('./helpers');
const { startRedis, redisProxy } = require('./redis');

const ROOT = path.join(__dirname, '..');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Each run appends a line (the process and the event's type) to `runs`. An event of type `slow`
// takes 800 ms; `crash` crashes the process the first time it runs (an exception in a timer,
// while the handler waits), and answers the next time. Its `log` turns on what tells a fault's
// invocation on Node 22 (scope.ts); FUNCTION_WITHOUT_LOG leaves it off there.
const FUNCRUN = JSON.stringify(path.join(ROOT, 'lib', 'index.js'));
const FUNCTION_WITHOUT_LOG = `
const fs = require('node:fs');
const path = require('node:path');
module.exports = {
  events: { idempotency: true },
  async handle(context, data) {
    const type = context.cloudevent.type;
    fs.appendFileSync(path.join(__dirname, 'runs'), process.pid + ' ' + type + '\\n');
    const crashed = path.join(__dirname, 'crashed');
    if (type === 'crash' && !fs.existsSync(crashed)) {
      fs.writeFileSync(crashed, '');
      setTimeout(() => { throw new Error('the payment provider SDK failed'); }, 50);
      await new Promise(() => {});
    }
    if (type === 'slow') await new Promise((resolve) => setTimeout(resolve, 800));
    if (type === 'hang') await new Promise(() => {});
    return context.cloudEventResponse({ charged: data.total, by: process.pid }).type('order.charged').response();
  },
};
`;
const FUNCTION = `const { log } = require(${FUNCRUN});\nlog.debug('loaded');\n${FUNCTION_WITHOUT_LOG}`;
/** Where AsyncLocalStorage is AsyncContextFrame's (Node 24), every fault is told to its invocation. */
const ALWAYS_SCOPED = !('_enable' in require('node:async_hooks').AsyncLocalStorage.prototype);

function order(type = 'order.created', data = { total: 12 }) {
  return new CloudEvent({ type, source: '/shop', data });
}

async function post(url, ce) {
  const { headers, body } = HTTP.binary(ce);
  return request(url, { method: 'POST', headers, body });
}

/** Redelivers `ce` as a broker would after a 429 or 503, every `every` ms, until another answer or `ms` pass. */
async function redeliver(url, ce, { every = 100, ms = 8000 } = {}) {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await post(url, ce);
    if ((res.status !== 429 && res.status !== 503) || Date.now() > deadline) return res;
    await sleep(every);
  }
}

/** Replicas of FUNCTION sharing the Redis at `url`: `start()` adds one, each stopped when the test ends. */
function replicas(t, url, env = {}, code = FUNCTION) {
  const folder = project({ 'index.js': code, 'func.yaml': 'name: orders\n' });
  t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
  const runs = () => {
    const file = path.join(folder, 'runs');
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  };
  const start = async () => {
    // The redis client is found from the working folder, as from a function's own node_modules.
    const proc = await runServing([folder], { env: { FUNC_IDEMPOTENCY_STORE: url, FUNC_LOG_LEVEL: 'trace', ...env }, cwd: ROOT });
    t.after(() => proc.stop('SIGKILL'));
    return proc;
  };
  return { start, runs };
}

describe('exactly once through a drain and a crash', () => {
  it('an answer given while draining (SIGTERM) is written before the process exits: the duplicate on another replica gets it, and the function ran once', async (t) => {
    const redis = await startRedis(t);
    const { start, runs } = replicas(t, redis.url);
    const [a, b] = [await start(), await start()];
    const ce = order('slow');
    const first = post(a.url, ce);
    await sleep(200);
    a.child.kill('SIGTERM');
    const answered = await first;
    assert.equal(answered.status, 200);
    assert.deepEqual(await a.exited, { code: 0, signal: null });
    const duplicate = await post(b.url, ce);
    assert.equal(duplicate.status, 200);
    assert.equal(duplicate.text, answered.text);
    assert.equal(duplicate.headers.get('ce-id'), answered.headers.get('ce-id'));
    assert.equal(runs().length, 1);
  });

  it("a crash answers 500 and releases its event's claim before the process exits; the drain it starts writes the other answers", async (t) => {
    const redis = await startRedis(t);
    const { start, runs } = replicas(t, redis.url);
    const [a, b] = [await start(), await start()];
    const slow = order('slow');
    const crash = order('crash');
    const slowAnswer = post(a.url, slow);
    await sleep(100);
    const crashed = await post(a.url, crash);
    assert.equal(crashed.status, 500);
    assert.equal(crashed.json.code, 'FUNCRUN_FUNCTION_CRASHED');
    assert.equal((await slowAnswer).status, 200);
    assert.equal((await a.exited).code, 1);
    // The crashed event runs again on the other replica, at once: its claim was released.
    const retried = await post(b.url, crash);
    assert.equal(retried.status, 200);
    assert.match(retried.text, new RegExp(`"by":${b.child.pid}`));
    // The slow event, answered during the drain, is replayed, not run again.
    const duplicate = await post(b.url, slow);
    assert.equal(duplicate.text, (await slowAnswer).text);
    assert.deepEqual(
      runs().map((line) => line.split(' ')[1]),
      ['slow', 'crash', 'crash'],
    );
  });

  it(`a crash in a function that never uses log: ${ALWAYS_SCOPED ? 'told to its invocation all the same' : 'not told to its invocation (Node 22), its request cut at the end of the grace period'}, and its claim released before the exit`, async (t) => {
    const redis = await startRedis(t);
    const { start, runs } = replicas(t, redis.url, { FUNC_GRACE_PERIOD: '1s' }, FUNCTION_WITHOUT_LOG);
    const [a, b] = [await start(), await start()];
    const crash = order('crash');
    const crashed = await post(a.url, crash).catch(() => 'cut');
    if (ALWAYS_SCOPED) assert.equal(crashed.status, 500);
    else assert.equal(crashed, 'cut');
    assert.equal((await a.exited).code, 1);
    const retried = await post(b.url, crash);
    assert.equal(retried.status, 200);
    assert.equal(runs().length, 2);
  });

  it('a function still running when the drain ends (cut at the end of the grace period) has its claim released before the exit: the redelivery runs at once', async (t) => {
    const redis = await startRedis(t);
    const { start, runs } = replicas(t, redis.url, { FUNC_GRACE_PERIOD: '500ms' });
    const [a, b] = [await start(), await start()];
    const ce = order('slow');
    const cut = post(a.url, ce).catch(() => 'cut');
    await sleep(100);
    a.child.kill('SIGTERM');
    assert.equal(await cut, 'cut');
    await a.exited;
    const retried = await post(b.url, ce);
    assert.equal(retried.status, 200, retried.text);
    assert.equal(runs().length, 2);
  });

  it('a function answered 504 at its timeout and still running at the exit: its claim is released and said so, never reported as lapsing', async (t) => {
    const redis = await startRedis(t);
    const { start, runs } = replicas(t, redis.url, { FUNC_TIMEOUT: '200ms', FUNC_GRACE_PERIOD: '500ms' });
    const [a, b] = [await start(), await start()];
    const ce = order('hang');
    assert.equal((await post(a.url, ce)).status, 504);
    a.child.kill('SIGTERM');
    await a.exited;
    const lines = a.lines();
    const released = lines.find((l) => /^the process exits while the event's function still runs: its claim is released/.test(l.msg));
    assert.ok(released, a.out.stdout);
    assert.equal(released.event.id, ce.id);
    assert.ok(!lines.some((l) => /lapses on its own/.test(l.msg)), a.out.stdout);
    // Released: the redelivery runs on the other replica at once.
    const retried = post(b.url, ce).catch(() => 'cut');
    await sleep(300);
    assert.equal(runs().length, 2);
    b.child.kill('SIGKILL');
    await retried;
  });

  it('an outcome the store cannot take before the drain ends is logged with its key, and the process still exits', async (t) => {
    const redis = await startRedis(t);
    const { start } = replicas(t, redis.url, { FUNC_GRACE_PERIOD: '1s' });
    const a = await start();
    const ce = order('slow');
    const first = post(a.url, ce);
    await sleep(200);
    await redis.stop();
    assert.equal((await first).status, 200);
    a.child.kill('SIGTERM');
    assert.equal((await a.exited).code, 0);
    const line = a.lines().find((l) => /not written before the idempotency store closed/.test(l.msg));
    assert.ok(line, a.out.stdout);
    assert.equal(line.event.id, ce.id);
    // The key as stored: hashed, under the function's name.
    assert.match(line.key, /^funcrun:orders:[\w-]{43}$/);
  });
});

describe('exactly once when a reply from Redis is lost or late', () => {
  async function throughProxy(t, options = {}) {
    const redis = await startRedis(t);
    const proxy = await redisProxy(t, redis.port);
    let runs = 0;
    const { url, log } = await serve(
      t,
      (context) => {
        runs++;
        return { charged: context.cloudevent.data.total };
      },
      { idempotency: true, idempotencyStore: proxy.url, name: 'orders', logLevel: 'trace', ...options },
    );
    return { url, log, proxy, runs: () => runs };
  }

  it('a claim Redis took whose reply was lost is given back once Redis answers again: the redelivery runs, not 429 for the claim time', async (t) => {
    const { url, proxy, runs } = await throughProxy(t);
    const ce = order();
    proxy.loseReplyTo('SET');
    const lost = await post(url, ce);
    assert.equal(lost.status, 503);
    assert.equal(lost.json.code, 'FUNCRUN_STORE_UNAVAILABLE');
    assert.ok(proxy.used);
    assert.equal(runs(), 0);
    const redelivered = await redeliver(url, ce);
    assert.equal(redelivered.status, 200, redelivered.text);
    assert.equal(runs(), 1);
  });

  it('a claim whose reply came after the bound is given back: the redelivery runs once Redis has answered', async (t) => {
    const { url, proxy, runs } = await throughProxy(t);
    const ce = order();
    proxy.delayReplyTo('SET', 2500);
    assert.equal((await post(url, ce)).status, 503);
    const redelivered = await redeliver(url, ce);
    assert.equal(redelivered.status, 200, redelivered.text);
    assert.equal(runs(), 1);
  });

  it('an answer whose write never reached Redis (the connection cut) is written once Redis answers: the duplicate gets it, and the function ran once', async (t) => {
    const { url, proxy, runs } = await throughProxy(t);
    const ce = order();
    proxy.cutBefore('EVAL');
    const first = await post(url, ce);
    assert.equal(first.status, 200);
    // The answer is written once it has been sent.
    for (let i = 0; !proxy.used; i++) {
      assert.ok(i < 100, 'the write was sent');
      await sleep(20);
    }
    const duplicate = await redeliver(url, ce, { ms: 3000 });
    assert.equal(duplicate.status, 200);
    assert.equal(duplicate.text, first.text);
    assert.equal(runs(), 1);
  });

  it('a reply lost on a connection left open (replies out of step) is noticed: the connection is made again, the event runs once and its duplicate is replayed', async (t) => {
    const { url, proxy, runs, log } = await throughProxy(t);
    const ce = order();
    proxy.swallowReplyTo('SET');
    assert.equal((await post(url, ce)).status, 503);
    const first = await redeliver(url, ce);
    assert.equal(first.status, 200, first.text);
    const duplicate = await redeliver(url, ce);
    assert.equal(duplicate.text, first.text);
    assert.equal(runs(), 1);
    assert.ok(
      log.entries().some((e) => /answered out of step: connecting again/.test(e.msg)),
      log.text(),
    );
  });

  it('an answer written again after its reply came late is kept once, without a warning that the event ran twice', async (t) => {
    const { url, proxy, runs, log } = await throughProxy(t);
    const ce = order();
    proxy.delayReplyTo('EVAL', 2500);
    const first = await post(url, ce);
    assert.equal(first.status, 200);
    const duplicate = await redeliver(url, ce);
    assert.equal(duplicate.text, first.text);
    assert.equal(runs(), 1);
    assert.ok(!/ran twice/.test(log.text()), log.text());
  });

  it('an answer whose write lost its reply (Redis took it) is replayed: written again, it is not written twice', async (t) => {
    const { url, proxy, runs } = await throughProxy(t);
    const ce = order();
    proxy.loseReplyTo('EVAL');
    const first = await post(url, ce);
    assert.equal(first.status, 200);
    const duplicate = await redeliver(url, ce);
    assert.equal(duplicate.text, first.text);
    assert.equal(runs(), 1);
  });
});

describe('a claim held for as long as its function runs', () => {
  const stores = {
    memory: async () => 'memory',
    redis: async (t) => (await startRedis(t)).url,
  };
  for (const [kind, storeFor] of Object.entries(stores)) {
    it(`${kind}: a function slower than the claim time keeps its claim (extended while it runs): duplicates get 429 and it runs once`, async (t) => {
      let runs = 0;
      const { url, log } = await serve(
        t,
        async () => {
          runs++;
          await sleep(1200);
          return { runs };
        },
        { idempotency: true, idempotencyStore: await storeFor(t), name: 'orders', idempotencyClaim: 200 },
      );
      const ce = order();
      const first = post(url, ce);
      const statuses = new Set();
      for (let i = 0; i < 8; i++) {
        await sleep(120);
        statuses.add((await post(url, ce)).status);
      }
      assert.deepEqual([...statuses], [429]);
      assert.equal((await first).status, 200);
      assert.equal((await post(url, ce)).json.runs, 1);
      assert.equal(runs, 1);
      assert.ok(!log.text().includes('claim was lost'), log.text());
    });

    it(`${kind}: another event under the same source and id is refused 409, while the first runs and after, never given its answer`, async (t) => {
      let release;
      const gate = new Promise((resolve) => (release = resolve));
      const { url } = await serve(
        t,
        async (context, data) => {
          await gate;
          return { order: data.order, secret: `receipt-for-${data.order}` };
        },
        { idempotency: true, idempotencyStore: await storeFor(t), name: 'orders' },
      );
      const real = new CloudEvent({ id: 'order-1', source: '/shop', type: 'order.created', data: { order: 'alice' } });
      const forged = [real.cloneWith({ data: { order: 'mallory' } }), real.cloneWith({ type: 'order.refunded' }), real.cloneWith({ subject: 'other' })];
      const first = post(url, real);
      await sleep(100);
      for (const ce of forged) {
        const during = await post(url, ce);
        assert.equal(during.status, 409);
        assert.equal(during.json.code, 'FUNCRUN_EVENT_CONFLICT');
      }
      release();
      assert.equal((await first).json.order, 'alice');
      for (const ce of forged) {
        const after = await post(url, ce);
        assert.equal(after.status, 409);
        assert.ok(!after.text.includes('receipt-for-alice'), after.text);
      }
      // The real event, delivered again in either mode, gets its answer.
      assert.equal((await post(url, real)).json.secret, 'receipt-for-alice');
      const { headers, body } = HTTP.structured(real);
      assert.equal((await request(url, { method: 'POST', headers, body })).json.secret, 'receipt-for-alice');
    });

    it(`${kind}: one event delivered in binary mode, structured, and structured with data_base64 is one event; the same data of another media type is another`, async (t) => {
      let runs = 0;
      const { url } = await serve(t, () => ({ runs: ++runs }), { idempotency: true, idempotencyStore: await storeFor(t), name: 'orders' });
      const cases = [
        ['application/json', '{"x":1}'],
        ['text/plain', 'hello'],
        ['application/xml', '<a x="1">b</a>'],
      ];
      for (const [type, text] of cases) {
        const id = `${type}-event`;
        const binary = await request(url, {
          method: 'POST',
          headers: { 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': '/shop', 'ce-type': 't', 'content-type': `${type}; charset=utf-8` },
          body: text,
        });
        assert.equal(binary.status, 200, type);
        const attributes = { specversion: '1.0', id, source: '/shop', type: 't', datacontenttype: type };
        for (const structured of [
          { ...attributes, data_base64: Buffer.from(text).toString('base64') },
          { ...attributes, data: type === 'application/json' ? JSON.parse(text) : text },
        ]) {
          const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structured) });
          assert.equal(res.status, 200, `${type}: ${res.text}`);
          assert.equal(res.text, binary.text);
        }
      }
      assert.equal(runs, 3);
      // "hello" as JSON is not hello as text.
      const json = await request(url, {
        method: 'POST',
        headers: { 'ce-specversion': '1.0', 'ce-id': 'text/plain-event', 'ce-source': '/shop', 'ce-type': 't', 'content-type': 'application/json' },
        body: '"hello"',
      });
      assert.equal(json.status, 409);
    });

    it(`${kind}: a single event cannot take a batch's place, whatever key the module's key function gives it`, async (t) => {
      const ran = [];
      const { url } = await serve(
        t,
        {
          events: { idempotency: { key: (event) => event.data.key } },
          handle: (context, data) => {
            ran.push(data.key);
            return { key: data.key };
          },
        },
        { idempotencyStore: await storeFor(t), name: 'orders' },
      );
      const batch = ['x', 'y'].map((key) => ({ specversion: '1.0', id: key, source: '/shop', type: 'order.created', data: { key } }));
      // A key of the form a batch of these two events is known by.
      const crafted = order('order.created', { key: JSON.stringify(['x', 'y']) });
      assert.equal((await post(url, crafted)).status, 200);
      const answer = await request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(batch) });
      assert.equal(answer.status, 204);
      assert.deepEqual(ran, [JSON.stringify(['x', 'y']), 'x', 'y']);
    });
  }
});

describe('exactly once through a Redis restart', () => {
  it('a Redis that keeps its data (an append-only file synced on each write) replays answers given before it restarted', async (t) => {
    const redis = await startRedis(t, { persistent: true });
    let runs = 0;
    const { url } = await serve(t, () => ({ runs: ++runs }), { idempotency: true, idempotencyStore: redis.url, name: 'orders' });
    const ce = order();
    assert.equal((await post(url, ce)).json.runs, 1);
    await redis.start();
    const again = await redeliver(url, ce);
    assert.equal(again.status, 200);
    assert.equal(again.json.runs, 1);
    assert.equal(runs, 1);
  });
});
