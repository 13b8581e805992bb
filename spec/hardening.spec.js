'use strict';
// Limits against slow, stuck and overloading clients and handlers; metrics.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const os = require('node:os');
const { serve, request, runServing, project } = require('./helpers');
const { defaults } = require('../lib/index.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Opens a raw connection; resolves with what the server wrote and when it closed. */
function rawConnection(port) {
  const socket = net.connect(port, '127.0.0.1');
  const result = { data: '', closedAfter: undefined };
  const opened = Date.now();
  const closed = new Promise((resolve) => {
    socket.on('data', (c) => (result.data += c));
    socket.on('close', () => {
      result.closedAfter = Date.now() - opened;
      resolve(result);
    });
    socket.on('error', () => undefined);
  });
  return { socket, closed };
}

describe('handler timeout', () => {
  it('a handler past the timeout gets 504 and its signal aborted; a quick one is untouched', async (t) => {
    const seen = {};
    const { url } = await serve(
      t,
      async (ctx) => {
        if (ctx.path === '/quick') return 'quick';
        ctx.signal.addEventListener('abort', () => (seen.reason = ctx.signal.reason?.message));
        await sleep(1000);
        seen.finished = true;
        return 'too late';
      },
      { timeout: 150 },
    );
    const slow = await request(url + '/slow');
    assert.equal(slow.status, 504);
    assert.deepEqual(slow.json, { statusCode: 504, error: 'Gateway Timeout', message: 'Gateway Timeout' });
    assert.match(seen.reason, /did not answer within 150 ms/);
    assert.equal((await request(url + '/quick')).text, 'quick');
  });

  it('is off by default', async (t) => {
    assert.equal(defaults.timeout, 0);
    const { url } = await serve(t, async () => {
      await sleep(300);
      return 'patient';
    });
    assert.equal((await request(url)).text, 'patient');
  });

  it('FUNC_TIMEOUT and --timeout set it for node lib/serve.js', async (t) => {
    const folder = project({ 'index.js': 'module.exports = () => new Promise((r) => setTimeout(() => r("late"), 2000));' });
    for (const [args, env] of [[[], { FUNC_TIMEOUT: '200ms' }], [['--timeout', '200ms'], {}]]) {
      const proc = await runServing([folder, ...args], { env });
      t.after(() => proc.stop('SIGKILL'));
      assert.equal((await request(proc.url)).status, 504);
    }
  });

  it('the signal aborts when the client goes away (fails within 3 s if it never does)', { timeout: 15_000 }, async (t) => {
    const BOUND_MS = 3000;
    let started;
    const handlerStarted = new Promise((r) => (started = r));
    let resolveAborted;
    const aborted = new Promise((r) => (resolveAborted = r));
    let release;
    const released = new Promise((r) => (release = r));
    /** `promise`, or a rejection saying `what` did not happen once BOUND_MS pass. */
    const timers = new Set();
    const within = (promise, what) =>
      Promise.race([
        promise,
        new Promise((_, reject) => timers.add(setTimeout(() => reject(new Error(`${what} within ${BOUND_MS} ms`)), BOUND_MS))),
      ]);
    // Registered before serve() registers the server's close, so it runs first: a handler still
    // waiting is let go, rather than held until the grace period cuts it.
    t.after(() => {
      for (const timer of timers) clearTimeout(timer);
      release();
    });
    const { url } = await serve(t, async (ctx) => {
      ctx.signal.addEventListener('abort', () => resolveAborted(ctx.signal.reason?.message));
      started();
      // Waits for the abort, or for the test to give up: never longer than the test runs.
      await Promise.race([aborted, released]);
    });
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    t.after(() => socket.destroy());
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    // The client goes away only once the handler is running, so the abort has something to reach.
    await within(handlerStarted, 'the handler was not called');
    socket.destroy();
    assert.equal(await within(aborted, "the handler's signal did not abort after the client went away"), 'the client closed the connection');
  });
});

describe('slow clients', () => {
  it('defaults: headers within 20s, the whole request within 60s, keep-alive longer than a queue-proxy idles (90s)', async (t) => {
    const { server } = await serve(t, () => 'ok');
    assert.equal(server.headersTimeout, 20_000);
    assert.equal(server.requestTimeout, 60_000);
    assert.ok(server.keepAliveTimeout > 90_000);
  });

  it('a client sending its headers slowly (slowloris) is answered 408 and cut off', async (t) => {
    const { url } = await serve(t, () => 'ok', { headersTimeout: 300, requestTimeout: 5000 });
    const { socket, closed } = rawConnection(Number(new URL(url).port));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => socket.writable && socket.write('X-Slow: y\r\n'), 100);
    const result = await closed;
    clearInterval(drip);
    assert.match(result.data, /^HTTP\/1\.1 408 /);
    assert.ok(result.closedAfter < 3000, `closed after ${result.closedAfter} ms`);
    assert.equal((await request(url)).text, 'ok', 'the server keeps serving');
  });

  it('a client sending its body slowly is cut off at the request timeout', async (t) => {
    const { url } = await serve(t, (ctx, body) => body, { headersTimeout: 500, requestTimeout: 600 });
    const { socket, closed } = rawConnection(Number(new URL(url).port));
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n');
    const drip = setInterval(() => socket.writable && socket.write('a'), 100);
    const result = await closed;
    clearInterval(drip);
    assert.ok(result.closedAfter < 4000, `closed after ${result.closedAfter} ms`);
    assert.doesNotMatch(result.data, /^HTTP\/1\.1 200/);
  });

  it('an idle keep-alive connection is kept past the header timeout and serves the next request', async (t) => {
    const { url } = await serve(t, () => 'ok', { headersTimeout: 300, requestTimeout: 1000, keepAliveTimeout: 5000 });
    const { socket, closed } = rawConnection(Number(new URL(url).port));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(800);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const result = await closed;
    assert.equal(result.data.match(/HTTP\/1\.1 200 OK/g).length, 2);
  });
});

describe('overload', () => {
  it('readiness answers 503 while the event loop runs late, and 200 again after', async (t) => {
    const { url, log } = await serve(
      t,
      (ctx) => {
        const until = Date.now() + Number(ctx.query.ms);
        while (Date.now() < until); // a handler that hogs the CPU
        return 'done';
      },
      { maxEventLoopDelay: 200 },
    );
    assert.equal((await request(url + '/health/readiness')).status, 200);
    const blocking = request(url + '/?ms=900');
    await sleep(50);
    const during = await request(url + '/health/readiness');
    await blocking;
    assert.equal(during.status, 503);
    assert.ok(log.entries().some((e) => e.msg === 'not ready: the event loop is running late' && e.eventLoopDelay > 200));
    let after = 503;
    for (let i = 0; i < 20 && after !== 200; i++) {
      await sleep(100);
      after = (await request(url + '/health/readiness')).status;
    }
    assert.equal(after, 200);
    assert.equal((await request(url + '/health/liveness')).status, 200, 'liveness is not affected');
  });
});

describe('metrics', () => {
  const value = (text, series) => {
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  it('/metrics counts invocations and errors, times them, and labels them with the service and revision', async (t) => {
    const saved = { ...process.env };
    Object.assign(process.env, { K_SERVICE: 'orders', K_REVISION: 'orders-00042' });
    let server;
    try {
      server = await serve(t, (ctx) => {
        if (ctx.query.fail) throw new Error('boom');
        return 'ok';
      });
    } finally {
      for (const k of ['K_SERVICE', 'K_REVISION']) if (saved[k] === undefined) delete process.env[k];
    }
    for (const q of ['', '', '?fail=1']) await request(server.url + '/' + q);
    await request(server.url + '/health/readiness');
    const res = await request(server.url + '/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    // faas-js-runtime's labels in its order; the instance is the host name without POD_NAME.
    const labels = `faas_name="orders",faas_id="${os.hostname()}-[0-9a-f-]{36}",faas_instance="${os.hostname()}",faas_version="orders-00042",faas_runtime="Node.js"`;
    assert.match(res.text, new RegExp(`^faas_invocations\\{${labels}\\} 3$`, 'm'));
    assert.equal(value(res.text, 'faas_errors{'), 1);
    assert.match(res.text, /^# TYPE faas_execution_latency histogram$/m);
    assert.equal(value(res.text, 'faas_execution_latency_count{'), 3);
    assert.equal(value(res.text, 'faas_execution_latency_bucket{le="+Inf"'), 3);
    assert.equal(value(res.text, 'faas_cold_start_latency_count{'), 1);
    // Queue latency is timed for invocations only (not the probe), as faas-js-runtime does.
    assert.equal(value(res.text, 'faas_queue_latency_count{'), 3);
    assert.ok(value(res.text, 'faas_cpu_utilization{') >= 0);
    assert.ok(value(res.text, 'faas_mem_utilization{') > 1, 'resident MB');
    // Four requests went over the server's connections since it started: some bytes per second.
    assert.ok(value(res.text, 'faas_netio_utilization{') > 0);
    assert.ok(value(res.text, 'process_resident_memory_bytes{') > 0);
    assert.ok(value(res.text, 'nodejs_eventloop_lag_seconds{') >= 0);
    // Every non-comment line is `name{labels} number`.
    for (const line of res.text.trim().split('\n').filter((l) => !l.startsWith('#'))) assert.match(line, /^[a-z_]+\{[^}]*\} [-\d.e+]+$/, line);
  });

  it('the path is configurable, and metrics can be switched off', async (t) => {
    const moved = await serve(t, () => 'handler', { metricsPath: '/internal/metrics' });
    assert.match((await request(moved.url + '/internal/metrics')).text, /faas_invocations/);
    assert.equal((await request(moved.url + '/metrics')).text, 'handler');
    const off = await serve(t, () => 'handler', { metrics: false });
    assert.equal((await request(off.url + '/metrics')).text, 'handler');
  });
});
