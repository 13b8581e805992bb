'use strict';
// lightWebGlobals (FUNC_LIGHT_WEB_GLOBALS): a fetch handler's process gets light global Request,
// Response and fetch, as @hono/node-server installs them. Whatever a Hono app or a `{ fetch }`
// object does with them behaves as with the platform's own: routes, bodies and the body limit,
// `fetch(request)` to another server, `new Request(request)`, `clone()`, `instanceof`, streamed
// answers, headers, errors. The fetch specs run again with the setting on (the last describe).
// The globals stay replaced for the process once a server turns them on: every test here runs with them.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const http = require('node:http');
const path = require('node:path');
const util = require('node:util');
const { Hono } = require('hono');
const { serve, request } = require('./helpers');
const { exchange } = require('./raw');

const LIGHT = { lightWebGlobals: true };
const PLATFORM = { Request: globalThis.Request, Response: globalThis.Response, fetch: globalThis.fetch };
const encoder = new TextEncoder();

/** A loopback server answering with what it received: method, path, the Host and one header, and the body. */
async function upstream(t) {
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, path: req.url, host: req.headers.host, custom: req.headers['x-custom'] ?? null, body }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${server.address().port}`, host: `127.0.0.1:${server.address().port}` };
}

/** What a call or a promise gave: its value, or the class and message it threw. */
async function outcome(fn) {
  try {
    return { value: await fn() };
  } catch (err) {
    return { threw: err.constructor.name, message: err.message };
  }
}

/** A raw request: status, headers as node parsed them, and the body. */
function rawRequest(url, options = {}, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, options, async (res) => {
      let text = '';
      for await (const chunk of res) text += chunk;
      resolve({ status: res.statusCode, reason: res.statusMessage, headers: res.headers, text });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A request body sent as a stream (chunked, no Content-Length): refused while it is read, not before. */
function streamed(text) {
  return {
    body: new ReadableStream({
      start(controller) {
        controller.enqueue(encoder.encode(text));
        controller.close();
      },
    }),
    duplex: 'half',
  };
}

describe('lightWebGlobals: a Hono app', () => {
  it('serves its routes, JSON GET with a path parameter and JSON POST echoed, with the globals replaced', async (t) => {
    const app = new Hono();
    app.get('/items/:id', (c) => c.json({ id: c.req.param('id'), name: `item ${c.req.param('id')}` }));
    app.post('/echo', async (c) => c.json(await c.req.json()));
    app.get('/seen', (c) => c.json({ request: c.req.raw instanceof Request, made: c.req.raw.constructor === Request, url: c.req.raw.url }));
    const server = await serve(t, app, LIGHT);
    assert.notEqual(globalThis.Request, PLATFORM.Request);
    assert.notEqual(globalThis.Response, PLATFORM.Response);
    assert.notEqual(globalThis.fetch, PLATFORM.fetch);
    // Defined as the platform defines them.
    assert.deepEqual(
      ['Request', 'Response', 'fetch'].map((name) => Object.getOwnPropertyDescriptor(globalThis, name).enumerable),
      [false, false, true],
    );
    assert.deepEqual([Request.name, Response.name, fetch.name, Request.length, Response.length, fetch.length], ['Request', 'Response', 'fetch', 1, 0, 1]);
    const got = await request(`${server.url}/items/42`);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'application/json');
    assert.equal(got.headers.get('content-length'), String(got.text.length));
    assert.deepEqual(got.json, { id: '42', name: 'item 42' });
    const order = { customerId: 1, productId: 2, name: 'an order ✓' };
    const echoed = await request(`${server.url}/echo`, { method: 'POST', body: JSON.stringify(order), headers: { 'content-type': 'application/json' } });
    assert.equal(echoed.status, 200);
    assert.deepEqual(echoed.json, order);
    const seen = await request(`${server.url}/seen?q=1`);
    assert.deepEqual(seen.json, { request: true, made: true, url: `${server.url}/seen?q=1` });
    assert.equal((await request(`${server.url}/nowhere`)).status, 404);
    // funcrun's probes still answer before the app.
    assert.equal((await request(`${server.url}/health/readiness`)).status, 200);
  });

  it('gives request.url as the URL standard writes it, and the listening address for a Host it refuses', async (t) => {
    const server = await serve(t, { fetch: (request) => new Response(request.url) }, LIGHT);
    // Sent as written (a client's URL would resolve the dot segments before sending).
    const url = async (target, host) => {
      const { text } = await exchange(server.port, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      return { text: text.slice(text.indexOf('\r\n\r\n') + 4) };
    };
    assert.equal((await url('/a/b?x=1', 'example.test:8080')).text, 'http://example.test:8080/a/b?x=1');
    assert.equal((await url('/a/./b/../c?x=%41', 'Example.TEST:80')).text, 'http://example.test/a/c?x=%41');
    assert.equal((await url("/q?a='b'", 'h.test')).text, 'http://h.test/q?a=%27b%27');
    assert.equal((await url('/%2e%2E/x', 'h.test')).text, 'http://h.test/x');
    assert.equal((await url('/a/%2e/b', 'h.test')).text, 'http://h.test/a/b');
    assert.equal((await url('/a.b/.c/d.', 'h.test')).text, 'http://h.test/a.b/.c/d.');
    assert.equal((await url('/', '1.2.3')).text, 'http://1.2.0.3/');
    assert.equal((await url('/', '[0:0::1]:9')).text, 'http://[::1]:9/');
    assert.equal((await url('/p', 'host.123')).text, `http://127.0.0.1:${server.port}/p`);
    assert.equal((await url('/p', 'evil.test/other?')).text, `http://127.0.0.1:${server.port}/p`);
  });
});

describe('lightWebGlobals: the body and its limit', () => {
  const READS = {
    'json()': (request) => request.json(),
    'text()': (request) => request.text(),
    'arrayBuffer()': (request) => request.arrayBuffer(),
    'bytes()': (request) => request.bytes(),
    'the body stream': async (request) => {
      for await (const _chunk of request.body);
    },
    "Hono's c.req.json()": undefined,
  };
  for (const [read, how] of Object.entries(READS)) {
    it(`a body past the limit read by ${read} is funcrun's JSON 413`, async (t) => {
      let failed;
      let app;
      if (how === undefined) {
        app = new Hono();
        app.post('/', async (c) => {
          await c.req.json().catch((err) => (failed = err));
          return c.text('read');
        });
      } else {
        app = {
          async fetch(request) {
            await Promise.resolve(how(request)).catch((err) => (failed = err));
            return new Response('read');
          },
        };
      }
      const server = await serve(t, app, { ...LIGHT, bodyLimit: 100 });
      const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, ...streamed(`"${'x'.repeat(300)}"`) });
      assert.equal(failed?.code, 'FUNCRUN_BODY_TOO_LARGE');
      assert.equal(res.status, 413);
      assert.equal(res.json.code, 'FUNCRUN_BODY_TOO_LARGE');
    });
  }

  it('reads a body within the limit whole, once: a second read, clone() and new Request(request) refuse it', async (t) => {
    const server = await serve(
      t,
      {
        async fetch(request) {
          const before = request.bodyUsed;
          const text = await request.text();
          return Response.json({
            before,
            text,
            used: request.bodyUsed,
            again: await outcome(() => request.text()),
            clone: await outcome(() => request.clone()),
            copy: await outcome(() => new Request(request)),
            locked: request.body.locked,
          });
        },
      },
      LIGHT,
    );
    const { json } = await request(server.url, { method: 'POST', body: '\ufeffwith a byte order mark' });
    assert.equal(json.before, false);
    assert.equal(json.text, 'with a byte order mark');
    assert.equal(json.used, true);
    assert.equal(json.again.threw, 'TypeError');
    assert.equal(json.clone.threw, 'TypeError');
    assert.equal(json.copy.threw, 'TypeError');
    assert.equal(json.locked, true);
  });

  it('gives a GET no body: text() is empty, and reading it twice is no error', async (t) => {
    const server = await serve(
      t,
      { fetch: async (request) => Response.json({ body: request.body, a: await request.text(), b: await request.text(), used: request.bodyUsed }) },
      LIGHT,
    );
    assert.deepEqual((await request(server.url)).json, { body: null, a: '', b: '', used: false });
  });
});

describe('lightWebGlobals: the Request passed on', () => {
  it('fetch(request) sends the look-alike itself to the server its URL names, body included', async (t) => {
    const to = await upstream(t);
    const server = await serve(t, { fetch: (request) => fetch(request) }, LIGHT);
    // The Host header names the upstream: request.url does too.
    const res = await rawRequest(`${server.url}/passed?x=1`, { method: 'POST', headers: { host: to.host, 'x-custom': 'along' } }, 'the body');
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.text), { method: 'POST', path: '/passed?x=1', host: to.host, custom: 'along', body: 'the body' });
  });

  it('new Request(url, request) and fetch(url, request) proxy to another server; a Hono app passes c.req.raw on', async (t) => {
    const to = await upstream(t);
    const app = new Hono();
    app.post('/proxy', (c) => fetch(`${to.url}/proxied`, c.req.raw));
    app.post('/made', (c) => fetch(new Request(`${to.url}/made`, c.req.raw)));
    const server = await serve(t, app, LIGHT);
    for (const [at, expected] of [
      ['/proxy', '/proxied'],
      ['/made', '/made'],
    ]) {
      const res = await request(`${server.url}${at}`, { method: 'POST', body: 'via hono', headers: { 'x-custom': 'h' } });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, { method: 'POST', path: expected, host: to.host, custom: 'h', body: 'via hono' });
    }
  });

  it('new Request(request) and request.clone() carry the method, URL, headers and body', async (t) => {
    const server = await serve(
      t,
      {
        async fetch(request) {
          const clone = request.clone();
          const copy = new Request(request);
          return Response.json({
            clone: [clone.method, clone.url, clone.headers.get('x-custom'), await clone.text()],
            copy: [copy.method, copy.url, copy.headers.get('x-custom'), await copy.text()],
            instances: [clone instanceof Request, copy instanceof Request, copy instanceof PLATFORM.Request],
            original: await outcome(() => request.text()),
          });
        },
      },
      LIGHT,
    );
    const { json } = await request(`${server.url}/a`, { method: 'PUT', body: 'passed on', headers: { 'x-custom': 'yes' } });
    assert.deepEqual(json.clone, ['PUT', `${server.url}/a`, 'yes', 'passed on']);
    assert.deepEqual(json.copy, ['PUT', `${server.url}/a`, 'yes', 'passed on']);
    assert.deepEqual(json.instances, [true, true, true]);
    // Passed on to the copy, the original's body is the copy's.
    assert.equal(json.original.threw, 'TypeError');
  });

  it("answers every property of a Request, its headers mutable, and shows in util.inspect without undici's private state", async (t) => {
    const server = await serve(
      t,
      {
        fetch(request) {
          request.headers.set('x-added', 'by the handler');
          return Response.json({
            props: [request.mode, request.credentials, request.cache, request.redirect, request.keepalive, request.duplex, request.signal.aborted],
            tag: Object.prototype.toString.call(request),
            added: request.headers.get('x-added'),
            shown: util.inspect(request).startsWith('Request'),
          });
        },
      },
      LIGHT,
    );
    const { json } = await request(server.url);
    assert.deepEqual(json, {
      props: ['cors', 'same-origin', 'default', 'follow', false, 'half', false],
      tag: '[object Request]',
      added: 'by the handler',
      shown: true,
    });
  });
});

describe('lightWebGlobals: the Response', () => {
  it('instanceof holds for light Responses, the platform ones fetch() gives, and subclasses', async (t) => {
    const to = await upstream(t);
    class Mine extends Response {}
    const server = await serve(
      t,
      {
        async fetch() {
          const fetched = await fetch(to.url);
          return Response.json({
            light: new Response('x') instanceof Response,
            json: Response.json({}) instanceof Response,
            fetched: fetched instanceof Response,
            platform: new PLATFORM.Response('x') instanceof Response,
            mine: [new Mine('x') instanceof Mine, new Mine('x') instanceof Response, new Response('x') instanceof Mine],
            made: new Response('x').constructor === Response,
          });
        },
      },
      LIGHT,
    );
    assert.deepEqual((await request(server.url)).json, { light: true, json: true, fetched: true, platform: true, mine: [true, true, false], made: true });
  });

  it('sends the status, reason phrase and headers, each Set-Cookie apart, and the Content-Type a text body gets', async (t) => {
    const app = new Hono();
    app.get('/cookies', (c) => {
      c.header('Set-Cookie', 'a=1; Path=/', { append: true });
      c.header('Set-Cookie', 'b=2; HttpOnly', { append: true });
      return c.json({ ok: true }, 201);
    });
    app.get('/plain', () => new Response('plain text', { status: 202, statusText: 'Taken In', headers: { 'X-One': 'one', 'x-two': 'two' } }));
    app.get('/changed', () => {
      const res = new Response('changed');
      res.headers.set('x-late', 'set after');
      return res;
    });
    const server = await serve(t, app, LIGHT);
    const cookies = await rawRequest(`${server.url}/cookies`);
    assert.equal(cookies.status, 201);
    assert.deepEqual(cookies.headers['set-cookie'], ['a=1; Path=/', 'b=2; HttpOnly']);
    assert.deepEqual(JSON.parse(cookies.text), { ok: true });
    const plain = await rawRequest(`${server.url}/plain`);
    assert.equal(plain.status, 202);
    assert.equal(plain.reason, 'Taken In');
    assert.equal(plain.headers['x-one'], 'one');
    assert.equal(plain.headers['x-two'], 'two');
    assert.equal(plain.headers['content-type'], 'text/plain;charset=UTF-8');
    assert.equal(plain.headers['content-length'], '10');
    assert.equal(plain.text, 'plain text');
    const changed = await rawRequest(`${server.url}/changed`);
    assert.equal(changed.headers['x-late'], 'set after');
    assert.equal(changed.text, 'changed');
  });

  it('sends each header as a Headers would have it, for more names and values than funcrun remembers as checked', async (t) => {
    const server = await serve(
      t,
      {
        fetch(request) {
          const n = new URL(request.url).pathname.slice(1);
          const headers = { [`X-Name-${n}`]: `value ${n}`, 'x-tab': `a\tb${n}` };
          // A value a Headers would trim: the platform's Response, not a light one.
          return new Response('x', { headers: n.endsWith('0') ? { ...headers, 'X-Padded': ` padded ${n}\t` } : headers });
        },
      },
      LIGHT,
    );
    // Read as sent (an HTTP client trims a value): a value with whitespace around it goes out trimmed, as a Headers keeps it.
    for (let n = 0; n < 300; n += 1) {
      const { text } = await exchange(server.port, `GET /${n} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      assert.match(head, new RegExp(`\r\nx-name-${n}: value ${n}\r\n`));
      assert.match(head, new RegExp(`\r\nx-tab: a\tb${n}\r\n`));
      if (n % 10 === 0) assert.match(head, new RegExp(`\r\nx-padded: padded ${n}\r\n`));
    }
  });

  it('refuses what the platform refuses, with its errors', async (t) => {
    const server = await serve(
      t,
      {
        async fetch() {
          return Response.json({
            nullBodyStatus: await outcome(() => new Response('x', { status: 204 })),
            range: await outcome(() => new Response('x', { status: 99 })),
            name: await outcome(() => new Response('x', { headers: { 'a b': 'c' } })),
            value: await outcome(() => new Response('x', { headers: { a: 'line\nbreak' } })),
            reason: await outcome(() => new Response('x', { statusText: 'a\nb' })),
            json: await outcome(() => Response.json(undefined)),
          });
        },
      },
      LIGHT,
    );
    const { json } = await request(server.url);
    assert.equal(json.nullBodyStatus.threw, 'TypeError');
    assert.equal(json.range.threw, 'RangeError');
    assert.equal(json.name.threw, 'TypeError');
    assert.equal(json.value.threw, 'TypeError');
    assert.equal(json.reason.threw, 'TypeError');
    assert.equal(json.json.threw, 'TypeError');
  });

  it('is read as the platform reads a Response: text(), json(), clone(), body, a HEAD answer and a 204', async (t) => {
    const app = new Hono();
    app.get('/item', (c) => c.json({ id: 7 }));
    app.get('/empty', () => new Response(null, { status: 204 }));
    const server = await serve(t, app, LIGHT);
    const res = await app.fetch(new Request('http://localhost/item'));
    const clone = res.clone();
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), { id: 7 });
    assert.equal(await clone.text(), '{"id":7}');
    assert.equal(res.bodyUsed, true);
    const streamedBody = new Response('chunk').body;
    assert.ok(streamedBody instanceof ReadableStream);
    // Hono answers HEAD with its GET route's headers and a null body: no Content-Length, as c.json() sets none.
    const head = await rawRequest(`${server.url}/item`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-type'], 'application/json');
    assert.equal(head.headers['content-length'], undefined);
    assert.equal(head.text, '');
    // A light Response of text answers HEAD with the length its GET has.
    const plain = await serve(t, { fetch: () => new Response('12345678') }, LIGHT);
    const plainHead = await rawRequest(plain.url, { method: 'HEAD' });
    assert.equal(plainHead.headers['content-length'], '8');
    assert.equal(plainHead.text, '');
    const empty = await rawRequest(`${server.url}/empty`);
    assert.equal(empty.status, 204);
    assert.equal(empty.text, '');
  });

  it('streams a Response whose body is a stream: the first chunk arrives before the last is made', async (t) => {
    let release;
    const released = new Promise((resolve) => (release = resolve));
    const server = await serve(
      t,
      {
        fetch: () =>
          new Response(
            new ReadableStream({
              async start(controller) {
                controller.enqueue(encoder.encode('first;'));
                await released;
                controller.enqueue(encoder.encode('last'));
                controller.close();
              },
            }),
            { headers: { 'content-type': 'text/event-stream' } },
          ),
      },
      LIGHT,
    );
    const res = await fetch(server.url);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body.getReader();
    const first = await reader.read();
    assert.equal(new TextDecoder().decode(first.value), 'first;');
    release();
    let rest = '';
    for (let read = await reader.read(); !read.done; read = await reader.read()) rest += new TextDecoder().decode(read.value);
    assert.equal(rest, 'last');
  });

  it("a throw is funcrun's JSON 500 without the message, from a plain object and from a Hono app that throws errors on", async (t) => {
    const app = new Hono();
    app.get('/', () => {
      throw new Error('a secret in the message');
    });
    app.onError((err) => {
      throw err;
    });
    for (const handler of [{ fetch: () => Promise.reject(new Error('a secret in the message')) }, app]) {
      const server = await serve(t, handler, LIGHT);
      const res = await request(server.url);
      assert.equal(res.status, 500);
      assert.equal(res.json.statusCode, 500);
      assert.doesNotMatch(res.text, /secret/);
      assert.ok(server.log.entries().some((line) => line.level === 50 && line.reqId !== undefined));
    }
  });
});

// The fetch handlers' own specs, run again in a process of their own with the setting on: each
// of their servers started in the spec's process (funcrun/testing's serve) gets the light globals.
const SPECS = [
  'fetch-handler.spec.js',
  'fetch-request.spec.js',
  'fetch-answers.spec.js',
  'fetch-events.spec.js',
  'fetch-shape.spec.js',
  'web-answers.spec.js',
  'web-events.spec.js',
  'examples-fetch.spec.js',
  'docs-fetch.spec.js',
];

describe('lightWebGlobals: the fetch specs, with the setting on', () => {
  for (const file of SPECS) {
    it(`${file} passes`, { timeout: 300_000 }, async () => {
      // Run as a script of its own (the runner of this file would refuse to run files from within it).
      const { NODE_TEST_CONTEXT: _runner, ...env } = process.env;
      const child = spawn(process.execPath, ['--test-reporter=tap', path.join(__dirname, file)], {
        env: { ...env, FUNC_LIGHT_WEB_GLOBALS: 'on' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.stderr.on('data', (chunk) => (out += chunk));
      const code = await new Promise((resolve) => child.on('close', resolve));
      const failed = out.split('\n').filter((line) => /^\s*not ok /.test(line));
      assert.deepEqual(failed, [], out.slice(-4000));
      assert.match(out, /^# pass [1-9]/m);
      assert.equal(code, 0, out.slice(-4000));
    });
  }
});
