'use strict';
// The handler timeout and context.signal: past the timeout the client gets a 504 and the handler's
// signal aborts; the signal aborts too when the client goes away.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { serve, request, runServing, project } = require('./helpers');
const { defaults } = require('../lib/index.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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
    assert.deepEqual(slow.json, { statusCode: 504, code: 'FUNCRUN_TIMEOUT', error: 'Gateway Timeout', message: 'Gateway Timeout' });
    assert.match(seen.reason, /did not answer within 150 ms/);
    assert.equal((await request(url + '/quick')).text, 'quick');
  });

  it('what a handler returns after its 504 is dropped: a stream in it is cancelled, a rejection is no unhandled one', async (t) => {
    const cancelled = [];
    const { url } = await serve(
      t,
      async (ctx) => {
        await sleep(300);
        if (ctx.path === '/fails') throw new Error('failed after the 504');
        return new ReadableStream({
          pull(controller) {
            controller.enqueue('never sent');
          },
          cancel() {
            cancelled.push(ctx.path);
          },
        });
      },
      { timeout: 100 },
    );
    assert.equal((await request(url + '/stream')).status, 504);
    assert.equal((await request(url + '/fails')).status, 504);
    await sleep(400);
    assert.deepEqual(cancelled, ['/stream']);
    // The server goes on: the late rejection was handled.
    assert.equal((await request(url + '/fails')).status, 504);
  });

  it('a handler that blocks the event loop past the timeout is answered with its value, and one warning says by how much it outran it', async (t) => {
    /** Holds the event loop for `ms`: no timer can fire meanwhile. */
    const block = (ms) => {
      const until = Date.now() + ms;
      while (Date.now() < until);
    };
    const { url, log } = await serve(
      t,
      (ctx) => {
        block(ctx.path === '/async-body' ? 50 : 400);
        return ctx.path === '/async-body' ? sleep(20).then(() => 'in time') : { computed: true };
      },
      { timeout: 150, logLevel: 'warn' },
    );
    const res = await request(url + '/blocking');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { computed: true });
    const warnings = log.entries().filter((line) => line.level === 40);
    assert.equal(warnings.length, 1, log.text());
    const [warning] = warnings;
    assert.match(warning.msg, /^the invocation outran its timeout by \d+ ms while blocking the event loop$/);
    assert.equal(warning.timeout, 150);
    assert.ok(warning.overrun >= 200 && warning.overrun < 5000, `overrun ${warning.overrun}`);
    assert.equal(warning.msg, `the invocation outran its timeout by ${warning.overrun} ms while blocking the event loop`);
    assert.equal(typeof warning.reqId, 'number');
    // Within its timeout, blocking or not: no warning.
    assert.equal((await request(url + '/async-body')).text, 'in time');
    assert.equal(log.entries().filter((line) => line.level === 40).length, 1);
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
    for (const [args, env] of [
      [[], { FUNC_TIMEOUT: '200ms' }],
      [['--timeout', '200ms'], {}],
    ]) {
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
      Promise.race([promise, new Promise((_, reject) => timers.add(setTimeout(() => reject(new Error(`${what} within ${BOUND_MS} ms`)), BOUND_MS)))]);
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

  it('context.signal first read after the client went away is already aborted', async (t) => {
    let aborted;
    const server = await serve(t, async (ctx) => {
      await new Promise((r) => setTimeout(r, 300));
      aborted = ctx.signal.aborted;
      return 'late';
    });
    await fetch(server.url, { signal: AbortSignal.timeout(50) }).catch(() => {});
    for (let i = 0; i < 50 && aborted === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(aborted, true);
  });
});
