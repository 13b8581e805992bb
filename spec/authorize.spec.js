'use strict';
// authorize(request), the module's access check: it runs before the body is read, for every path
// but the probes, within the request timeout; what it throws or returns is answered as a
// handler's would be, never with the request's own headers.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { serve, request } = require('./helpers');

describe("authorize(request): the module's access check, before the body", () => {
  it('runs before the body is read, for /metrics and unknown routes too, not for probes', async (t) => {
    let bodiesRead = 0;
    const seen = [];
    const server = await serve(
      t,
      {
        routes: { 'POST /orders': (ctx, body) => (bodiesRead++, body) },
        authorize: ({ method, path, headers, query }) => {
          seen.push(`${method} ${path} ${query.q ?? ''}`);
          if (headers.authorization !== 'Bearer right')
            throw Object.assign(new Error('who are you?'), { statusCode: 401, headers: { 'www-authenticate': 'Bearer' } });
        },
      },
      { bodyLimit: 100 },
    );
    // Over the body limit: refused by authorize before funcrun would answer 413.
    const refused = await request(server.url + '/orders?q=1', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 'x'.repeat(500) }),
    });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
    assert.equal(bodiesRead, 0);
    assert.equal((await request(server.url + '/metrics')).status, 401);
    assert.equal((await request(server.url + '/nowhere')).status, 401, 'a 404 does not tell which routes exist');
    assert.equal((await request(server.url + '/health/readiness')).status, 200);
    const ok = await request(server.url + '/orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer right' },
      body: '{"a":1}',
    });
    assert.equal(ok.status, 200);
    assert.equal((await request(server.url + '/metrics', { headers: { authorization: 'Bearer right' } })).status, 200);
    assert.deepEqual(seen.slice(0, 2), ['POST /orders 1', 'GET /metrics ']);
  });

  it('authorize counts against the timeout: one that never settles is a 504, logged; a quick one lets the request through', async (t) => {
    const server = await serve(
      t,
      { handle: () => 'ok', authorize: ({ query }) => (query.hang ? new Promise(() => {}) : Promise.resolve(true)) },
      { timeout: 300 },
    );
    const started = performance.now();
    const hung = await request(`${server.url}/?hang=1`);
    assert.equal(hung.status, 504);
    assert.ok(performance.now() - started < 5000, 'answered at the timeout, not never');
    assert.ok(
      server.log.entries().some((l) => l.level === 50 && l.msg === 'request failed' && l.statusCode === 504),
      server.log.text(),
    );
    assert.equal((await request(server.url)).status, 200);
  });

  it("what authorize throws is read as a handler's is: the request's own headers (set-cookie, location) are never sent back", async (t) => {
    const server = await serve(t, {
      handle: () => 'ok',
      authorize: ({ headers, query }) => {
        if (query.how === 'headers') throw Object.assign(new Error('no'), { statusCode: 401, headers });
        if (query.how === 'part') throw Object.assign(new Error('no'), { statusCode: 401, headers: { location: headers['x-to'] } });
        throw Object.assign(new Error('no'), { statusCode: 401, headers: query });
      },
    });
    for (const how of ['headers', 'query']) {
      const answer = await request(`${server.url}/?how=${how}&set-cookie=session%3Dforged`, {
        headers: { 'set-cookie': 'session=forged', 'x-to': 'https://evil.example' },
      });
      assert.equal(answer.headers.get('set-cookie'), null, how);
      assert.equal(answer.status, 500, how);
    }
    // A value taken from the request is a string, not a request object: it is the function's choice to send it.
    const part = await request(`${server.url}/?how=part`, { headers: { 'x-to': '/login' } });
    assert.equal(part.status, 401);
  });

  it('with Expect: 100-continue, authorize runs first: a refused client gets no 100 Continue, an allowed one gets it', async (t) => {
    const { exchange, statuses } = require('./raw');
    const server = await serve(t, { handle: (ctx, body) => ({ body }), authorize: ({ headers }) => headers.authorization === 'Bearer right' });
    const port = server.server.address().port;
    const ask = (auth) =>
      `POST / HTTP/1.1\r\nHost: x\r\n${auth}Expect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n`;
    const refused = await exchange(port, ask(''), { wait: 1000 });
    assert.deepEqual(statuses(refused.text), [403]);
    assert.doesNotMatch(refused.text, /100 Continue/);
    const allowed = await exchange(port, ask('Authorization: Bearer right\r\n'), { writes: [[100, 'hi']] });
    assert.match(allowed.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });

  it('authorize returning false refuses with a 403, sync or async; true or nothing lets the request through', async (t) => {
    const server = await serve(t, {
      handle: () => 'ok',
      authorize: ({ query }) =>
        query.how === 'false' ? false : query.how === 'async-false' ? Promise.resolve(false) : query.how === 'true' ? true : undefined,
    });
    for (const how of ['false', 'async-false']) {
      const refused = await request(`${server.url}/?how=${how}`);
      assert.equal(refused.status, 403, how);
      assert.equal(refused.json.statusCode, 403);
    }
    for (const how of ['true', 'nothing']) assert.equal((await request(`${server.url}/?how=${how}`)).status, 200, how);
  });

  it('an async authorize that throws an odd value still gets a JSON answer', async (t) => {
    const server = await serve(t, { handle: () => 'ok', authorize: async () => Promise.reject(Symbol('no')) });
    const answer = await request(server.url);
    assert.equal(answer.status, 500);
    assert.equal(answer.json.statusCode, 500);
  });
});
