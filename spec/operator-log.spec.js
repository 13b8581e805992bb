'use strict';
// What an operator reads in the log: every failed request with its method, path and status; an
// info line per answered request when asked for (FUNC_ACCESS_LOG, on in faas-js-runtime
// compatibility); a bad return value described in words.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { serve, request } = require('./helpers');

const SECRET = 'tok-7c1f';

describe('request failed and request rejected lines', () => {
  it('a 5xx is logged at error with method, path (no query) and status, and the error', async (t) => {
    const server = await serve(
      t,
      () => {
        throw new Error('the database is down');
      },
      { logLevel: 'info' },
    );
    assert.equal((await request(`${server.url}/orders/7?token=${SECRET}`, { method: 'DELETE' })).status, 500);
    const line = server.log.entries().find((e) => e.msg === 'request failed');
    assert.equal(line.level, 50);
    assert.deepEqual([line.method, line.path, line.statusCode, line.reqId], ['DELETE', '/orders/7', 500, 1]);
    assert.equal(line.err.message, 'the database is down');
    assert.ok(!server.log.text().includes(SECRET));
  });

  it('a thrown value that is not an Error: the same fields, and the value described', async (t) => {
    const server = await serve(
      t,
      () => {
        throw 'plain words';
      },
      { logLevel: 'info' },
    );
    await request(`${server.url}/x`, { method: 'POST' });
    const line = server.log.entries().find((e) => e.msg === 'request failed');
    assert.deepEqual([line.method, line.path, line.statusCode, line.thrown], ['POST', '/x', 500, 'plain words']);
  });

  it('a 4xx is logged at debug with method, path and status', async (t) => {
    const server = await serve(
      t,
      () => {
        throw Object.assign(new Error('no such order'), { statusCode: 404 });
      },
      { logLevel: 'debug' },
    );
    await request(`${server.url}/orders/9`);
    const line = server.log.entries().find((e) => e.msg === 'request rejected');
    assert.deepEqual([line.level, line.method, line.path, line.statusCode, line.message], [20, 'GET', '/orders/9', 404, 'no such order']);
  });

  it("a statusCode returned as a string is logged as 'a string', the client gets a generic 500", async (t) => {
    const server = await serve(t, () => ({ statusCode: '201', body: 'made' }), { logLevel: 'info' });
    const res = await request(server.url);
    assert.equal(res.status, 500);
    assert.deepEqual(res.json, { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
    const line = server.log.entries().find((e) => e.msg === 'request failed');
    assert.equal(line.err.message, "the function returned statusCode as a string ('201'): expected a number from 200 to 599");
  });
});

describe('the access line', () => {
  const accessLines = (server) => server.log.entries().filter((e) => e.msg === 'request completed');

  it('FUNC_ACCESS_LOG (accessLog) logs one info line per answered request: method, URL without query values, status, time', async (t) => {
    const server = await serve(t, (ctx) => (ctx.path === '/missing' ? { statusCode: 404, body: 'no' } : 'ok'), { logLevel: 'info', accessLog: true });
    await request(`${server.url}/items?token=${SECRET}&page=2`);
    await request(`${server.url}/missing`, { method: 'POST', body: 'x' });
    const lines = accessLines(server);
    assert.equal(lines.length, 2);
    assert.deepEqual(
      lines.map((l) => [l.level, l.reqId, l.method, l.url, l.statusCode, typeof l.responseTime]),
      [
        [30, 1, 'GET', '/items?token=…&page=…', 200, 'number'],
        [30, 2, 'POST', '/missing', 404, 'number'],
      ],
    );
    assert.ok(!server.log.text().includes(SECRET));
  });

  it('off by default: no access line at info, one at debug', async (t) => {
    const quiet = await serve(t, () => 'ok', { logLevel: 'info' });
    await request(quiet.url);
    assert.equal(accessLines(quiet).length, 0);
    const verbose = await serve(t, () => 'ok', { logLevel: 'debug' });
    await request(verbose.url);
    assert.deepEqual(
      accessLines(verbose).map((l) => l.level),
      [20],
    );
  });

  it('faas-js-runtime compatibility turns it on; accessLog: false turns it off again', async (t) => {
    const on = await serve(t, () => 'ok', { logLevel: 'info', compat: 'faas-js-runtime' });
    await request(on.url);
    assert.equal(accessLines(on).length, 1);
    const off = await serve(t, () => 'ok', { logLevel: 'info', compat: 'faas-js-runtime', accessLog: false });
    await request(off.url);
    assert.equal(accessLines(off).length, 0);
  });
});
