'use strict';
// `log` from funcrun: wherever it is called during an invocation (a helper module, a timer, work
// after the answer), its lines carry that invocation's reqId and trace; elsewhere it is the
// process's logger. Concurrent requests must not mix.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const { log } = require('../lib/index.js');
const { serve, request, project, runServing } = require('./helpers');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const traceOf = (n) => `${'0af7651916cd43dd8448eb211c8031'}${n.toString(16).padStart(2, '0')}`;
const traceparent = (n) => `00-${traceOf(n)}-b7ad6b7169203331-01`;

// A helper module's code: it knows nothing of the request, only `log`.
async function chargeOrder(n) {
  log.info({ n, step: 'start' }, 'charging');
  await sleep(5 + ((n * 7) % 23));
  await Promise.resolve();
  setImmediate(() => log.info({ n, step: 'immediate' }, 'charging'));
  await new Promise((resolve) => setTimeout(resolve, (n * 3) % 11));
  log.info({ n, step: 'end' }, 'charging');
  return n;
}

describe('request-scoped log', () => {
  it("under 40 concurrent requests, every helper line carries its own request's reqId and trace", async (t) => {
    const server = await serve(t, async (context) => ({ n: await chargeOrder(Number(context.query.n)) }), { logLevel: 'info' });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, n) => request(`${server.url}/?n=${n}`, { headers: { traceparent: traceparent(n) } })));
    answers.forEach((res, n) => assert.deepEqual(res.json, { n }));
    await sleep(50);
    const lines = server.log.entries().filter((l) => l.msg === 'charging');
    assert.equal(lines.length, 120);
    const reqIdOf = new Map();
    for (const line of lines) {
      assert.equal(line.trace_id, traceOf(line.n), JSON.stringify(line));
      assert.match(line.span_id, /^[0-9a-f]{16}$/);
      assert.notEqual(line.span_id, 'b7ad6b7169203331', "the invocation's own span, not the caller's");
      assert.equal(typeof line.reqId, 'number');
      if (!reqIdOf.has(line.n)) reqIdOf.set(line.n, line.reqId);
      assert.equal(line.reqId, reqIdOf.get(line.n), 'one reqId per request');
    }
    assert.equal(new Set(reqIdOf.values()).size, 40);
  });

  it('a fetch handler that returns its Response at once: what it queued as it returned logs with its reqId', async (t) => {
    const fetch = (request) => {
      void Promise.resolve().then(() => log.info({ url: request.url }, 'queued'));
      // Without a body: sent at once, as a light Response's text is.
      return new Response(null, { status: 204 });
    };
    const server = await serve(t, { fetch }, { logLevel: 'info' });
    for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/n${i}`)).status, 204);
    await sleep(20);
    const lines = server.log.entries().filter((l) => l.msg === 'queued');
    assert.equal(lines.length, 3);
    for (const line of lines) {
      assert.equal(typeof line.reqId, 'number', JSON.stringify(line));
      assert.equal(line.outlivedRequest, undefined);
    }
  });

  for (const [name, make] of [
    ['a handle function that returns at once', (queue) => ({ handle: (context) => (queue(context.method), 'ok') })],
    [
      'a fetch handler behind authorize()',
      (queue) => ({ authorize: async () => true, fetch: (request) => (queue(request.method), new Response(null, { status: 204 })) }),
    ],
    [
      'a fetch handler behind authorize() answering with a body',
      (queue) => ({ authorize: async () => true, fetch: (request) => (queue(request.method), new Response('ok')) }),
    ],
    ['an async handle function, after its await', (queue) => ({ handle: async (context) => (await null, queue(context.method), 'ok') })],
  ]) {
    it(`${name}: what it queued as it returned (a tick, a microtask) logs with its reqId, on a GET and on a POST`, async (t) => {
      const queue = (method) => {
        process.nextTick(() => log.info({ method }, 'tick'));
        queueMicrotask(() => log.info({ method }, 'microtask'));
      };
      const server = await serve(t, make(queue), { logLevel: 'info' });
      assert.ok((await request(server.url)).status < 300);
      const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 1 }) };
      assert.ok((await request(server.url, post)).status < 300);
      await sleep(20);
      const lines = server.log.entries().filter((l) => l.msg === 'tick' || l.msg === 'microtask');
      assert.deepEqual(lines.map((l) => `${l.method} ${l.msg}`).sort(), ['GET microtask', 'GET tick', 'POST microtask', 'POST tick']);
      for (const line of lines) {
        assert.equal(typeof line.reqId, 'number', JSON.stringify(line));
        assert.equal(line.outlivedRequest, undefined, JSON.stringify(line));
      }
    });
  }

  it('without a traceparent the lines carry the reqId and no trace fields', async (t) => {
    const server = await serve(t, async (context) => ({ n: await chargeOrder(Number(context.query.n)) }), { logLevel: 'info' });
    await Promise.all([1, 2, 3].map((n) => request(`${server.url}/?n=${n}`)));
    await sleep(30);
    const lines = server.log.entries().filter((l) => l.msg === 'charging');
    assert.equal(lines.length, 9);
    for (const line of lines) {
      assert.equal(typeof line.reqId, 'number');
      assert.equal(line.trace_id, undefined);
      assert.equal(line.span_id, undefined);
    }
  });

  it("outside an invocation (init, shutdown) it writes with the server's logger, without a reqId", async (t) => {
    const server = await serve(
      t,
      {
        init: () => log.info('warming up'),
        handle: () => 'ok',
        shutdown: () => log.info('closing'),
      },
      { logLevel: 'info' },
    );
    await request(server.url);
    await server.close();
    const entries = server.log.entries();
    for (const msg of ['warming up', 'closing']) {
      const line = entries.find((l) => l.msg === msg);
      assert.ok(line, msg);
      assert.equal(line.reqId, undefined);
      assert.equal(line.pid, process.pid);
    }
  });

  it("a child made at load time keeps its bindings and takes the invocation's fields", async (t) => {
    const db = log.child({ component: 'db' });
    const server = await serve(
      t,
      async () => {
        await sleep(1);
        db.info('query ran');
        db.child({ table: 'orders' }).warn('slow');
        return 'ok';
      },
      { logLevel: 'info' },
    );
    await request(server.url, { headers: { traceparent: traceparent(9) } });
    const entries = server.log.entries();
    const ran = entries.find((l) => l.msg === 'query ran');
    assert.equal(ran.component, 'db');
    assert.equal(ran.trace_id, traceOf(9));
    assert.equal(typeof ran.reqId, 'number');
    const slow = entries.find((l) => l.msg === 'slow');
    assert.deepEqual([slow.component, slow.table, slow.reqId, slow.level], ['db', 'orders', ran.reqId, 40]);
  });

  it("a child's bindings are read once, when it is made", async (t) => {
    const config = { version: 1 };
    const configured = log.child({ config });
    config.version = 2;
    const server = await serve(t, () => (configured.info('configured'), 'ok'), { logLevel: 'info' });
    await request(server.url);
    config.version = 3;
    await request(server.url);
    const lines = server.log.entries().filter((l) => l.msg === 'configured');
    assert.deepEqual(
      lines.map((l) => l.config.version),
      [1, 1],
    );
  });

  it("a returned stream's code writes with the invocation's fields", async (t) => {
    const { Readable } = require('node:stream');
    const server = await serve(
      t,
      () => ({
        body: Readable.from(
          (async function* () {
            for (let row = 0; row < 3; row++) {
              log.info({ row }, 'producing row');
              await sleep(2);
              yield `${row},`;
            }
          })(),
        ),
      }),
      { logLevel: 'info' },
    );
    const answers = await Promise.all([1, 2].map((n) => request(server.url, { headers: { traceparent: traceparent(n) } })));
    for (const res of answers) assert.equal(res.text, '0,1,2,');
    const lines = server.log.entries().filter((l) => l.msg === 'producing row');
    assert.equal(lines.length, 6);
    for (const line of lines) assert.ok(line.trace_id === traceOf(1) || line.trace_id === traceOf(2), JSON.stringify(line));
    assert.equal(new Set(lines.map((l) => `${l.reqId}/${l.trace_id}`)).size, 2);
  });

  it("a web stream returned as a structured response's body writes with the invocation's fields", async (t) => {
    const server = await serve(
      t,
      () => {
        let row = 0;
        return {
          statusCode: 201,
          body: new ReadableStream(
            {
              async pull(controller) {
                log.info({ row }, 'producing row');
                await sleep(2);
                controller.enqueue(`${row},`);
                if (++row === 3) controller.close();
              },
              // No chunk read ahead: each pull() is called by funcrun's read.
            },
            { highWaterMark: 0 },
          ),
        };
      },
      { logLevel: 'info' },
    );
    const answers = await Promise.all([1, 2].map((n) => request(server.url, { headers: { traceparent: traceparent(n) } })));
    for (const res of answers) assert.equal(res.text, '0,1,2,');
    const lines = server.log.entries().filter((l) => l.msg === 'producing row');
    assert.equal(lines.length, 6);
    for (const line of lines) assert.ok(line.trace_id === traceOf(1) || line.trace_id === traceOf(2), JSON.stringify(line));
    assert.equal(new Set(lines.map((l) => `${l.reqId}/${l.trace_id}`)).size, 2);
  });

  it("the signal's listeners and a stream's cancel(), when the client goes away mid-answer, write with the invocation's fields", async (t) => {
    const { Readable } = require('node:stream');
    const encoder = new TextEncoder();
    // Endless, until the client leaves: its cancel() (or destroy) logs.
    const webStream = (shape) =>
      new ReadableStream({
        async pull(controller) {
          controller.enqueue(encoder.encode('chunk\n'));
          await sleep(10);
        },
        cancel() {
          log.info({ shape }, 'stream stopped');
        },
      });
    const nodeStream = (shape) =>
      new Readable({
        read() {
          setTimeout(() => this.push('chunk\n'), 10);
        },
        destroy(err, callback) {
          log.info({ shape }, 'stream stopped');
          callback(err);
        },
      });
    // The signal's 'abort' listeners too, which run before the stream is stopped.
    const watched = (signal, shape) => signal.addEventListener('abort', () => log.info({ shape }, 'signal aborted'));
    const servers = {
      fetch: await serve(t, { fetch: (request) => (watched(request.signal, 'fetch'), new Response(webStream('fetch'))) }, { logLevel: 'info' }),
      'handle, web stream': await serve(t, (context) => (watched(context.signal, 'handle, web stream'), webStream('handle, web stream')), { logLevel: 'info' }),
      'handle, node stream': await serve(t, (context) => (watched(context.signal, 'handle, node stream'), { body: nodeStream('handle, node stream') }), {
        logLevel: 'info',
      }),
    };
    for (const [shape, server] of Object.entries(servers)) {
      await new Promise((resolve) => {
        const req = http.get(server.url, { headers: { traceparent: traceparent(7) } }, (res) => res.once('data', () => (req.destroy(), resolve())));
        req.on('error', () => {});
      });
      for (const msg of ['signal aborted', 'stream stopped']) {
        let line;
        for (let i = 0; i < 200 && line === undefined; i++) {
          line = server.log.entries().find((l) => l.msg === msg);
          if (line === undefined) await sleep(10);
        }
        assert.ok(line !== undefined, `${shape}: ${msg}`);
        assert.equal(line.shape, shape);
        assert.equal(typeof line.reqId, 'number', `${shape}: ${JSON.stringify(line)}`);
        assert.equal(line.trace_id, traceOf(7), `${shape}: ${JSON.stringify(line)}`);
        assert.equal(line.outlivedRequest, undefined);
      }
    }
  });

  it("follows the server's level, and a child's own level", async (t) => {
    const verbose = log.child({ part: 'verbose' }, { level: 'debug' });
    let seen;
    const server = await serve(
      t,
      () => {
        log.info('not written');
        log.warn('written');
        verbose.debug('written by the child');
        seen = { level: log.level, info: log.isLevelEnabled('info'), warn: log.isLevelEnabled('warn'), child: verbose.level };
        return 'ok';
      },
      { logLevel: 'warn' },
    );
    await request(server.url);
    assert.deepEqual(seen, { level: 'warn', info: false, warn: true, child: 'debug' });
    const msgs = server.log.entries().map((l) => l.msg);
    assert.ok(msgs.includes('written') && msgs.includes('written by the child'));
    assert.ok(!msgs.includes('not written'));
  });

  it('each event of a batch writes with its own span; work after the answer keeps the reqId', async (t) => {
    const server = await serve(
      t,
      async (context, data) => {
        await sleep(data.wait);
        log.info({ event: context.cloudevent.id }, 'handled');
        context.waitUntil(sleep(20).then(() => log.info({ event: context.cloudevent.id }, 'after the answer')));
      },
      { logLevel: 'info' },
    );
    const events = ['a', 'b'].map((id, i) => ({
      specversion: '1.0',
      id,
      source: '/spec',
      type: 'spec.batch',
      datacontenttype: 'application/json',
      data: { wait: 10 - i * 5 },
    }));
    const res = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json', traceparent: traceparent(3) },
      body: JSON.stringify(events),
    });
    assert.ok(res.status < 300, res.text);
    await sleep(60);
    const entries = server.log.entries();
    const handled = entries.filter((l) => l.msg === 'handled');
    const after = entries.filter((l) => l.msg === 'after the answer');
    assert.equal(handled.length, 2);
    assert.equal(after.length, 2);
    assert.notEqual(handled[0].span_id, handled[1].span_id);
    for (const line of [...handled, ...after]) assert.equal(line.trace_id, traceOf(3));
    for (const id of ['a', 'b']) {
      assert.equal(after.find((l) => l.event === id).span_id, handled.find((l) => l.event === id).span_id);
    }
  });

  it("work that outlives its invocation says so, without its reqId or its client's trace, and never borrows a later request's", async (t) => {
    // A poller started lazily by the first request, as a cache refresher often is.
    let poller;
    t.after(() => clearInterval(poller));
    const server = await serve(
      t,
      (context) => {
        log.info('handled');
        poller ??= setInterval(() => {
          log.info('polling');
          context.log.info('polling');
        }, 5);
        return 'ok';
      },
      { logLevel: 'info' },
    );
    const first = await request(server.url, { headers: { traceparent: traceparent(5) } });
    assert.equal(first.status, 200);
    await sleep(30);
    const second = await request(server.url, { headers: { traceparent: traceparent(6) } });
    assert.equal(second.status, 200);
    await sleep(30);
    const entries = server.log.entries();
    const handled = entries.filter((l) => l.msg === 'handled');
    const polling = entries.filter((l) => l.msg === 'polling');
    assert.equal(handled.length, 2);
    assert.ok(polling.length >= 4, `${polling.length} polling lines`);
    for (const line of polling) {
      assert.equal(line.outlivedRequest, handled[0].reqId);
      assert.equal(line.reqId, undefined);
      assert.equal(line.trace_id, undefined);
    }
  });

  it('an ES module imports it by name and serve.js scopes it', async (t) => {
    const root = path.join(__dirname, '..');
    const dir = project({
      'package.json': JSON.stringify({ name: 'esm-scope', type: 'module', main: 'index.js' }),
      'helper.js': `import { log } from ${JSON.stringify(path.join(root, 'lib', 'index.js'))};\nexport async function work(n) { await new Promise((r) => setTimeout(r, 10 - n)); log.info({ n }, 'helper'); return n; }\n`,
      'index.js': `import { work } from './helper.js';\nexport default async function handle(context) { return { n: await work(Number(context.query.n)) }; }\n`,
    });
    const proc = await runServing([dir]);
    t.after(() => proc.stop());
    await Promise.all([1, 2, 3, 4].map((n) => request(`${proc.url}/?n=${n}`, { headers: { traceparent: traceparent(n) } })));
    const lines = proc.lines().filter((l) => l.msg === 'helper');
    assert.equal(lines.length, 4);
    for (const line of lines) assert.equal(line.trace_id, traceOf(line.n));
  });
});
