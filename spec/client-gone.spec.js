'use strict';
// A client that goes away before its body is whole is no failure of the server: whatever the
// function made of the cut body (the failed read wrapped or rethrown, its aborted signal thrown),
// the request is logged as the body's own failure is, a 400 FUNCRUN_BODY_INCOMPLETE at debug,
// never as a 5xx at error level.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { setTimeout: sleep } = require('node:timers/promises');
const { retry, streamed } = require('../lib/index.js');
const { serve } = require('./helpers');

/**
 * Sends a POST's headers and half its body on a raw socket, waits until the function reads (`reading`),
 * then destroys the socket. Resolves to the request's line in the log, once written.
 */
async function leaveMidBody(port, log, reading) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write('POST /orders HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"order":');
  await reading;
  socket.destroy();
  for (let waited = 0; waited < 3000; waited += 10) {
    const line = log.entries().find((entry) => entry.msg === 'request rejected' || entry.msg === 'request failed');
    if (line !== undefined) return line;
    await sleep(10);
  }
  assert.fail(`no line for the request: ${log.text()}`);
}

/** A promise resolved when `started()` is called. */
function signal() {
  let started;
  const promise = new Promise((resolve) => (started = resolve));
  return { promise, started };
}

function assertLoggedAsClientGone(line, log) {
  assert.equal(line.level, 20, `logged at debug: ${JSON.stringify(line)}`);
  assert.equal(line.msg, 'request rejected');
  assert.equal(line.statusCode, 400);
  assert.match(line.message, /closed the connection before the body was complete/);
  assert.equal(log.entries().filter((entry) => entry.level >= 50).length, 0, 'no line at error level');
}

describe('a client that goes away while the function reads its body', () => {
  it('a fetch handler that wraps the failed read in its own Error: logged at debug as the body cut, not at error', async (t) => {
    const reading = signal();
    const { port, log } = await serve(
      t,
      {
        async fetch(request) {
          reading.started();
          try {
            return Response.json(await request.json());
          } catch (err) {
            throw new Error('could not read the order', { cause: err });
          }
        },
      },
      { logLevel: 'debug' },
    );
    assertLoggedAsClientGone(await leaveMidBody(port, log, reading.promise), log);
  });

  it('a fetch handler that throws its aborted signal after the failed read: logged at debug', async (t) => {
    const reading = signal();
    const { port, log } = await serve(
      t,
      {
        async fetch(request) {
          reading.started();
          const order = await request.json().catch(() => undefined);
          request.signal.throwIfAborted();
          return Response.json(order);
        },
      },
      { logLevel: 'debug' },
    );
    assertLoggedAsClientGone(await leaveMidBody(port, log, reading.promise), log);
  });

  it('a handle function reading its streamed body that wraps the failed read: logged at debug', async (t) => {
    const reading = signal();
    const { port, log } = await serve(
      t,
      streamed(async (context, body) => {
        reading.started();
        try {
          for await (const chunk of body) void chunk;
        } catch (err) {
          throw new Error('could not read the upload', { cause: err });
        }
        return { ok: true };
      }),
      { logLevel: 'debug' },
    );
    assertLoggedAsClientGone(await leaveMidBody(port, log, reading.promise), log);
  });

  it('a fetch handler that throws retry() after the failed read: logged at debug as the body cut, not as an event to be delivered again', async (t) => {
    const reading = signal();
    const { port, log } = await serve(
      t,
      {
        async fetch(request) {
          reading.started();
          await request.text().catch(() => {
            throw retry('the order could not be read');
          });
          return new Response(null, { status: 204 });
        },
      },
      { logLevel: 'debug' },
    );
    assertLoggedAsClientGone(await leaveMidBody(port, log, reading.promise), log);
    // Nobody gets this answer, so nobody delivers the event again because of it.
    assert.equal(log.entries().filter((entry) => entry.msg === 'event to be delivered again').length, 0);
  });

  it('a handle function reading its streamed body that returns retry() after the failed read: logged at debug, not as delivered again', async (t) => {
    const reading = signal();
    const { port, log } = await serve(
      t,
      streamed(async (context, body) => {
        reading.started();
        try {
          for await (const chunk of body) void chunk;
        } catch {
          return retry('the upload could not be read');
        }
        return { ok: true };
      }),
      { logLevel: 'debug' },
    );
    assertLoggedAsClientGone(await leaveMidBody(port, log, reading.promise), log);
    assert.equal(log.entries().filter((entry) => entry.msg === 'event to be delivered again').length, 0);
  });

  it('a function that never read the body and fails after the client left is still logged at error level', async (t) => {
    const reading = signal();
    const { port, log } = await serve(
      t,
      {
        async fetch() {
          reading.started();
          await sleep(150);
          throw new TypeError('the order store is down');
        },
      },
      { logLevel: 'debug' },
    );
    const line = await leaveMidBody(port, log, reading.promise);
    assert.equal(line.level, 50, JSON.stringify(line));
    assert.equal(line.msg, 'request failed');
  });

  it('a function that fails while the client is still there is still logged at error level', async (t) => {
    const { url, log } = await serve(
      t,
      {
        async fetch(request) {
          await request.text();
          throw new Error('the order store is down');
        },
      },
      { logLevel: 'debug' },
    );
    const res = await fetch(url + '/orders', { method: 'POST', body: '{"order":1}' });
    assert.equal(res.status, 500);
    const line = log.entries().find((entry) => entry.msg === 'request failed');
    assert.equal(line?.level, 50);
  });
});

describe('a client that half-closes after a whole request', () => {
  it('is taken as gone, as node takes it (docs/limits.md): no answer, the connection closed, the signal aborted', async (t) => {
    let aborted = false;
    const server = await serve(t, async (context) => {
      context.signal.addEventListener('abort', () => (aborted = true));
      await sleep(200);
      return { ok: true };
    });
    const socket = net.connect(server.port, '127.0.0.1');
    t.after(() => socket.destroy());
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    socket.on('error', () => {});
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.end();
    await closed;
    assert.equal(received, '');
    for (let waited = 0; waited < 2000 && !aborted; waited += 20) await sleep(20);
    assert.equal(aborted, true);
  });
});
