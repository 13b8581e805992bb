'use strict';
// A fetch handler's answers at their edges: a body stream that fails right after its first chunks
// (what it produced reaches the client, then the connection ends without the last chunk), and a
// HEAD answer's Content-Length (the one a GET would have, for a body there whole at once).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { serve } = require('./helpers');
const { exchange, firstResponse, statuses } = require('./raw');

// The platform's Response, taken before any server of these specs installs light web globals (the same specs run with them on).
const PlatformResponse = globalThis.Response;

const encoder = new TextEncoder();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A chunked body as sent: its chunks' data, and whether the terminating chunk came. */
function chunksOf(body) {
  const chunks = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol === -1) return { chunks, terminated: false };
    const size = parseInt(body.slice(at, eol), 16);
    if (size === 0) return { chunks, terminated: body.slice(eol, eol + 4) === '\r\n\r\n' };
    if (body.length < eol + 2 + size + 2) return { chunks, terminated: false };
    chunks.push(body.slice(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

// When the body's source fails, after it has produced 'one;' and 'two;'.
const FAILS = {
  'in the same turn': () => {
    throw new Error('the source broke');
  },
  'a microtask later': async () => {
    await null;
    throw new Error('the source broke');
  },
  'a tick later': () => new Promise((resolve, reject) => process.nextTick(() => reject(new Error('the source broke')))),
  'a turn later': () => new Promise((resolve, reject) => setImmediate(() => reject(new Error('the source broke')))),
};

/** A body that enqueues `chunks` at once, and fails (`fail`) when asked for more. */
function failingBody(chunks, fail) {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
    },
    pull: fail,
  });
}

describe('a fetch handler: a body that fails right after its first chunks', () => {
  for (const [when, fail] of Object.entries(FAILS)) {
    it(`failing ${when}: the status and the chunks produced reach the client, the connection ends without the last chunk, the failure is logged with the reqId`, async (t) => {
      const server = await serve(t, { fetch: () => new Response(failingBody(['one;', 'two;'], fail), { status: 201 }) });
      const { text, timedOut } = await exchange(server.port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', { wait: 5000 });
      assert.equal(timedOut, false, 'the connection ended');
      const answer = firstResponse(text);
      assert.equal(answer.status, 201);
      assert.equal(answer.headers['transfer-encoding'], 'chunked');
      const { chunks, terminated } = chunksOf(answer.body);
      assert.equal(chunks.join(''), 'one;two;');
      assert.equal(terminated, false, 'no terminating chunk: the client can tell the answer is incomplete');
      const line = server.log.entries().find((l) => l.level === 50 && l.err?.message === 'the source broke');
      assert.ok(line, 'the failure is logged at error');
      assert.equal(typeof line.reqId, 'number');
    });
  }

  it('a first chunk of 8 MiB then a failure: every byte of it reaches the client before the connection ends', async (t) => {
    const big = new Uint8Array(8 << 20).fill(0x61);
    const server = await serve(t, { fetch: () => new Response(failingBody([big], FAILS['a microtask later'])) });
    const { text, timedOut } = await exchange(server.port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', { wait: 10_000 });
    assert.equal(timedOut, false);
    const { chunks, terminated } = chunksOf(firstResponse(text).body);
    assert.equal(chunks.join('').length, big.length);
    assert.equal(terminated, false);
  });

  it('a node:http client sees the answer as aborted, not complete', async (t) => {
    const server = await serve(t, { fetch: () => new Response(failingBody(['one;'], FAILS['in the same turn'])) });
    const outcome = await new Promise((resolve, reject) => {
      http
        .get(server.url, (res) => {
          let body = '';
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode, body, complete: res.complete }));
          res.on('error', () => resolve({ status: res.statusCode, body, complete: res.complete }));
        })
        .on('error', reject);
    });
    assert.deepEqual(outcome, { status: 200, body: 'one;', complete: false });
  });

  it('a client that never reads: the connection is closed within a few seconds all the same', async (t) => {
    // More than the socket buffers of both ends hold, so that what was written cannot all be flushed.
    const big = new Uint8Array(64 << 20);
    const server = await serve(t, { fetch: () => new Response(failingBody([big], FAILS['a turn later'])) });
    // The server's end of the connection: a client that does not read does not see it close.
    const closed = new Promise((resolve) => server.server.once('connection', (socket) => socket.once('close', () => resolve(true))));
    const socket = net.connect(server.port, '127.0.0.1');
    t.after(() => socket.destroy());
    socket.on('error', () => {});
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(await Promise.race([closed, sleep(5000).then(() => false)]), true, 'closed by the server');
  });

  it('a stream that enqueues chunks and errors in its start() has produced nothing (the error empties its queue): a JSON 500', async (t) => {
    const server = await serve(t, {
      fetch: () =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(encoder.encode('one;'));
              controller.error(new Error('broke in start'));
            },
          }),
        ),
    });
    const res = await fetch(server.url);
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
  });
});

/** The status, headers and body bytes of an answer to `method`. */
function ask(url, method) {
  return new Promise((resolve, reject) => {
    http
      .request(url, { method }, (res) => {
        let bytes = 0;
        res.on('data', (chunk) => (bytes += chunk.length));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, bytes }));
      })
      .on('error', reject)
      .end();
  });
}

describe("a fetch handler: HEAD's Content-Length", () => {
  // A stream that never produces (its pull never settles), as server-sent events waiting for the first.
  const forever = () => new ReadableStream({ pull: () => new Promise(() => {}) });
  const answers = {
    '/text': () => new Response('a body of 17 B ✓'),
    '/bytes': () => new Response(new Uint8Array(300)),
    '/null-declared': () => new Response(null, { headers: { 'content-length': '42' } }),
    '/null': () => new Response(null),
    '/stream': () => new Response(forever()),
    '/stream-declared': () => new Response(forever(), { headers: { 'content-length': '1000' } }),
    '/stream-invalid': () => new Response(forever(), { headers: { 'content-length': '12abc' } }),
    '/stream-two': () => {
      const headers = new Headers();
      headers.append('content-length', '5');
      headers.append('content-length', '6');
      return new Response(forever(), { headers });
    },
    '/text-wrong': () => new Response('five!', { headers: { 'content-length': '99' } }),
    '/empty': () => new Response(''),
    '/reset': () => new Response(null, { status: 205 }),
    // Two chunks a turn apart: a GET sends them chunked.
    '/ticks': () =>
      new Response(
        new ReadableStream({
          async start(controller) {
            controller.enqueue(encoder.encode('one;'));
            await sleep(20);
            controller.enqueue(encoder.encode('two;'));
            controller.close();
          },
        }),
      ),
  };
  const fetchHandler = { fetch: (request) => answers[new URL(request.url).pathname]() };

  it('a body there whole at once (text, bytes): the length a GET sends, and no body', async (t) => {
    const server = await serve(t, fetchHandler);
    for (const [path, length] of [
      ['/text', Buffer.byteLength('a body of 17 B ✓')],
      ['/bytes', 300],
      ['/text-wrong', 5],
      ['/empty', 0],
    ]) {
      const get = await ask(server.url + path, 'GET');
      const head = await ask(server.url + path, 'HEAD');
      assert.equal(get.headers['content-length'], String(length), path);
      assert.equal(head.headers['content-length'], String(length), path);
      assert.equal(head.bytes, 0);
      assert.equal(head.headers['transfer-encoding'], undefined);
    }
  });

  it("a null body or a stream: the Response's own Content-Length when it is one number, else none", async (t) => {
    const server = await serve(t, fetchHandler);
    const expected = {
      '/null-declared': '42',
      '/null': undefined,
      '/stream': undefined,
      '/stream-declared': '1000',
      '/stream-invalid': undefined,
      '/stream-two': undefined,
    };
    for (const [path, length] of Object.entries(expected)) {
      const head = await ask(server.url + path, 'HEAD');
      assert.equal(head.status, 200, path);
      assert.equal(head.headers['content-length'], length, path);
      assert.equal(head.bytes, 0, path);
    }
  });

  it('a body sent chunked to a GET: HEAD says neither a length nor a transfer coding, as node does (RFC 9110 section 9.3.2)', async (t) => {
    const server = await serve(t, fetchHandler);
    const { text } = await exchange(server.port, 'GET /ticks HTTP/1.1\r\nHost: x\r\n\r\nHEAD /ticks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const get = firstResponse(text);
    assert.equal(get.headers['transfer-encoding'], 'chunked');
    assert.equal(get.headers['content-length'], undefined);
    const head = firstResponse(get.body.slice(get.body.indexOf('0\r\n\r\n') + 5));
    assert.equal(head.status, 200);
    assert.equal(head.headers['transfer-encoding'], undefined);
    assert.equal(head.headers['content-length'], undefined);
    assert.equal(head.body, '');
  });

  it('a 205 (Reset Content) says Content-Length: 0 to GET and HEAD alike', async (t) => {
    const server = await serve(t, fetchHandler);
    for (const method of ['GET', 'HEAD']) {
      const answer = await ask(server.url + '/reset', method);
      assert.equal(answer.status, 205, method);
      assert.equal(answer.headers['content-length'], '0', method);
      assert.equal(answer.bytes, 0);
    }
  });

  it('a HEAD answer on a raw connection has no body, and the connection serves the next request', async (t) => {
    const server = await serve(t, fetchHandler);
    const { text } = await exchange(server.port, 'HEAD /text HTTP/1.1\r\nHost: x\r\n\r\nGET /bytes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const head = firstResponse(text);
    assert.equal(head.headers['content-length'], String(Buffer.byteLength('a body of 17 B ✓')));
    assert.ok(head.body.startsWith('HTTP/1.1 200 OK\r\n'), 'the next answer follows the head at once');
    assert.equal(firstResponse(head.body).headers['content-length'], '300');
  });

  it('a Hono app: HEAD carries the Content-Length the route set, and none when it set none (Hono answers HEAD with a null body)', async (t) => {
    const { Hono } = require('hono');
    const app = new Hono();
    app.get('/plain', (c) => c.text('hello'));
    app.get('/sized', (c) => c.body('hello', 200, { 'content-length': '5' }));
    const server = await serve(t, app);
    assert.equal((await ask(`${server.url}/plain`, 'GET')).headers['content-length'], '5');
    assert.equal((await ask(`${server.url}/plain`, 'HEAD')).headers['content-length'], undefined);
    assert.equal((await ask(`${server.url}/sized`, 'HEAD')).headers['content-length'], '5');
  });

  it("a handle function's returned Response answers HEAD the same way", async (t) => {
    const server = await serve(t, () => new Response('from handle'));
    const head = await ask(server.url, 'HEAD');
    assert.equal(head.headers['content-length'], String('from handle'.length));
    assert.equal(head.bytes, 0);
  });
});

describe("a fetch handler: a Response's init as the platform reads it", () => {
  it('a header value and a reason phrase with bytes above 0x7f are sent as those bytes, whatever the body', async (t) => {
    const server = await serve(t, {
      fetch(request) {
        const init = { statusText: 'Caf\u00e9', headers: { 'x-name': 'caf\u00e9 \u00ff' } };
        const { pathname } = new URL(request.url);
        if (pathname === '/headers') init.headers = new Headers(init.headers);
        return new Response(pathname === '/bytes' ? encoder.encode('body') : 'body', init);
      },
    });
    for (const path of ['/text', '/headers', '/bytes']) {
      const { text } = await exchange(server.port, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      // `text` is the answer's bytes as latin1: one character per byte.
      const answer = firstResponse(text);
      assert.ok(text.startsWith('HTTP/1.1 200 Caf\u00e9\r\n'), `${path}: ${JSON.stringify(text.slice(0, 20))}`);
      assert.equal(answer.headers['x-name'], 'caf\u00e9 \u00ff', path);
      assert.equal(answer.body, 'body', path);
    }
  });

  it("a Response whose status reads as a 1xx (a Response's own check got past) is funcrun's JSON 500, and the connection goes on", async (t) => {
    const server = await serve(t, {
      fetch(request) {
        if (new URL(request.url).pathname === '/ok') return new PlatformResponse('ok');
        const response = new PlatformResponse('x');
        Object.defineProperty(response, 'status', { value: 101 });
        return response;
      },
    });
    const { text, timedOut } = await exchange(server.port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', {
      wait: 4000,
    });
    assert.equal(timedOut, false, text);
    assert.deepEqual(statuses(text), [500, 200]);
    assert.match(firstResponse(text).body, /^\{"statusCode":500,/);
    assert.ok(text.endsWith('ok'));
  });

  it("headers named twice in different case are the platform's one header, its values joined, sent on one line", async (t) => {
    const init = () => ({ headers: { 'Content-Type': 'text/html', 'content-type': 'text/plain', 'X-A': '1' } });
    const server = await serve(t, { fetch: () => new Response('body', init()) });
    const { text } = await exchange(server.port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.headers['content-type'], new Response('', init()).headers.get('content-type'));
    assert.equal(answer.headers['content-type'], 'text/html, text/plain');
    assert.equal(answer.headers['x-a'], '1');
  });

  it('a status or status text given as null is read as the platform reads it: null is status 0 (a RangeError), and the text "null"', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        if (new URL(request.url).pathname === '/status') return new Response('x', { status: null });
        return new Response('x', { statusText: null });
      },
    });
    const status = await exchange(server.port, 'GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(firstResponse(status.text).status, 500);
    assert.equal(JSON.parse(firstResponse(status.text).body).statusCode, 500);
    const reason = await exchange(server.port, 'GET /reason HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.ok(reason.text.startsWith('HTTP/1.1 200 null\r\n'), JSON.stringify(reason.text.slice(0, 20)));
    assert.ok(server.log.entries().some((line) => line.level === 50 && line.err?.type === 'RangeError'));
  });
});
