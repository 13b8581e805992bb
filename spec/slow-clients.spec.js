'use strict';
// Clients that send slowly or sit idle: the header and request timeouts cut them off, an idle
// keep-alive connection is kept.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { serve, request } = require('./helpers');

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
