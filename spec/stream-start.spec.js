'use strict';
// A web answer (a fetch handler's Response, a `handle` function's Response or web ReadableStream),
// or a node Readable a `handle` function returns, whose body does not produce its first chunk:
// until its head is sent, the wait is bounded by the request's timeout (a JSON 504, the stream
// cancelled or destroyed, a request pipelined behind it answered), and the client leaving cancels
// the stream and ends the request. Once the head is sent, the timeout no longer applies: a stream
// that has started goes on.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { PassThrough, Readable } = require('node:stream');
const { serve, request, project, runServing } = require('./helpers');
const { exchange, statuses, firstResponse } = require('./raw');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const encoder = new TextEncoder();
const TIMEOUT_504 = { statusCode: 504, code: 'FUNCRUN_TIMEOUT', error: 'Gateway Timeout', message: 'Gateway Timeout' };
// Wide enough for a loaded machine, far below "never".
const BOUND_MS = 4000;

/** A promise that resolves with the value its `settle` is called with. */
function later() {
  let settle;
  const promise = new Promise((resolve) => (settle = resolve));
  return { promise, settle };
}

/** `promise`, or `fallback` once `ms` have passed. */
function within(promise, ms, fallback) {
  let timer;
  return Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms, fallback)))]).finally(() => clearTimeout(timer));
}

/** A body that never produces a chunk, whose cancel() settles `cancelled` with its reason. */
function neverStarting(cancelled) {
  return new ReadableStream({
    pull() {
      return new Promise(() => {});
    },
    cancel(reason) {
      cancelled.settle(reason instanceof Error ? reason.message : String(reason));
    },
  });
}

/** A fetch handler whose Response never starts on /hang (returned as `shape` says) and answers 'ok' elsewhere. */
function fetchHandler(shape, cancelled, called = later(), signal = later()) {
  return {
    fetch(request) {
      if (new URL(request.url).pathname !== '/hang') return new Response('ok');
      called.settle();
      request.signal.addEventListener('abort', () => signal.settle(request.signal.reason?.message));
      const response = new Response(neverStarting(cancelled), { headers: { 'content-type': 'text/event-stream' } });
      return shape === 'async' ? sleep(5).then(() => response) : response;
    },
  };
}

describe('a web answer whose body never starts, with a timeout', () => {
  for (const shape of ['sync', 'async']) {
    it(`a fetch handler (${shape}): funcrun's JSON 504 within the timeout, the stream cancelled, the signal aborted, logged as a timeout`, async (t) => {
      const cancelled = later();
      const signal = later();
      const server = await serve(t, fetchHandler(shape, cancelled, later(), signal), { timeout: 200, accessLog: true });
      const started = Date.now();
      const res = await within(request(`${server.url}/hang`), BOUND_MS, 'no answer');
      assert.notEqual(res, 'no answer', `no answer within ${BOUND_MS} ms`);
      assert.ok(Date.now() - started >= 150, 'not before the timeout');
      assert.equal(res.status, 504);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.deepEqual(res.json, TIMEOUT_504);
      assert.match(await within(cancelled.promise, BOUND_MS, 'not cancelled'), /did not produce its first chunk within the timeout/);
      assert.match(await within(signal.promise, BOUND_MS, 'not aborted'), /did not produce its first chunk within the timeout/);
      const failed = server.log.entries().find((line) => line.msg === 'request failed');
      assert.equal(failed?.level, 50, server.log.text());
      assert.equal(failed.statusCode, 504);
      assert.equal(typeof failed.reqId, 'number');
      const completed = server.log.entries().find((line) => line.msg === 'request completed');
      assert.equal(completed?.statusCode, 504, 'the access line is written');
    });
  }

  it('a request pipelined behind it on the same connection is answered after the 504', async (t) => {
    const server = await serve(t, fetchHandler('sync', later()), { timeout: 200 });
    const { text, timedOut } = await exchange(server.port, 'GET /hang HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', {
      wait: BOUND_MS,
    });
    assert.equal(timedOut, false, `both answered and the connection closed: ${JSON.stringify(text)}`);
    assert.deepEqual(statuses(text), [504, 200]);
    assert.ok(text.endsWith('ok'), text);
  });

  for (const [what, answer] of [
    ['a ReadableStream', (cancelled) => neverStarting(cancelled)],
    ['a Response', (cancelled) => new Response(neverStarting(cancelled))],
    [
      '{ statusCode, headers, body } with a ReadableStream body',
      (cancelled) => ({ statusCode: 201, headers: { 'x-kind': 'web' }, body: neverStarting(cancelled) }),
    ],
  ]) {
    it(`a handle function returning ${what} that never starts: the JSON 504, the stream cancelled, the signal aborted`, async (t) => {
      const cancelled = later();
      const signal = later();
      const server = await serve(
        t,
        (context) => {
          context.signal.addEventListener('abort', () => signal.settle(context.signal.reason?.message));
          return answer(cancelled);
        },
        { timeout: 200 },
      );
      const res = await within(request(server.url), BOUND_MS, 'no answer');
      assert.notEqual(res, 'no answer', `no answer within ${BOUND_MS} ms`);
      assert.equal(res.status, 504);
      assert.deepEqual(res.json, TIMEOUT_504);
      assert.match(await within(cancelled.promise, BOUND_MS, 'not cancelled'), /first chunk within the timeout/);
      assert.match(await within(signal.promise, BOUND_MS, 'not aborted'), /first chunk within the timeout/);
    });
  }

  it('a HEAD request is answered at once, its stream cancelled unread', async (t) => {
    const cancelled = later();
    const server = await serve(t, fetchHandler('sync', cancelled), { timeout: 5000 });
    const started = Date.now();
    const res = await within(request(`${server.url}/hang`, { method: 'HEAD' }), BOUND_MS, 'no answer');
    assert.notEqual(res, 'no answer');
    assert.equal(res.status, 200);
    assert.ok(Date.now() - started < 2000, 'not held until the timeout');
    assert.notEqual(await within(cancelled.promise, BOUND_MS, 'not cancelled'), 'not cancelled');
  });
});

describe('a web answer whose body never starts, and a client that leaves', () => {
  it('the stream is cancelled, the request ends (counted in the metrics), and a later request on a new connection is served', async (t) => {
    const cancelled = later();
    const called = later();
    // No timeout: only the client leaving ends the wait.
    const server = await serve(t, fetchHandler('sync', cancelled, called), { metrics: true });
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    t.after(() => socket.destroy());
    socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
    await within(called.promise, BOUND_MS);
    // The handler has returned its Response: the first read is being waited for.
    await sleep(50);
    socket.destroy();
    assert.equal(await within(cancelled.promise, BOUND_MS, 'not cancelled'), 'the client closed the connection');
    let counted;
    for (let waited = 0; waited < BOUND_MS && !/^faas_invocations\{[^}]*\} 1$/m.test(counted ?? ''); waited += 50) {
      counted = (await request(`${server.url}/metrics`)).text;
      await sleep(50);
    }
    assert.match(counted, /^faas_invocations\{[^}]*\} 1$/m, 'the request ended and was counted');
    const res = await within(request(`${server.url}/other`), BOUND_MS, 'no answer');
    assert.equal(res.text, 'ok');
  });
});

describe('a web answer that has started', () => {
  // Its first event at once, or after a wait within the timeout (which the head then waits for).
  for (const [when, first] of [
    ['at once', 0],
    ['50 ms in', 50],
  ]) {
    it(`server-sent events that start ${when} and go on past the timeout are not cut`, async (t) => {
      const server = await serve(
        t,
        {
          fetch() {
            let i = 0;
            const body = new ReadableStream({
              async pull(controller) {
                const wait = i === 0 ? first : 60;
                if (wait > 0) await sleep(wait);
                controller.enqueue(encoder.encode(`data: ${i}\n\n`));
                if (++i === 10) controller.close();
              },
            });
            return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
          },
        },
        { timeout: 150 },
      );
      const started = Date.now();
      const { text, timedOut } = await exchange(server.port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { wait: BOUND_MS });
      assert.equal(timedOut, false);
      assert.ok(Date.now() - started > 400, 'the stream ran past the timeout');
      const answer = firstResponse(text);
      assert.equal(answer.status, 200);
      const events = answer.body.match(/data: \d+/g);
      assert.deepEqual(events, ['data: 0', 'data: 1', 'data: 2', 'data: 3', 'data: 4', 'data: 5', 'data: 6', 'data: 7', 'data: 8', 'data: 9']);
      assert.ok(answer.body.endsWith('0\r\n\r\n'), 'the terminating chunk: complete');
    });
  }
});

describe('requests pipelined behind a streamed answer', () => {
  /** A fetch handler noting each request it runs; /stream answers three chunks, then fails or ends as `ending` says. */
  function streaming(ran, ending) {
    return {
      fetch(request) {
        const path = new URL(request.url).pathname;
        ran.push(`${request.method} ${path}`);
        if (path !== '/stream') return Response.json({ charged: true });
        let i = 0;
        const body = new ReadableStream({
          async pull(controller) {
            controller.enqueue(encoder.encode('chunk\n'));
            await sleep(40);
            if (++i < 3) return;
            if (ending === 'fails') controller.error(new Error('upstream failed'));
            else controller.close();
          },
        });
        return new Response(body);
      },
    };
  }
  const pipelined =
    'GET /stream HTTP/1.1\r\nHost: x\r\n\r\nPOST /charge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}';

  it('behind one that fails midway, a request is not run: its answer could never be sent, and its client sends it again', async (t) => {
    const ran = [];
    const server = await serve(t, streaming(ran, 'fails'));
    const { text, timedOut } = await exchange(server.port, pipelined, { wait: BOUND_MS });
    assert.equal(timedOut, false);
    assert.deepEqual(statuses(text), [200]);
    assert.ok(!text.endsWith('0\r\n\r\n'), 'no terminating chunk: cut');
    await sleep(100);
    assert.deepEqual(ran, ['GET /stream']);
  });

  it('behind one that ends, it runs in its turn and is answered', async (t) => {
    const ran = [];
    const server = await serve(t, streaming(ran, 'ends'));
    const { text, timedOut } = await exchange(server.port, pipelined, { wait: BOUND_MS });
    assert.equal(timedOut, false);
    assert.deepEqual(statuses(text), [200, 200]);
    assert.match(text, /\{"charged":true\}$/);
    assert.deepEqual(ran, ['GET /stream', 'POST /charge']);
  });
});

/** A Readable that never produces a chunk (made by `make`), whose destruction settles `destroyed` with its error's message. */
function neverPushing(make, destroyed) {
  const stream = make();
  stream.once('close', () => destroyed.settle(stream.errored?.message ?? 'destroyed without an error'));
  return stream;
}

const NEVER_PUSHING = [
  ['a Readable whose read() never pushes', () => new Readable({ read() {} })],
  ['a PassThrough nobody writes', () => new PassThrough()],
];

describe('a Readable a handle function returns whose first chunk never comes, with a timeout', () => {
  for (const [what, make] of NEVER_PUSHING) {
    for (const [how, shape] of [
      ['', (body) => body],
      [' as the body of { statusCode, headers, body }', (body) => ({ statusCode: 200, headers: { 'content-type': 'text/event-stream' }, body })],
      [' returned by an async function', (body) => sleep(5).then(() => body)],
    ]) {
      it(`${what}${how}: funcrun's JSON 504 within the timeout, the stream destroyed, the signal aborted, logged as a timeout`, async (t) => {
        const destroyed = later();
        const signal = later();
        const server = await serve(
          t,
          (context) => {
            context.signal.addEventListener('abort', () => signal.settle(context.signal.reason?.message));
            return shape(neverPushing(make, destroyed));
          },
          { timeout: 200, accessLog: true },
        );
        const started = Date.now();
        const res = await within(request(server.url), BOUND_MS, 'no answer');
        assert.notEqual(res, 'no answer', `no answer within ${BOUND_MS} ms`);
        assert.ok(Date.now() - started >= 150, 'not before the timeout');
        assert.equal(res.status, 504);
        assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
        assert.deepEqual(res.json, TIMEOUT_504);
        assert.match(await within(destroyed.promise, BOUND_MS, 'not destroyed'), /did not produce its first chunk within the timeout/);
        assert.match(await within(signal.promise, BOUND_MS, 'not aborted'), /did not produce its first chunk within the timeout/);
        const failed = server.log.entries().find((line) => line.msg === 'request failed');
        assert.equal(failed?.level, 50, server.log.text());
        assert.equal(failed.statusCode, 504);
        assert.equal(typeof failed.reqId, 'number');
        const completed = server.log.entries().find((line) => line.msg === 'request completed');
        assert.equal(completed?.statusCode, 504, 'the access line is written');
      });
    }
  }

  it('a request pipelined behind it on the same connection is answered after the 504', async (t) => {
    const server = await serve(t, (context) => (context.path === '/hang' ? new Readable({ read() {} }) : 'ok'), { timeout: 200 });
    const { text, timedOut } = await exchange(server.port, 'GET /hang HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', {
      wait: BOUND_MS,
    });
    assert.equal(timedOut, false, `both answered and the connection closed: ${JSON.stringify(text)}`);
    assert.deepEqual(statuses(text), [504, 200]);
    assert.ok(text.endsWith('ok'), text);
  });
});

describe('a Readable whose first chunk never comes, and a client that leaves', () => {
  it('the stream is destroyed, the request ends (counted in the metrics) well before the timeout, with no 504 logged', async (t) => {
    const destroyed = later();
    const called = later();
    const server = await serve(
      t,
      () => {
        called.settle();
        return neverPushing(() => new Readable({ read() {} }), destroyed);
      },
      { timeout: 1000, metrics: true },
    );
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    t.after(() => socket.destroy());
    socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
    await within(called.promise, BOUND_MS);
    await sleep(50);
    const left = Date.now();
    socket.destroy();
    assert.notEqual(await within(destroyed.promise, BOUND_MS, 'not destroyed'), 'not destroyed');
    assert.ok(Date.now() - left < 900, 'destroyed when the client left, not at the timeout');
    let counted;
    for (let waited = 0; waited < BOUND_MS && !/^faas_invocations\{[^}]*\} 1$/m.test(counted ?? ''); waited += 50) {
      counted = (await request(`${server.url}/metrics`)).text;
      await sleep(50);
    }
    assert.match(counted, /^faas_invocations\{[^}]*\} 1$/m, 'the request ended and was counted');
    // Past the timeout: nothing more happens to a request that has ended.
    await sleep(1100);
    assert.equal(
      server.log.entries().find((line) => line.msg === 'request failed' || line.statusCode === 504),
      undefined,
      server.log.text(),
    );
  });
});

describe('a Readable that has started', () => {
  for (const [when, first] of [
    ['at once', 0],
    ['50 ms in', 50],
  ]) {
    it(`chunks that start ${when} and go on past the timeout are not cut`, async (t) => {
      const server = await serve(
        t,
        () => {
          let i = 0;
          return new Readable({
            read() {
              setTimeout(
                () => {
                  this.push(`data: ${i}\n\n`);
                  if (++i === 10) this.push(null);
                },
                i === 0 ? first : 60,
              );
            },
          });
        },
        { timeout: 150 },
      );
      const started = Date.now();
      const { text, timedOut } = await exchange(server.port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { wait: BOUND_MS });
      assert.equal(timedOut, false);
      assert.ok(Date.now() - started > 400, 'the stream ran past the timeout');
      const answer = firstResponse(text);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body.match(/data: \d+/g), [
        'data: 0',
        'data: 1',
        'data: 2',
        'data: 3',
        'data: 4',
        'data: 5',
        'data: 6',
        'data: 7',
        'data: 8',
        'data: 9',
      ]);
      assert.ok(answer.body.endsWith('0\r\n\r\n'), 'the terminating chunk: complete');
    });
  }
});

describe("the wait for a Readable's first chunk costs nothing when the chunk is there", () => {
  const TIMEOUT = 30000;
  async function* yielding() {
    yield 'a';
    yield 'b';
  }
  /** Serves `answer` with a timeout of TIMEOUT and counts the timers armed for (about) it while one request is answered. */
  async function timersArmed(t, answer) {
    const server = await serve(t, answer, { timeout: TIMEOUT });
    const original = globalThis.setTimeout;
    let armed = 0;
    globalThis.setTimeout = function (fn, ms, ...args) {
      if (ms > TIMEOUT - 10000 && ms <= TIMEOUT) armed++;
      return original.call(this, fn, ms, ...args);
    };
    try {
      const res = await request(server.url);
      assert.equal(res.status, 200);
      assert.equal(res.text, 'ab');
    } finally {
      globalThis.setTimeout = original;
    }
    return armed;
  }

  for (const [what, answer] of [
    ['Readable.from() of an array', () => Readable.from(['a', 'b'])],
    ['Readable.from() of an async generator', () => Readable.from(yielding())],
    ['a PassThrough written before it is returned', () => new PassThrough().end('ab')],
  ]) {
    it(`${what}: no timer armed`, async (t) => {
      assert.equal(await timersArmed(t, answer), 0);
    });
  }

  it('one whose first chunk comes later: one timer, for what is left of the timeout', async (t) => {
    const later = () =>
      new Readable({
        read() {
          setTimeout(() => {
            this.push('ab');
            this.push(null);
          }, 20);
        },
      });
    assert.equal(await timersArmed(t, later), 1);
  });
});

// An empty chunk writes nothing, so nothing in writing it waits: a body that produces them without
// end would hold the event loop (its timeout, the probes, every other request) unless the runtime
// gives the loop a turn after each one. The server runs in a process of its own, so that the old
// behaviour fails these specs rather than hold the process that runs them.
const EMPTY_FOREVER = `
  const empties = (log) => new ReadableStream({ pull(c) { c.enqueue(new Uint8Array(0)); }, cancel(reason) { log('cancelled: ' + (reason && reason.message)); } });
  const emptiesAsync = (log) => new ReadableStream({ async pull(c) { await null; c.enqueue(new Uint8Array(0)); }, cancel(reason) { log('cancelled: ' + (reason && reason.message)); } });
  const firstThenEmpties = (log) => { let n = 0; return new ReadableStream({ pull(c) { c.enqueue(n++ === 0 ? new TextEncoder().encode('first') : ''); }, cancel() { log('cancelled'); } }); };
  const say = (text) => console.log(JSON.stringify({ msg: text }));
`;

function emptyChunksProject(body) {
  return project({ 'package.json': '{"name":"empties","main":"index.js"}', 'index.js': EMPTY_FOREVER + body });
}

/** GET `path` on a connection of its own: the status and body, or 'no answer' within `ms`. */
async function answerWithin(url, ms, init) {
  return within(
    request(url, init).catch((err) => `failed: ${err.message}`),
    ms,
    'no answer',
  );
}

describe('a web answer whose body produces empty chunks', () => {
  for (const [what, body] of [
    ["a fetch handler's Response (a sync pull)", 'module.exports = { fetch: () => new Response(empties(say)) };'],
    ["a fetch handler's Response (an async pull)", 'module.exports = { fetch: () => new Response(emptiesAsync(say)) };'],
    ['a handle function returning a ReadableStream', 'module.exports = { handle: () => empties(say) };'],
  ]) {
    it(`${what}, without end and with a timeout: the JSON 504, the stream cancelled, and the probes answered meanwhile`, async (t) => {
      const server = await runServing([emptyChunksProject(body)], { env: { FUNC_TIMEOUT: '400ms' } });
      t.after(() => server.stop('SIGKILL'));
      const answer = answerWithin(`${server.url}/`, BOUND_MS);
      await sleep(100);
      const probe = await answerWithin(`${server.url}/health/liveness`, BOUND_MS);
      assert.equal(probe.status, 200, 'the liveness probe is answered while the body is waited for');
      const res = await answer;
      assert.notEqual(res, 'no answer', `no answer within ${BOUND_MS} ms`);
      assert.equal(res.status, 504);
      assert.deepEqual(res.json, TIMEOUT_504);
      await server.waitFor((line) => /^cancelled: .*first chunk within the timeout/.test(line.msg), 'the stream cancelled');
    });
  }

  it('a Response that sent its first chunk and then produces empty ones: the probes answered, other requests served, the client leaving cancels it', async (t) => {
    const server = await runServing(
      [
        emptyChunksProject(
          "module.exports = { fetch: (r) => new URL(r.url).pathname === '/other' ? new Response('ok') : new Response(firstThenEmpties(say)) };",
        ),
      ],
      { env: { FUNC_TIMEOUT: '400ms' } },
    );
    t.after(() => server.stop('SIGKILL'));
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    t.after(() => socket.destroy());
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    for (let waited = 0; waited < BOUND_MS && !received.includes('first'); waited += 20) await sleep(20);
    assert.match(received, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n5\r\nfirst\r\n$/, 'the head and the first chunk, and nothing more');
    // Past the timeout: the stream has started, so it goes on; the loop is not held by it.
    await sleep(500);
    assert.equal((await answerWithin(`${server.url}/health/liveness`, BOUND_MS)).status, 200);
    assert.equal((await answerWithin(`${server.url}/other`, BOUND_MS)).text, 'ok');
    socket.destroy();
    await server.waitFor((line) => line.msg === 'cancelled', 'the stream cancelled');
  });

  it('with idempotency, an event whose answer produces empty chunks without end: read ahead within a bound, then the JSON 504', async (t) => {
    const server = await runServing([emptyChunksProject('module.exports = { fetch: () => new Response(empties(say)) };')], {
      env: { FUNC_TIMEOUT: '400ms', FUNC_IDEMPOTENCY: 'on' },
    });
    t.after(() => server.stop('SIGKILL'));
    const headers = { 'ce-id': 'e-1', 'ce-source': '/spec', 'ce-type': 'spec.empty', 'ce-specversion': '1.0', 'content-type': 'application/json' };
    const answer = answerWithin(`${server.url}/`, BOUND_MS, { method: 'POST', headers, body: '{}' });
    await sleep(100);
    assert.equal((await answerWithin(`${server.url}/health/liveness`, BOUND_MS)).status, 200);
    const res = await answer;
    assert.notEqual(res, 'no answer', `no answer within ${BOUND_MS} ms`);
    assert.equal(res.status, 504);
    await server.waitFor((line) => /^cancelled: /.test(line.msg), 'the stream cancelled');
  });
});
