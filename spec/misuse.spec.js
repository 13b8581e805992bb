'use strict';
// Less obvious ways a client or a function could block, leak or steer the runtime: batches with
// long queries, named functions returning streams or throwing their input, `return context`,
// CORS patterns with state, logs of shared structures, signals asked for late, upgrades.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { Readable } = require('node:stream');
const { serve, request } = require('./helpers');
const { exchange, firstResponse, statuses } = require('./raw');

describe('misuse by clients and functions', () => {
  it('a batch of 20,000 events with 1,500 query keys is answered in time linear in its size', async (t) => {
    const server = await serve(t, () => undefined, { bodyLimit: 4_000_000 });
    const events = JSON.stringify(Array.from({ length: 20000 }, (_, i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't' })));
    const query = Array.from({ length: 1500 }, (_, i) => `k${i}=1`).join('&');
    const started = performance.now();
    const answer = await request(`${server.url}/?${query}`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: events });
    const took = performance.now() - started;
    assert.equal(answer.status, 204);
    assert.ok(took < 3000, `took ${Math.round(took)} ms (quadratic: about 10 s; linear: about 0.5 s)`);
  });

  it("a batch's contexts still carry the query keys, never over the context's own fields", async (t) => {
    const seen = [];
    const server = await serve(t, (ctx) => void seen.push([ctx.page, ctx.method, ctx.query.method]));
    const events = JSON.stringify([1, 2].map((i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't' })));
    await request(`${server.url}/?page=2&method=DELETE`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: events });
    assert.deepEqual(seen, [['2', 'POST', 'DELETE'], ['2', 'POST', 'DELETE']]);
  });

  it('a named function returning a stream streams it over HTTP; answering an event with one is a 500 and the stream is closed', async (t) => {
    let closed = 0;
    const stream = () => {
      const s = Readable.from(['file contents']);
      s.once('close', () => closed++);
      return s;
    };
    const server = await serve(t, { functions: { file: () => stream() } });
    const answer = await request(server.url + '/file');
    assert.equal(answer.status, 200);
    assert.equal(answer.text, 'file contents');
    const event = await request(server.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 'file', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(event.status, 500);
    assert.doesNotMatch(event.text, /_readableState|path/);
    for (let i = 0; i < 50 && closed < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, 2);
  });

  it('a named function throwing its input (made from the query) is a 500, not the client\'s status and headers', async (t) => {
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

  for (const [name, fn] of [['return context', (ctx) => ctx], ['return { ...context }', (ctx) => ({ ...ctx })]]) {
    it(`${name}: data sent as JSON, never the request's headers sent back as response headers`, async (t) => {
      const server = await serve(t, fn);
      const answer = await request(server.url + '/?lunch=tacos', { method: 'POST', headers: { 'content-type': 'text/html', 'set-cookie': 'session=attacker', refresh: '0;url=https://evil.example/' }, body: '<script>x</script>' });
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

  it('a cors() pattern with the g flag allows the same origin on every request', async (t) => {
    const server = await serve(t, { handle: () => 'ok', cors: () => [/\.b\.example$/g] });
    const preflight = () =>
      request(server.url, { method: 'OPTIONS', headers: { origin: 'https://x.b.example', 'access-control-request-method': 'POST' } });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await preflight()).status);
    assert.deepEqual(answers, [204, 204, 204, 204]);
  });

  it('logging a structure that shares references 26 levels deep ends quickly and still writes a line', async (t) => {
    const server = await serve(t, (ctx) => {
      let o = { x: 1 };
      for (let i = 0; i < 26; i++) o = { a: o, b: o };
      ctx.log.info(o, 'shared');
      return 'logged';
    });
    const started = performance.now();
    assert.equal((await request(server.url)).text, 'logged');
    assert.ok(performance.now() - started < 3000);
    assert.ok(server.log.entries().some((e) => e.msg === 'shared'));
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

  it('ce-datacontenttype in binary mode is a 400 (it is the Content-Type header there)', async (t) => {
    const server = await serve(t, (ctx) => ctx.cloudevent);
    const answer = await request(server.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-datacontenttype': 'text/html%0D%0ASet-Cookie:%20x=1' },
      body: 'x',
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.attribute, 'datacontenttype');
  });

  it('an event whose datacontenttype no header can carry is answered structured, not a failed writeHead', async (t) => {
    const { CloudEvent } = require('cloudevents');
    const bad = await serve(t, () => Object.freeze(Object.assign(Object.create(CloudEvent.prototype), { specversion: '1.0', id: '1', source: '/s', type: 't', datacontenttype: 'text/plain\u20ac', data: 'x' })));
    const { text } = await exchange(bad.server.address().port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 200 OK\r\ncontent-type: application\/cloudevents\+json/);
    assert.match(text, /"datacontenttype":"text\/plain/);
  });

  it('violations quote field names cut short', async (t) => {
    const f = (input) => input;
    f.inputSchema = { type: 'object', additionalProperties: { type: 'integer' } };
    const server = await serve(t, { functions: { f } });
    const answer = await request(server.url + '/f', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ['k'.repeat(20_000)]: 'x' }) });
    assert.equal(answer.status, 400);
    assert.ok(answer.text.length < 2000, `${answer.text.length} bytes`);
  });

  it('an Upgrade request is answered and the connection closed; nothing behind it hangs', async (t) => {
    const server = await serve(t, () => 'ok');
    const { text, timedOut } = await exchange(server.server.address().port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n', { wait: 3000 });
    assert.equal(timedOut, false);
    assert.equal(statuses(text)[0], 200);
    assert.equal(firstResponse(text).headers.connection, 'close');
  });
});

describe('batches and the request timeout', () => {
  const batchOf = (n) => ({
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents-batch+json' },
    body: JSON.stringify(Array.from({ length: n }, (_, i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't' }))),
  });

  it('the timeout covers the whole batch, not each event: 40 events of 100 ms with a 300 ms timeout are a 504 in well under 4 s', async (t) => {
    const server = await serve(t, () => new Promise((r) => setTimeout(r, 100)), { timeout: 300 });
    const started = performance.now();
    const answer = await request(server.url, batchOf(40));
    assert.equal(answer.status, 504);
    assert.ok(performance.now() - started < 1500, `took ${Math.round(performance.now() - started)} ms`);
  });

  it('a batch whose client went away stops running its events', async (t) => {
    let ran = 0;
    const server = await serve(t, async () => {
      ran++;
      await new Promise((r) => setTimeout(r, 50));
    });
    await fetch(server.url, { ...batchOf(40), signal: AbortSignal.timeout(200) }).catch(() => {});
    await new Promise((r) => setTimeout(r, 600));
    assert.ok(ran < 15, `${ran} of 40 events ran`);
  });
});

describe('authorize(request): the module\'s access check, before the body', () => {
  it('runs before the body is read, for /metrics and unknown routes too, not for probes', async (t) => {
    let bodiesRead = 0;
    const seen = [];
    const server = await serve(
      t,
      {
        routes: { 'POST /orders': (ctx, body) => (bodiesRead++, body) },
        authorize: ({ method, path, headers, query }) => {
          seen.push(`${method} ${path} ${query.q ?? ''}`);
          if (headers.authorization !== 'Bearer right') throw Object.assign(new Error('who are you?'), { statusCode: 401, headers: { 'www-authenticate': 'Bearer' } });
        },
      },
      { bodyLimit: 100 },
    );
    // Over the body limit: refused by authorize before funcrun would answer 413.
    const refused = await request(server.url + '/orders?q=1', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 'x'.repeat(500) }) });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
    assert.equal(bodiesRead, 0);
    assert.equal((await request(server.url + '/metrics')).status, 401);
    assert.equal((await request(server.url + '/nowhere')).status, 401, 'a 404 does not tell which routes exist');
    assert.equal((await request(server.url + '/health/readiness')).status, 200);
    const ok = await request(server.url + '/orders', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer right' }, body: '{"a":1}' });
    assert.equal(ok.status, 200);
    assert.equal((await request(server.url + '/metrics', { headers: { authorization: 'Bearer right' } })).status, 200);
    assert.deepEqual(seen.slice(0, 2), ['POST /orders 1', 'GET /metrics ']);
  });

  it('authorize counts against the timeout: one that never settles is a 504, logged; a quick one lets the request through', async (t) => {
    const server = await serve(t, { handle: () => 'ok', authorize: ({ query }) => (query.hang ? new Promise(() => {}) : Promise.resolve(true)) }, { timeout: 300 });
    const started = performance.now();
    const hung = await request(`${server.url}/?hang=1`);
    assert.equal(hung.status, 504);
    assert.ok(performance.now() - started < 5000, 'answered at the timeout, not never');
    assert.ok(server.log.entries().some((l) => l.level === 50 && l.msg === 'request failed' && l.statusCode === 504), server.log.text());
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
      const answer = await request(`${server.url}/?how=${how}&set-cookie=session%3Dforged`, { headers: { 'set-cookie': 'session=forged', 'x-to': 'https://evil.example' } });
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
    const ask = (auth) => `POST / HTTP/1.1\r\nHost: x\r\n${auth}Expect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n`;
    const refused = await exchange(port, ask(''), { wait: 1000 });
    assert.deepEqual(statuses(refused.text), [403]);
    assert.doesNotMatch(refused.text, /100 Continue/);
    const allowed = await exchange(port, ask('Authorization: Bearer right\r\n'), { writes: [[100, 'hi']] });
    assert.match(allowed.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });

  it('authorize returning false refuses with a 403, sync or async; true or nothing lets the request through', async (t) => {
    const server = await serve(t, {
      handle: () => 'ok',
      authorize: ({ query }) => (query.how === 'false' ? false : query.how === 'async-false' ? Promise.resolve(false) : query.how === 'true' ? true : undefined),
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

describe('red team, third round', () => {
  it('a thrown 4xx whose headers are the request\'s (or part of the body) is a 500 without them', async (t) => {
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

  it('returned headers from req.headersDistinct are data like req.headers, never response headers', async (t) => {
    const server = await serve(t, (ctx) => ({ statusCode: 200, headers: ctx.req.headersDistinct, body: 'x' }));
    const answer = await request(server.url, { headers: { 'set-cookie': 'session=attacker' } });
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type'), /^application\/json/);
    assert.deepEqual(answer.json.headers['set-cookie'], ['session=attacker']);
    assert.equal(answer.headers.get('set-cookie'), null);
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

  it('an errorBody() returning a stream: the plain JSON body, and the stream is closed', async (t) => {
    let closed = 0;
    const server = await serve(t, {
      routes: { 'GET /a': () => 'a' },
      errorBody: () => {
        const s = new Readable({ read() {} });
        s.once('close', () => closed++);
        return s;
      },
    });
    for (let i = 0; i < 20; i++) {
      const answer = await request(server.url + '/x');
      assert.equal(answer.json.statusCode, 404);
      assert.doesNotMatch(answer.text, /_readableState/);
    }
    for (let i = 0; i < 50 && closed < 20; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, 20);
  });

  it('{ body: context.req.socket } is a 500; the pipelined request behind it is answered', async (t) => {
    const server = await serve(t, (ctx) => (ctx.path === '/sock' ? { body: ctx.req.socket } : 'next'));
    const { text } = await exchange(server.server.address().port, 'GET /sock HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    assert.deepEqual(statuses(text), [500, 200]);
  });

  it('a batch of XML events shares one node budget: together no more than one XML body', async (t) => {
    const server = await serve(t, () => undefined, { bodyLimit: 2_000_000 });
    const doc = '<r>' + '<a/>'.repeat(20_000) + '</r>';
    const events = Array.from({ length: 4 }, (_, i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't', datacontenttype: 'application/xml', data: doc }));
    const answer = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
    assert.equal(answer.status, 400);
    assert.match(answer.json.message, /more than 50000/);
    const two = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events.slice(0, 2)) });
    assert.equal(two.status, 204);
  });

  it('a log line writes at most 50,000 values, however they are spread', async (t) => {
    const server = await serve(t, (ctx, body) => (ctx.log.info(body), 'ok'), { bodyLimit: 4_000_000 });
    const body = JSON.stringify(Array.from({ length: 400_000 }, () => ({ i: 0 })));
    const started = performance.now();
    assert.equal((await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text, 'ok');
    assert.ok(performance.now() - started < 3000);
    const line = server.log.lines.find((l) => l.includes('[Truncated]'));
    assert.ok(line, 'the line was cut');
    assert.ok(line.length < 1_500_000, `${line.length} characters`);
  });
});
