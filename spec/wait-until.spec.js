'use strict';
// context.waitUntil: the answer goes at once, the work goes on, counts as in flight for stop()
// and SIGTERM, and its failure is logged with the invocation's reqId and trace.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { stop } = require('../lib/index.js');
const { serve, request, project, runServing } = require('./helpers');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('context.waitUntil', () => {
  it('answers at once; the work finishes afterwards, logging with the reqId', async (t) => {
    const server = await serve(
      t,
      (context) => {
        context.waitUntil(sleep(300).then(() => context.log.info('background done')));
        return { answered: true };
      },
      { logLevel: 'info' },
    );
    const started = Date.now();
    const res = await request(server.url);
    assert.deepEqual(res.json, { answered: true });
    assert.ok(Date.now() - started < 250, 'the answer did not wait for the work');
    assert.equal(
      server.log.entries().find((l) => l.msg === 'background done'),
      undefined,
    );
    await sleep(400);
    const done = server.log.entries().find((l) => l.msg === 'background done');
    assert.equal(typeof done.reqId, 'number');
  });

  it('a failure is logged as an error with the reqId and the trace, and nothing else happens', async (t) => {
    const server = await serve(
      t,
      (context) => {
        context.waitUntil(Promise.reject(new Error('the report did not send')));
        context.waitUntil(sleep(10).then(() => Promise.reject('not even an Error')));
        return 'ok';
      },
      { logLevel: 'info' },
    );
    const res = await request(server.url, { headers: { traceparent: TRACEPARENT } });
    assert.equal(res.status, 200);
    await sleep(50);
    const failures = server.log.entries().filter((l) => l.msg === 'waitUntil: the work failed');
    assert.equal(failures.length, 2);
    for (const line of failures) {
      assert.equal(line.level, 50);
      assert.equal(typeof line.reqId, 'number');
      assert.equal(line.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736');
    }
    assert.equal(failures[0].err.message, 'the report did not send');
    assert.equal((await request(server.url)).status, 200, 'still serving');
  });

  it('stop() waits for the work within the grace period, then runs shutdown()', async (t) => {
    const order = [];
    const server = await serve(t, {
      handle(context) {
        context.waitUntil(sleep(300).then(() => order.push('work done')));
        return 'ok';
      },
      shutdown() {
        order.push('shutdown');
      },
    });
    await request(server.url);
    const started = Date.now();
    await stop(server.server, 5000);
    assert.ok(Date.now() - started >= 250, 'stop() waited');
    assert.deepEqual(order, ['work done', 'shutdown']);
  });

  it('work handed on by other work (a waitUntil inside a waitUntil, after the stop began) is waited for too, then shutdown()', async (t) => {
    const order = [];
    const server = await serve(t, {
      handle(context) {
        context.waitUntil(
          sleep(200).then(() => {
            order.push('first done');
            context.waitUntil(sleep(300).then(() => order.push('handed-on done')));
          }),
        );
        return 'ok';
      },
      shutdown() {
        order.push('shutdown');
      },
    });
    await request(server.url);
    const drain = await stop(server.server, 5000);
    assert.deepEqual(order, ['first done', 'handed-on done', 'shutdown']);
    assert.equal(drain.complete, true);
  });

  it('work past the grace period is not waited for beyond it: a warning, then shutdown()', async (t) => {
    const order = [];
    const server = await serve(
      t,
      {
        handle(context) {
          context.waitUntil(sleep(3000).then(() => order.push('work done')));
          return 'ok';
        },
        shutdown() {
          order.push('shutdown');
        },
      },
      { logLevel: 'info' },
    );
    await request(server.url);
    const started = Date.now();
    await stop(server.server, 300);
    assert.ok(Date.now() - started < 2000, 'stop() kept to its grace period');
    assert.deepEqual(order, ['shutdown']);
    assert.ok(server.log.entries().some((l) => l.level === 40 && /still running after the grace period/.test(l.msg) && l.running === 1));
  });

  it('SIGTERM through node lib/serve.js: the work finishes, then the process exits 0', async () => {
    const dir = project({
      'index.js': `module.exports = (context) => {
        context.waitUntil(new Promise((resolve) => setTimeout(resolve, 500)).then(() => context.log.info('background done')));
        return 'ok';
      };`,
    });
    const proc = await runServing([dir]);
    assert.equal((await request(proc.url)).text, 'ok');
    proc.child.kill('SIGTERM');
    const { code } = await proc.exited;
    assert.equal(code, 0);
    const lines = proc.lines();
    const done = lines.findIndex((l) => l.msg === 'background done');
    const stopped = lines.findIndex((l) => l.msg === 'stopped');
    assert.ok(done >= 0 && stopped > done, proc.out.stdout);
  });

  it('a rejection with a value that fights back (a revoked Proxy) is still logged, never unhandled', async (t) => {
    const server = await serve(
      t,
      (context) => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        context.waitUntil(Promise.reject(proxy));
        return 'ok';
      },
      { logLevel: 'info' },
    );
    const unhandled = [];
    const onUnhandled = (reason) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    t.after(() => process.off('unhandledRejection', onUnhandled));
    assert.equal((await request(server.url)).status, 200);
    await sleep(30);
    const failure = server.log.entries().find((l) => l.msg === 'waitUntil: the work failed');
    assert.equal(typeof failure.reqId, 'number');
    assert.equal(unhandled.length, 0);
    assert.equal((await request(server.url)).status, 200, 'still serving');
  });

  it('in a unit test (createContext), a failure is still logged, not unhandled', async () => {
    const { createContext, createLogSink } = require('../lib/tools/testing.js');
    const sink = createLogSink();
    const context = createContext({ logDestination: sink });
    context.waitUntil(Promise.reject(new Error('offline')));
    await sleep(10);
    assert.equal(sink.entries().find((l) => l.msg === 'waitUntil: the work failed')?.err.message, 'offline');
  });
});
