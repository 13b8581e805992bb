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
    const { server, url } = await serve(t, () => 'ok');
    assert.equal(server.headersTimeout, 20_000);
    assert.equal(server.requestTimeout, 60_000);
    // Advertised as node advertises its own: in seconds, rounded down.
    const { socket, closed } = rawConnection(Number(new URL(url).port));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(200);
    socket.destroy();
    assert.match((await closed).data, /\r\nKeep-Alive: timeout=95\r\n/i);
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

  describe('idle keep-alive connections, closed by a sweep', () => {
    // keepAliveTimeout 300 ms: closed once idle for it and node's one-second buffer, within a sweep (50 ms here) after.
    const idleFor = 300 + 1000;

    it("an idle connection is closed once idle for keepAliveTimeout and node's buffer, not before", { timeout: 10_000 }, async (t) => {
      const { url } = await serve(t, () => 'ok', { keepAliveTimeout: 300 });
      const { socket, closed } = rawConnection(Number(new URL(url).port));
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      const result = await closed;
      assert.match(result.data, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(result.data, /\r\nKeep-Alive: timeout=0\r\n/i);
      assert.ok(result.closedAfter >= idleFor - 20, `closed after ${result.closedAfter} ms`);
      assert.ok(result.closedAfter < idleFor + 1500, `closed after ${result.closedAfter} ms`);
    });

    it('a request that runs past keepAliveTimeout keeps its connection, and so does one idle a while before it', async (t) => {
      const { url } = await serve(t, async (ctx) => (ctx.query.wait ? (await sleep(Number(ctx.query.wait)), 'slow') : 'ok'), { keepAliveTimeout: 300 });
      const { socket, closed } = rawConnection(Number(new URL(url).port));
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      await sleep(idleFor - 400);
      socket.write(`GET /?wait=${idleFor + 500} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await sleep(idleFor + 700);
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const result = await closed;
      assert.deepEqual(result.data.match(/HTTP\/1\.1 200 OK|\r\n(ok|slow)$|\r\n\r\n(ok|slow)/gm).filter((x) => x.startsWith('HTTP')).length, 3, result.data);
      assert.match(result.data, /slow/);
    });

    it('a client sending its next request slowly, within the header timeout, is not cut as idle', async (t) => {
      const { url } = await serve(t, () => 'ok', { keepAliveTimeout: 300, headersTimeout: 5000 });
      const { socket, closed } = rawConnection(Number(new URL(url).port));
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      await sleep(idleFor - 500);
      // Begun before the connection had been idle long enough, and still coming well after.
      socket.write('GET / HTTP/1.1\r\n');
      for (let i = 0; i < 10; i++) {
        await sleep(150);
        socket.write('X-Slow: y\r\n');
      }
      socket.write('Host: x\r\nConnection: close\r\n\r\n');
      const result = await closed;
      assert.equal(result.data.match(/HTTP\/1\.1 200 OK/g)?.length, 2, result.data);
    });
  });
});
