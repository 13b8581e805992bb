'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { serve, startServer, request } = require('./helpers');

describe('CORS', () => {
  let server;
  before(async () => {
    server = await startServer({
      handle: (ctx) => `handled ${ctx.method}`,
      cors: () => ['https://app.example.com', /^https:\/\/[a-z]+\.example\.org$/],
    });
  });
  after(() => server.close());

  const preflight = (origin) =>
    request(server.url + '/thing', {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type, x-token' },
    });

  it('a preflight from an allowed origin is answered 204 with the allow headers', async () => {
    for (const origin of ['https://app.example.com', 'https://shop.example.org']) {
      const res = await preflight(origin);
      assert.equal(res.status, 204);
      assert.equal(res.headers.get('access-control-allow-origin'), origin);
      assert.match(res.headers.get('access-control-allow-methods'), /PUT/);
      assert.equal(res.headers.get('access-control-allow-headers'), 'content-type, x-token');
      assert.match(res.headers.get('vary'), /Origin/);
      assert.equal(res.text, '');
    }
  });

  it('a preflight from another origin is a 403 without allow headers', async () => {
    const res = await preflight('https://evil.example.net');
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.match(res.json.message, /evil\.example\.net/);
  });

  it('a request from an allowed origin gets Access-Control-Allow-Origin; from another, none', async () => {
    const allowed = await request(server.url, { method: 'POST', headers: { origin: 'https://app.example.com' } });
    assert.equal(allowed.text, 'handled POST');
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example.com');
    const other = await request(server.url, { method: 'POST', headers: { origin: 'https://other.test' } });
    assert.equal(other.text, 'handled POST');
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  it('an error response to an allowed origin keeps the CORS header so the browser can read it', async () => {
    const res = await request(server.url + '/', {
      method: 'POST',
      headers: { origin: 'https://app.example.com', 'content-type': 'application/json' },
      body: '{',
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
  });

  it('without cors(), OPTIONS goes to the handler like any method', async (t) => {
    const plain = await serve(t, (ctx) => `handled ${ctx.method}`);
    const res = await request(plain.url, { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'PUT' } });
    assert.equal(res.text, 'handled OPTIONS');
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  it("'*' allows every origin", async (t) => {
    const open = await serve(t, { handle: () => 'ok', cors: () => ['*'] });
    const res = await request(open.url, { headers: { origin: 'https://anything.test' } });
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://anything.test');
  });

  it('a cors() pattern with the g flag allows the same origin on every request', async (t) => {
    const own = await serve(t, { handle: () => 'ok', cors: () => [/\.b\.example$/g] });
    const preflight = () => request(own.url, { method: 'OPTIONS', headers: { origin: 'https://x.b.example', 'access-control-request-method': 'POST' } });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await preflight()).status);
    assert.deepEqual(answers, [204, 204, 204, 204]);
  });
});
