'use strict';
// A fetch handler (`{ fetch(request, env, ctx) }`, a Hono app's shape): every path and method
// reaches it as a WHATWG Request, its Response is sent as it is produced, and funcrun keeps what
// it owns: probes, the body limit, the timeout, logs with reqId, faults, waitUntil and the drain.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { stop } = require('../lib/index.js');
const { serve, request, project, runServing } = require('./helpers');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and its resolve, for a handler that waits on the test. */
function gate() {
  let open;
  const opened = new Promise((resolve) => (open = resolve));
  return { opened, open };
}

/** A raw node:http request: resolves with the response once its head arrives. */
function rawRequest(url, options = {}, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, options, resolve);
    req.on('error', reject);
    if (body === undefined) req.end();
    else req.end(body);
  });
}

const encoder = new TextEncoder();

/** A 2,000-byte body sent in five chunks without a length: the 1,000-byte limit is met while the handler reads. */
function overTheLimit() {
  return new ReadableStream({
    async start(controller) {
      for (let i = 0; i < 5; i++) {
        controller.enqueue(new Uint8Array(400));
        await sleep(5);
      }
      controller.close();
    },
  });
}

describe('a fetch handler: requests', () => {
  it('takes every path and method, while funcrun answers its probes', async (t) => {
    const seen = [];
    const server = await serve(t, {
      fetch(request) {
        seen.push(`${request.method} ${new URL(request.url).pathname}`);
        return new Response(`handled ${request.method}`);
      },
    });
    for (const [method, at] of [
      ['GET', '/'],
      ['POST', '/items/7'],
      ['DELETE', '/a/b/c'],
      ['PATCH', '/x'],
      ['OPTIONS', '/y'],
    ]) {
      const res = await request(server.url + at, { method });
      assert.equal(res.status, 200);
      assert.equal(res.text, `handled ${method}`);
    }
    const ready = await request(`${server.url}/health/readiness`);
    assert.equal(ready.status, 200);
    assert.notEqual(ready.text, 'handled GET');
    assert.deepEqual(seen, ['GET /', 'POST /items/7', 'DELETE /a/b/c', 'PATCH /x', 'OPTIONS /y']);
  });

  it('calls fetch with its object as this', async (t) => {
    const server = await serve(t, {
      greeting: 'hello from the object',
      fetch() {
        return new Response(this.greeting);
      },
    });
    assert.equal((await request(server.url)).text, 'hello from the object');
  });

  it('makes request.url absolute from the Host header, and from the listening address when Host names no host', async (t) => {
    const server = await serve(t, { fetch: (request) => new Response(request.url) });
    const read = async (host) => {
      const res = await rawRequest(`${server.url}/p/q?x=1&y=%20`, { headers: { host } });
      let text = '';
      for await (const chunk of res) text += chunk;
      return text;
    };
    assert.equal(await read('example.test:8080'), 'http://example.test:8080/p/q?x=1&y=%20');
    assert.equal(await read('[::1]:9'), 'http://[::1]:9/p/q?x=1&y=%20');
    assert.equal(await read('evil.test/other?'), `http://127.0.0.1:${server.port}/p/q?x=1&y=%20`);
    assert.equal(await read('a@b'), `http://127.0.0.1:${server.port}/p/q?x=1&y=%20`);
    assert.equal(await read('999.999.999.999'), `http://127.0.0.1:${server.port}/p/q?x=1&y=%20`);
    assert.equal(await read('h:99999'), `http://127.0.0.1:${server.port}/p/q?x=1&y=%20`);
  });

  it("an absolute-form target names the host of request.url, not the Host header (RFC 9112 section 3.2.2), and the connection's next request has its own", async (t) => {
    const server = await serve(t, { fetch: (request) => new Response(request.url) });
    const { exchange } = require('./raw');
    const { text } = await exchange(
      server.port,
      'GET http://other.test:81/p?x=1 HTTP/1.1\r\nHost: example.test\r\n\r\n' +
        'GET /q HTTP/1.1\r\nHost: example.test\r\n\r\n' +
        'GET http://a@b/r HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n',
      { wait: 4000 },
    );
    const bodies = text
      .split(/HTTP\/1\.1 200 OK\r\n/)
      .slice(1)
      .map((answer) => answer.slice(answer.indexOf('\r\n\r\n') + 4));
    assert.deepEqual(bodies, ['http://other.test:81/p?x=1', 'http://example.test/q', `http://127.0.0.1:${server.port}/r`]);
  });

  it('hands over the method, the headers and the body as text, JSON and bytes', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        const kind = new URL(request.url).searchParams.get('as');
        const body = kind === 'json' ? await request.json() : kind === 'bytes' ? [...new Uint8Array(await request.arrayBuffer())] : await request.text();
        return Response.json({ method: request.method, custom: request.headers.get('x-custom'), body });
      },
    });
    const post = (as, body, headers = {}) => request(`${server.url}/?as=${as}`, { method: 'POST', body, headers: { 'x-custom': 'yes', ...headers } });
    assert.deepEqual((await post('text', 'hello')).json, { method: 'POST', custom: 'yes', body: 'hello' });
    assert.deepEqual((await post('json', '{"a":[1,2]}', { 'content-type': 'application/json' })).json, { method: 'POST', custom: 'yes', body: { a: [1, 2] } });
    assert.deepEqual((await post('bytes', new Uint8Array([0, 255, 7]))).json, { method: 'POST', custom: 'yes', body: [0, 255, 7] });
    // A body sent in chunks, without a length, arrives whole.
    const chunked = new ReadableStream({
      async start(controller) {
        controller.enqueue(encoder.encode('one,'));
        await sleep(20);
        controller.enqueue(encoder.encode('two'));
        controller.close();
      },
    });
    assert.equal((await request(`${server.url}/?as=text`, { method: 'PUT', body: chunked, duplex: 'half' })).json.body, 'one,two');
    // GET has no body.
    assert.deepEqual((await request(`${server.url}/?as=text`)).json, { method: 'GET', custom: null, body: '' });
  });

  it('a body over the limit makes text() reject inside the handler and is answered 413 with its code', async (t) => {
    let rejected;
    const server = await serve(
      t,
      {
        async fetch(request) {
          try {
            await request.text();
          } catch (err) {
            rejected = err;
          }
          return new Response('read it all');
        },
      },
      { bodyLimit: 1000 },
    );
    // Without a Content-Length, the limit is met while the handler reads.
    const body = overTheLimit();
    const res = await request(server.url, { method: 'POST', body, duplex: 'half' });
    assert.equal(rejected?.code, 'FUNCRUN_BODY_TOO_LARGE', 'text() rejected with the limit');
    assert.equal(res.status, 413);
    assert.equal(res.json.code, 'FUNCRUN_BODY_TOO_LARGE');
    // A declared length over the limit is refused before the handler runs.
    const declared = await request(server.url, { method: 'POST', body: 'x'.repeat(2000) });
    assert.equal(declared.status, 413);
    assert.equal(declared.json.code, 'FUNCRUN_BODY_TOO_LARGE');
  });

  it('a body over the limit is answered 413 when the handler throws an error of its own after the failed read', async (t) => {
    // An upstream that reads what it is sent: the handler passes the body on with fetch.
    const upstream = http.createServer((req, res) => {
      // The body is cut short when the limit is met: the request ends aborted.
      req.on('error', () => {});
      req.resume();
      req.on('end', () => res.end('read'));
    });
    await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => upstream.close(resolve)));
    const server = await serve(
      t,
      {
        async fetch(request) {
          const how = new URL(request.url).pathname;
          if (how === '/wrapped') {
            try {
              await request.json();
            } catch (err) {
              throw new Error(`the order could not be read: ${err.message}`);
            }
          }
          // fetch() rejects with its own TypeError('fetch failed'), the limit's error as its cause.
          return fetch(`http://127.0.0.1:${upstream.address().port}/`, { method: 'POST', body: request.body, duplex: 'half' });
        },
      },
      { bodyLimit: 1000 },
    );
    for (const how of ['/wrapped', '/passed-on']) {
      const body = overTheLimit();
      const res = await request(`${server.url}${how}`, { method: 'POST', body, duplex: 'half' });
      assert.equal(res.status, 413, how);
      assert.equal(res.json.code, 'FUNCRUN_BODY_TOO_LARGE', how);
    }
  });

  it('request.signal aborts when the client goes away', async (t) => {
    const started = gate();
    const aborted = gate();
    const server = await serve(t, {
      fetch(request) {
        request.signal.addEventListener('abort', () => aborted.open(request.signal.reason));
        started.open();
        return new Promise(() => {});
      },
    });
    const req = http.request(server.url);
    req.on('error', () => {});
    req.end();
    await started.opened;
    req.destroy();
    const reason = await Promise.race([aborted.opened, sleep(2000).then(() => 'not aborted')]);
    assert.notEqual(reason, 'not aborted');
  });

  it('at the timeout, request.signal aborts and funcrun answers 504 with its code', async (t) => {
    let reason;
    const server = await serve(
      t,
      {
        fetch(request) {
          return new Promise((resolve) => {
            request.signal.addEventListener('abort', () => {
              reason = request.signal.reason;
              setTimeout(() => resolve(new Response('too late')), 10);
            });
          });
        },
      },
      { timeout: 150 },
    );
    const res = await request(server.url);
    assert.equal(res.status, 504);
    assert.equal(res.json.code, 'FUNCRUN_TIMEOUT');
    assert.ok(reason !== undefined, 'the signal aborted');
  });

  it('ctx.log lines carry the reqId, ctx.reqId is it, and env is the process environment', async (t) => {
    const server = await serve(
      t,
      {
        fetch(request, env, ctx) {
          ctx.log.info({ from: 'handler' }, 'hello');
          ctx.passThroughOnException();
          return Response.json({ reqId: ctx.reqId, path: env.PATH === process.env.PATH });
        },
      },
      { logLevel: 'info' },
    );
    const res = await request(server.url);
    const line = server.log.entries().find((l) => l.msg === 'hello');
    assert.equal(line.from, 'handler');
    assert.equal(line.reqId, res.json.reqId);
    assert.equal(typeof line.reqId, 'number');
    assert.equal(res.json.path, true);
  });

  it('ctx holds no request internals, and its log kept past the answer says the line outlived the request', async (t) => {
    // Node 22 scopes invocations once `log` is reached for (scope.ts); Node 24 always does.
    assert.ok(require('../lib/index.js').log);
    const kept = [];
    const server = await serve(
      t,
      {
        fetch(request, env, ctx) {
          kept.push(ctx);
          return Response.json({ copy: { ...ctx }, inspected: require('node:util').inspect(ctx, { depth: 4 }) });
        },
      },
      { logLevel: 'info' },
    );
    const res = await request(server.url);
    assert.deepEqual(res.json.copy, { reqId: kept[0].reqId });
    assert.doesNotMatch(res.json.inspected, /IncomingMessage|ServerResponse|Socket|AbortController|level/);
    // Nothing inherited leads there either: no symbol-keyed member, and every getter read shows none of it.
    const proto = Object.getPrototypeOf(kept[0]);
    assert.deepEqual(Object.getOwnPropertySymbols(proto), []);
    assert.doesNotMatch(require('node:util').inspect(kept[0], { showHidden: true, getters: true, depth: 6 }), /IncomingMessage|ServerResponse|Socket|inFlight/);
    // Its lines keep the request's reqId until the invocation ends; after that, they say they outlived it.
    await sleep(20);
    kept[0].log.info('late');
    // Work handed over after the invocation ended fails as work that outlived it, not as the request's.
    kept[0].waitUntil(Promise.reject(new Error('late work')));
    await sleep(20);
    const late = server.log.entries().find((l) => l.msg === 'late');
    assert.equal(late.reqId, undefined);
    assert.equal(late.outlivedRequest, kept[0].reqId);
    const failed = server.log.entries().find((l) => l.err?.message === 'late work');
    assert.equal(failed.reqId, undefined);
    assert.equal(failed.outlivedRequest, kept[0].reqId);
  });

  it('ctx.waitUntil work runs after the answer, and its failure is logged with the reqId', async (t) => {
    const server = await serve(
      t,
      {
        fetch(request, env, ctx) {
          ctx.waitUntil(sleep(100).then(() => ctx.log.info('later')));
          ctx.waitUntil(Promise.reject(new Error('report failed')));
          return new Response('now');
        },
      },
      { logLevel: 'info' },
    );
    const res = await request(server.url);
    assert.equal(res.text, 'now');
    assert.equal(
      server.log.entries().find((l) => l.msg === 'later'),
      undefined,
    );
    await sleep(250);
    const later = server.log.entries().find((l) => l.msg === 'later');
    const failed = server.log.entries().find((l) => l.msg === 'waitUntil: the work failed');
    assert.equal(typeof later.reqId, 'number');
    assert.equal(failed.level, 50);
    assert.equal(failed.reqId, later.reqId);
    assert.equal(failed.err.message, 'report failed');
  });
});

describe('a fetch handler: what funcrun keeps before it', () => {
  it('authorize() runs first: a refusal is answered 403 without calling fetch', async (t) => {
    let called = 0;
    const server = await serve(t, {
      authorize: ({ headers }) => headers.authorization === 'Bearer ok',
      fetch() {
        called++;
        return new Response('in');
      },
    });
    const refused = await request(`${server.url}/x`, { method: 'POST', body: 'data' });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.code, 'FUNCRUN_NOT_AUTHORIZED');
    assert.equal(called, 0);
    const allowed = await request(`${server.url}/x`, { headers: { authorization: 'Bearer ok' } });
    assert.equal(allowed.text, 'in');
    assert.equal(called, 1);
  });

  it('CORS: a preflight from an allowed origin is answered by funcrun, and the answer carries the origin', async (t) => {
    let called = 0;
    const server = await serve(t, {
      cors: () => ['https://app.example'],
      fetch() {
        called++;
        return new Response('cross');
      },
    });
    const preflight = await request(server.url, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'PUT' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(called, 0);
    const res = await request(server.url, { headers: { origin: 'https://app.example' } });
    assert.equal(res.text, 'cross');
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
  });
});

describe('a fetch handler: requests without a body', () => {
  it('a POST or DELETE without Content-Length or Transfer-Encoding reads as empty, and the connection goes on', async (t) => {
    const { exchange, statuses } = require('./raw');
    const server = await serve(t, {
      async fetch(request) {
        return Response.json({ method: request.method, text: await request.text(), body: request.body === null ? null : 'stream' });
      },
    });
    const sent = ['POST / HTTP/1.1\r\nHost: x\r\n\r\n', 'DELETE /x HTTP/1.1\r\nHost: x\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'];
    const { text, timedOut } = await exchange(server.port, sent.join(''), { wait: 4000 });
    assert.equal(timedOut, false, text);
    assert.deepEqual(statuses(text), [200, 200, 200]);
    const bodies = text
      .split('\r\n\r\n')
      .slice(1)
      .map((b) => b.replace(/\r\n.*$/s, '').replace(/^[0-9a-f]+\r\n/, ''));
    assert.match(bodies[0], /"method":"POST","text":""/);
    assert.match(bodies[1], /"method":"DELETE","text":""/);
    assert.match(bodies[2], /"method":"GET","text":"","body":null/);
  });
});

describe('a fetch handler: faults', () => {
  it('a throw is a JSON 500 without its message, logged', async (t) => {
    const server = await serve(t, {
      fetch() {
        throw new Error('the database password is hunter2');
      },
    });
    const res = await request(server.url);
    assert.equal(res.status, 500);
    assert.match(res.headers.get('content-type'), /^application\/json/);
    assert.equal(res.json.statusCode, 500);
    assert.ok(!res.text.includes('hunter2'));
    const line = server.log.entries().find((l) => l.msg === 'request failed');
    assert.equal(line.err.message, 'the database password is hunter2');
  });

  it("a throw carrying a status, a numeric code or headers is still a 500: no message, no headers of the error's", async (t) => {
    const errors = {
      '/status': () => Object.assign(new Error('Request failed: https://billing.internal/?key=AIzaSECRET'), { statusCode: 403 }),
      '/code': () => Object.assign(new Error('upstream said no: AIzaSECRET'), { code: 404 }),
      '/headers': () => Object.assign(new Error('AIzaSECRET'), { statusCode: 401, headers: { 'set-cookie': 'sid=AIzaSECRET', location: '/login' } }),
      '/plain': () => ({ statusCode: 409, message: 'AIzaSECRET conflict' }),
      '/async': async () => {
        throw Object.assign(new Error('AIzaSECRET'), { statusCode: 429 });
      },
    };
    const server = await serve(t, {
      fetch(request) {
        const made = errors[new URL(request.url).pathname]();
        if (made instanceof Promise) return made;
        throw made;
      },
    });
    for (const path of Object.keys(errors)) {
      const res = await request(server.url + path);
      assert.equal(res.status, 500, path);
      assert.equal(res.json.message, 'Internal Server Error', path);
      assert.equal(res.headers.get('set-cookie'), null, path);
      assert.equal(res.headers.get('location'), null, path);
      assert.ok(!res.text.includes('AIzaSECRET'), path);
    }
    assert.equal(server.log.entries().filter((l) => l.msg === 'request failed').length, Object.keys(errors).length);
  });

  it("funcrun's own errors keep their status: readEvent()'s 400 for an invalid event", async (t) => {
    const { readEvent } = require('../lib/index.js');
    const server = await serve(t, {
      async fetch(request) {
        const event = await readEvent(request);
        return Response.json(event.data);
      },
    });
    const res = await request(server.url, { method: 'POST', headers: { 'ce-specversion': '1.0', 'ce-type': 't', 'ce-source': '/s' }, body: '{}' });
    assert.equal(res.status, 400, res.text);
    assert.match(res.json.message, /id/);
  });

  it('a value that is not a Response is a JSON 500, logged with what it was', async (t) => {
    const server = await serve(t, { fetch: async () => ({ status: 200, body: 'hi' }) });
    const res = await request(server.url);
    assert.equal(res.status, 500);
    assert.equal(res.json.statusCode, 500);
    const line = server.log.entries().find((l) => l.msg === 'request failed');
    assert.match(line.err.message, /^fetch must return a Response, got /);
  });
});

describe('a fetch handler: answers', () => {
  it('sends the status, reason phrase and headers, each Set-Cookie apart', async (t) => {
    const server = await serve(t, {
      fetch() {
        const headers = new Headers({ 'x-one': '1', 'content-type': 'text/plain' });
        headers.append('set-cookie', 'a=1; Path=/');
        headers.append('set-cookie', 'b=2; HttpOnly');
        // An upstream's framing, passed on: funcrun writes its own.
        headers.set('content-length', '999');
        headers.set('connection', 'upgrade');
        return new Response('made', { status: 201, statusText: 'Made It', headers });
      },
    });
    const res = await rawRequest(server.url);
    let text = '';
    for await (const chunk of res) text += chunk;
    assert.equal(res.statusCode, 201);
    assert.equal(res.statusMessage, 'Made It');
    assert.equal(res.headers['x-one'], '1');
    assert.deepEqual(res.headers['set-cookie'], ['a=1; Path=/', 'b=2; HttpOnly']);
    assert.equal(res.headers['content-length'], '4');
    assert.equal(text, 'made');
    assert.equal(res.headers.connection, 'keep-alive');
    assert.equal(
      server.log.entries().find((l) => l.msg === 'response headers left out'),
      undefined,
    );
  });

  it('HEAD sends no body, and a null body is an empty answer', async (t) => {
    const server = await serve(t, {
      fetch(request) {
        return new URL(request.url).pathname === '/none' ? new Response(null, { status: 202 }) : new Response('a body');
      },
    });
    const head = await rawRequest(server.url, { method: 'HEAD' });
    let bytes = 0;
    for await (const chunk of head) bytes += chunk.length;
    assert.equal(head.statusCode, 200);
    assert.equal(bytes, 0);
    const none = await request(`${server.url}/none`);
    assert.equal(none.status, 202);
    assert.equal(none.text, '');
  });

  it('streams a body as it is produced: the first chunk arrives while the stream is still open', async (t) => {
    const last = gate();
    const server = await serve(t, {
      fetch() {
        const body = new ReadableStream({
          async start(controller) {
            controller.enqueue(encoder.encode('first;'));
            await last.opened;
            controller.enqueue(encoder.encode('last'));
            controller.close();
          },
        });
        return new Response(body, { headers: { 'content-type': 'text/plain' } });
      },
    });
    const res = await fetch(server.url);
    const reader = res.body.getReader();
    const first = await Promise.race([reader.read(), sleep(2000).then(() => 'no first chunk while the stream was open')]);
    assert.equal(new TextDecoder().decode(first.value), 'first;');
    last.open();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    assert.equal(rest, 'last');
    assert.equal(res.headers.get('transfer-encoding'), 'chunked');
  });

  it('streams server-sent events one by one', async (t) => {
    const next = [gate(), gate()];
    const server = await serve(t, {
      fetch() {
        const body = new ReadableStream({
          async start(controller) {
            for (let i = 0; i < 3; i++) {
              controller.enqueue(encoder.encode(`data: ${i}\n\n`));
              if (i < 2) await next[i].opened;
            }
            controller.close();
          },
        });
        return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
      },
    });
    const res = await fetch(server.url);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const events = [];
    for (let i = 0; i < 3; i++) {
      const read = await Promise.race([reader.read(), sleep(2000).then(() => ({ value: 'event not streamed' }))]);
      events.push(read.value);
      if (i < 2) next[i].open();
    }
    assert.deepEqual(events, ['data: 0\n\n', 'data: 1\n\n', 'data: 2\n\n']);
  });

  it('a stream that fails after its first chunk cuts the connection (the client sees an incomplete answer) and is logged', async (t) => {
    const server = await serve(t, {
      fetch() {
        const body = new ReadableStream({
          async pull(controller) {
            if (this.sent) throw new Error('the source broke');
            this.sent = true;
            controller.enqueue(encoder.encode('partial'));
            await sleep(30);
          },
        });
        return new Response(body);
      },
    });
    const res = await rawRequest(server.url);
    assert.equal(res.statusCode, 200);
    const outcome = await new Promise((resolve) => {
      res.on('data', () => {});
      res.on('end', () => resolve('complete'));
      res.on('aborted', () => resolve('aborted'));
      res.on('error', () => resolve('error'));
    });
    assert.notEqual(outcome, 'complete');
    await sleep(20);
    const line = server.log.entries().find((l) => l.level === 50 && l.err?.message === 'the source broke');
    assert.ok(line, 'the failure is logged');
    assert.equal(typeof line.reqId, 'number');
  });

  it('a stream whose first read fails is a JSON 500', async (t) => {
    const server = await serve(t, {
      fetch: () =>
        new Response(
          new ReadableStream({
            pull() {
              throw new Error('no bytes at all');
            },
          }),
        ),
    });
    const res = await request(server.url);
    assert.equal(res.status, 500);
    assert.equal(res.json.statusCode, 500);
    assert.ok(!res.text.includes('no bytes'));
  });

  it('the client going away cancels the stream and aborts request.signal', async (t) => {
    const cancelled = gate();
    const aborted = gate();
    const server = await serve(t, {
      fetch(request) {
        request.signal.addEventListener('abort', () => aborted.open(true));
        let i = 0;
        const body = new ReadableStream({
          async pull(controller) {
            controller.enqueue(encoder.encode(`chunk ${i++}\n`));
            await sleep(20);
          },
          cancel() {
            cancelled.open(true);
          },
        });
        return new Response(body);
      },
    });
    const res = await rawRequest(server.url);
    await new Promise((resolve) => res.once('data', resolve));
    res.destroy();
    assert.equal(await Promise.race([cancelled.opened, sleep(2000).then(() => false)]), true, 'cancel() ran');
    assert.equal(await Promise.race([aborted.opened, sleep(2000).then(() => false)]), true, 'the signal aborted');
  });
});

describe('a fetch handler: modules', () => {
  it('CommonJS module.exports = { fetch } with init beside it; an object with its own routes array (a Hono app) starts', async (t) => {
    const folder = project({
      'index.js': `
class App {
  routes = [{ method: 'GET', path: '/x' }];
  fetch = (request) => new Response('app ' + new URL(request.url).pathname + ' ' + this.ready);
}
const app = new App();
module.exports = app;
module.exports.init = () => { app.ready = 'initialised'; };
`,
    });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = await runServing([folder]);
    t.after(() => proc.stop());
    const res = await request(`${proc.url}/any/where`);
    assert.equal(res.text, 'app /any/where initialised');
  });

  it('an ES module whose default export is { fetch }, with named lifecycle exports; the drain waits for ctx.waitUntil', async (t) => {
    const folder = project({
      'package.json': '{ "type": "module" }',
      'index.js': `
import { appendFileSync } from 'node:fs';
export const readiness = () => true;
export function shutdown() { appendFileSync(process.env.TRACE_FILE, 'shutdown\\n'); }
export default {
  fetch(request, env, ctx) {
    ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, 300)).then(() => appendFileSync(env.TRACE_FILE, 'work done\\n')));
    return new Response('esm ' + request.method);
  },
};
`,
    });
    const traceFile = path.join(folder, 'trace.txt');
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = await runServing([folder], { env: { TRACE_FILE: traceFile } });
    t.after(() => proc.stop());
    const res = await request(`${proc.url}/`, { method: 'PUT' });
    assert.equal(res.text, 'esm PUT');
    const { code } = await proc.stop();
    assert.equal(code, 0);
    assert.equal(fs.readFileSync(traceFile, 'utf8'), 'work done\nshutdown\n');
  });
});

describe('a fetch handler: the drain', () => {
  it("request.signal aborts when the drain's grace period ends and cuts the connection", async (t) => {
    const started = gate();
    const aborted = gate();
    const server = await serve(t, {
      fetch(request) {
        request.signal.addEventListener('abort', () => aborted.open(true));
        started.open();
        return new Promise(() => {});
      },
    });
    const req = http.request(`${server.url}/slow`);
    req.on('error', () => {});
    req.end();
    await started.opened;
    const drain = await stop(server.server, 200);
    assert.equal(drain.cut, 1);
    assert.equal(await Promise.race([aborted.opened, sleep(1000).then(() => false)]), true, 'the signal aborted');
  });
});

describe('the signal at the drain of a serve.js process', () => {
  // The process exits right after the cut: the signal must abort before, not at the socket's 'close'.
  const handlers = {
    "a fetch handler's request.signal": `module.exports = { fetch(request) { return wait(request.signal); } };`,
    "a handle function's context.signal": `module.exports = function handle(context) { return wait(context.signal); };`,
  };
  for (const [which, source] of Object.entries(handlers)) {
    it(`${which} aborts when SIGTERM's grace period cuts the request, before the process exits`, async (t) => {
      const folder = project({
        'index.js': `
const fs = require('node:fs');
const path = require('node:path');
function wait(signal) {
  signal.addEventListener('abort', () => fs.appendFileSync(path.join(__dirname, 'aborted.txt'), String(signal.reason.message) + '\\n'));
  fs.writeFileSync(path.join(__dirname, 'started.txt'), '');
  return new Promise((resolve) => setTimeout(resolve, 20000));
}
${source}
`,
      });
      t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
      const proc = await runServing([folder], { env: { FUNC_GRACE_PERIOD: '300ms' } });
      t.after(() => proc.child.kill('SIGKILL'));
      const req = http.request(`${proc.url}/`);
      req.on('error', () => {});
      req.end();
      while (!fs.existsSync(path.join(folder, 'started.txt'))) await sleep(20);
      const { code } = await proc.stop('SIGTERM');
      assert.equal(code, 3, 'the drain was incomplete');
      assert.ok(proc.lines().some((l) => l.msg.startsWith('request cut at the end of the grace period')));
      assert.equal(fs.readFileSync(path.join(folder, 'aborted.txt'), 'utf8'), 'the request was cut at the end of the grace period\n');
    });
  }
});

describe('a fetch handler: a Hono app', () => {
  it('serves a real Hono app exported as the module: its routes, params, JSON bodies and 404s', async (t) => {
    const folder = project({
      'index.js': `
const { Hono } = require(${JSON.stringify(require.resolve('hono'))});
const app = new Hono();
app.get('/items/:id', (c) => c.json({ id: c.req.param('id') }));
app.post('/echo', async (c) => c.json(await c.req.json(), 201));
module.exports = app;
`,
    });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = await runServing([folder]);
    t.after(() => proc.stop());
    assert.deepEqual((await request(`${proc.url}/items/42`)).json, { id: '42' });
    const echoed = await request(`${proc.url}/echo`, { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
    assert.equal(echoed.status, 201);
    assert.deepEqual(echoed.json, { a: 1 });
    assert.equal((await request(`${proc.url}/nowhere`)).status, 404);
    assert.equal((await request(`${proc.url}/health/liveness`)).status, 200);
    // Nothing at start mistook the app's own properties for funcrun's.
    assert.equal(proc.lines().filter((l) => l.level >= 40).length, 0, proc.out.stdout);
  });
});

describe("a fetch handler: funcrun's errors inside an app that catches everything", () => {
  it("a Hono app without onError answers readEvent()'s refusal as funcrun does: its JSON 400, status and code (HttpError's getResponse)", async (t) => {
    const folder = project({
      'index.js': `
const { Hono } = require(${JSON.stringify(require.resolve('hono'))});
const { readEvent } = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'index.js'))});
const app = new Hono();
app.post('/event', async (c) => c.json({ type: (await readEvent(c.req.raw)).type }));
app.get('/boom', () => { throw new Error('the database at db.internal is down'); });
module.exports = app;
`,
    });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = await runServing([folder]);
    t.after(() => proc.stop());
    const refused = await request(`${proc.url}/event`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(refused.status, 400);
    assert.match(refused.headers.get('content-type'), /^application\/json/);
    assert.equal(refused.json.code, 'FUNCRUN_EVENT_REQUIRED');
    assert.equal(refused.json.statusCode, 400);
    const event = await request(`${proc.url}/event`, {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'content-type': 'application/json', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 'com.example.t', 'ce-specversion': '1.0' },
    });
    assert.deepEqual(event.json, { type: 'com.example.t' });
    // Any other error is still the app's to answer (Hono's own 500), with nothing of funcrun's.
    const boom = await request(`${proc.url}/boom`);
    assert.equal(boom.status, 500);
    assert.doesNotMatch(boom.text, /db\.internal/);
  });
});

describe("a fetch handler: a Hono app's onError as docs/fetch.md gives it", () => {
  it("Hono's HTTPException answers as Hono makes them (basicAuth's 401, bodyLimit's 413, a route's 403); any other error is funcrun's JSON 500", async (t) => {
    const docs = fs.readFileSync(path.join(__dirname, '..', 'docs', 'fetch.md'), 'utf8');
    const block = [...docs.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).find((code) => code.includes('app.onError'));
    assert.ok(block, 'docs/fetch.md has the onError block');
    const hono = (name) => JSON.stringify(require.resolve(name));
    const folder = project({
      'index.js': `
const { Hono } = require(${hono('hono')});
const { basicAuth } = require(${hono('hono/basic-auth')});
const { bodyLimit } = require(${hono('hono/body-limit')});
const app = new Hono();
app.use('/admin/*', basicAuth({ username: 'u', password: 'p' }));
app.get('/admin/x', (c) => c.text('in'));
app.post('/small', bodyLimit({ maxSize: 10 }), (c) => c.text('ok'));
app.get('/forbidden', () => { throw new HTTPException(403, { message: 'not yours' }); });
app.get('/boom', () => { throw new Error('the database at db.internal is down'); });
${block.replace("'hono/http-exception'", hono('hono/http-exception'))}
module.exports = app;
`,
    });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = await runServing([folder]);
    t.after(() => proc.stop());
    const auth = await request(`${proc.url}/admin/x`);
    assert.equal(auth.status, 401);
    assert.match(auth.headers.get('www-authenticate') ?? '', /^Basic /);
    assert.equal((await request(`${proc.url}/admin/x`, { headers: { authorization: `Basic ${Buffer.from('u:p').toString('base64')}` } })).text, 'in');
    assert.equal((await request(`${proc.url}/small`, { method: 'POST', body: 'x'.repeat(100) })).status, 413);
    const forbidden = await request(`${proc.url}/forbidden`);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.text, 'not yours');
    const boom = await request(`${proc.url}/boom`);
    assert.equal(boom.status, 500);
    assert.equal(boom.json.statusCode, 500);
    assert.doesNotMatch(boom.text, /db\.internal/);
    const failed = proc.lines().filter((line) => line.level >= 50);
    assert.equal(failed.length, 1, 'only the plain throw is a fault: ' + proc.out.stdout);
    assert.equal(typeof failed[0].reqId, 'number');
  });
});

describe('a fetch handler: the docs', () => {
  it("docs/functions.md's fetch handler example runs as the page says", async (t) => {
    const page = fs.readFileSync(path.join(__dirname, '..', 'docs', 'functions.md'), 'utf8');
    const section = page.slice(page.indexOf('### A fetch handler'));
    const code = /```js\n([\s\S]*?)```/.exec(section)[1];
    const folder = project({ 'index.js': code });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = await runServing([folder], { env: { FUNC_LOG_LEVEL: 'info' } });
    t.after(() => proc.stop());
    const res = await request(`${proc.url}/orders/7?x=1`, { method: 'POST', body: 'x' });
    assert.deepEqual(res.json, { method: 'POST', path: '/orders/7' });
    const line = await proc.waitFor((l) => l.msg === 'hello');
    assert.equal(line.path, '/orders/7');
    assert.equal(typeof line.reqId, 'number');
  });
});
