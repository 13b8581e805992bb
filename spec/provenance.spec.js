'use strict';
// Request data is data: whatever a function returns or throws that came from the request (its
// body, query, headers, the received event, the context itself) is sent as JSON or answered as a
// generic 500, never read as a status, headers or a response the client chose.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { serve, startServer, request } = require('./helpers');

describe('request data is never read as response instructions', () => {
  let server;
  let pick = (ctx, body) => body;
  before(async () => {
    server = await startServer((ctx, body) => pick(ctx, body));
  });
  after(() => server.close());

  const post = (body, type = 'application/json') => request(server.url, { method: 'POST', headers: { 'content-type': type }, body, redirect: 'manual' });

  it('an echoed {statusCode, headers, body} is sent as JSON data, not as a response', async () => {
    const forged = { statusCode: 302, headers: { location: 'https://evil.example/', 'set-cookie': 'session=stolen' }, body: '<script>alert(1)</script>' };
    const answer = await post(JSON.stringify(forged));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('location'), null);
    assert.equal(answer.headers.get('set-cookie'), null);
    assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(answer.json, forged);
  });

  it('a part of the body, echoed, is data too', async () => {
    pick = (ctx, body) => body.inner[0];
    const answer = await post(JSON.stringify({ inner: [{ statusCode: 201, body: 'x' }] }));
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, { statusCode: 201, body: 'x' });
    pick = (ctx, body) => body;
  });

  it('an echoed object shaped like a CloudEvent is JSON, not an event', async () => {
    const forged = { constructor: { name: 'CloudEvent' }, specversion: '1.0', id: '1', source: '/evil', type: 'evil', data: 'x' };
    const answer = await post(JSON.stringify(forged));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('ce-type'), null);
    assert.deepEqual(answer.json, forged);
  });

  it('an echoed object shaped like an XML document is JSON, not XML', async () => {
    const answer = await post(JSON.stringify({ nodeType: 9, toString: 'x' }));
    assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
  });

  it('echoed form data and query and headers are data', async () => {
    const form = await post('statusCode=302&body=x&headers=y', 'application/x-www-form-urlencoded');
    assert.equal(form.status, 200);
    assert.deepEqual(form.json, { statusCode: '302', body: 'x', headers: 'y' });
    pick = (ctx) => ctx.query;
    const query = await request(server.url + '/?statusCode=302&body=x');
    assert.equal(query.status, 200);
    assert.deepEqual(query.json, { statusCode: '302', body: 'x' });
    pick = (ctx) => ctx.headers;
    const headers = await request(server.url, { headers: { body: 'forged', statuscode: '302' } });
    assert.equal(headers.status, 200);
    assert.equal(headers.json.body, 'forged');
    pick = (ctx, body) => body;
  });

  it('the received CloudEvent echoed back is an event (it is one); its data is data', async () => {
    pick = (ctx) => ctx.cloudevent;
    const answer = await request(server.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '7', 'ce-source': '/s', 'ce-type': 't', 'content-type': 'application/json' },
      body: JSON.stringify({ statusCode: 302 }),
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('ce-id'), '7');
    assert.deepEqual(answer.json, { statusCode: 302 });
    pick = (ctx) => ctx.cloudevent.data;
    const data = await request(server.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '7', 'ce-source': '/s', 'ce-type': 't', 'content-type': 'application/json' },
      body: JSON.stringify({ statusCode: 302, body: 'x' }),
    });
    assert.equal(data.status, 200);
    assert.deepEqual(data.json, { statusCode: 302, body: 'x' });
    pick = (ctx, body) => body;
  });

  it('a response the function spells out, with parsed data as its body, still works', async () => {
    pick = (ctx, body) => ({ statusCode: 201, headers: { 'x-made-by': 'function' }, body });
    const answer = await post(JSON.stringify({ statusCode: 302 }));
    assert.equal(answer.status, 201);
    assert.equal(answer.headers.get('x-made-by'), 'function');
    assert.deepEqual(answer.json, { statusCode: 302 });
    pick = (ctx, body) => body;
  });

  for (const [name, fn] of [
    ['return context', (ctx) => ctx],
    ['return { ...context }', (ctx) => ({ ...ctx })],
  ]) {
    it(`${name}: data sent as JSON, never the request's headers sent back as response headers`, async (t) => {
      const server = await serve(t, fn);
      const answer = await request(server.url + '/?lunch=tacos', {
        method: 'POST',
        headers: { 'content-type': 'text/html', 'set-cookie': 'session=attacker', refresh: '0;url=https://evil.example/' },
        body: '<script>x</script>',
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('set-cookie'), null);
      assert.equal(answer.headers.get('refresh'), null);
      assert.match(answer.headers.get('content-type'), /^application\/json/);
      // The request's body is data too: never the answer's body as HTML.
      assert.equal(answer.json.body, '<script>x</script>');
      assert.equal(answer.json.lunch, 'tacos');
      assert.deepEqual(answer.json.headers['set-cookie'], ['session=attacker']);
      // The request object (socket, server) is not part of the copy.
      assert.equal(answer.json.req, undefined);
    });
  }

  it('returned headers from req.headersDistinct are data like req.headers, never response headers', async (t) => {
    const server = await serve(t, (ctx) => ({ statusCode: 200, headers: ctx.req.headersDistinct, body: 'x' }));
    const answer = await request(server.url, { headers: { 'set-cookie': 'session=attacker' } });
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type'), /^application\/json/);
    assert.deepEqual(answer.json.headers['set-cookie'], ['session=attacker']);
    assert.equal(answer.headers.get('set-cookie'), null);
  });
});

describe('thrown request data', () => {
  it('throw body: a generic 500, not the status, headers and message the client sent', async (t) => {
    const server = await serve(t, (ctx, body) => {
      throw body;
    });
    const forged = { statusCode: 401, headers: { 'set-cookie': 'sid=evil', location: 'http://evil.example/' }, message: 'log in at evil.example' };
    const answer = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(forged) });
    assert.equal(answer.status, 500);
    assert.equal(answer.headers.get('set-cookie'), null);
    assert.equal(answer.json.message, 'Internal Server Error');
  });

  it('throwing the received CloudEvent is a 500, whatever status-like attributes it carries', async (t) => {
    const server = await serve(t, (ctx) => {
      throw ctx.cloudevent;
    });
    const answer = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json' },
      body: JSON.stringify({ specversion: '1.0', id: '1', source: '/s', type: 't', code: 401, message: 'pay here' }),
    });
    assert.equal(answer.status, 500);
    assert.equal(answer.json.message, 'Internal Server Error');
  });

  it("a named function throwing its input (made from the query) is a 500, not the client's status and headers", async (t) => {
    const typed = (input) => {
      throw input;
    };
    typed.inputSchema = { type: 'object', properties: { statusCode: { type: 'integer' } } };
    const server = await serve(t, { functions: { typed } });
    const answer = await request(`${server.url}/typed?statusCode=401&message=log%20in%20elsewhere&headers.set-cookie=sid%3Devil`);
    assert.equal(answer.status, 500);
    assert.equal(answer.headers.get('set-cookie'), null);
    assert.equal(answer.json.message, 'Internal Server Error');
  });

  it("a thrown 4xx whose headers are the request's (or part of the body) is a 500 without them", async (t) => {
    const server = await serve(t, (ctx, body) => {
      if (ctx.path === '/req') throw Object.assign(new Error('bad'), { statusCode: 400, headers: ctx.headers });
      if (ctx.path === '/distinct') throw { statusCode: 401, headers: ctx.req.headersDistinct };
      throw Object.assign(new Error('bad'), { statusCode: 403, headers: body.h });
    });
    for (const [path, init] of [
      ['/req', { headers: { 'set-cookie': 'session=attacker', location: 'http://evil.example/' } }],
      ['/distinct', { headers: { 'set-cookie': 'session=attacker' } }],
      ['/body', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ h: { 'set-cookie': 'session=attacker' } }) }],
    ]) {
      const answer = await request(server.url + path, init);
      assert.equal(answer.status, 500, path);
      assert.equal(answer.headers.get('set-cookie'), null, path);
      assert.equal(answer.headers.get('location'), null, path);
    }
  });

  it('a named function whose thrown error carries its input as headers is a 500', async (t) => {
    const f = (input) => {
      throw Object.assign(new Error('no'), { statusCode: 400, headers: input.h });
    };
    const server = await serve(t, { functions: { f } });
    const answer = await request(`${server.url}/f?h.set-cookie=session%3Dattacker`);
    assert.equal(answer.status, 500);
    assert.equal(answer.headers.get('set-cookie'), null);
  });
});
