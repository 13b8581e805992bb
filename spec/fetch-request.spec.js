'use strict';
// A fetch handler's Request is node's global Request: `text()`, `json()`, `arrayBuffer()` and
// `bytes()` read the body whole as undici would (the same results, the same errors), and leave
// the Request used as undici's read does; before any read it passes on as any Request does
// (`new Request(request)`, `clone()`, `fetch` with it as the init), body included.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { Hono } = require('hono');
const { serve, request } = require('./helpers');

/** A loopback server answering with what it received: method, path, one header and the body. */
async function upstream(t) {
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, path: req.url, custom: req.headers['x-custom'] ?? null, body }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${server.address().port}`;
}

/** What a call or a promise gave: its value, or the class and message it threw. */
async function outcome(fn) {
  try {
    return { value: await fn() };
  } catch (err) {
    return { threw: err.constructor.name, message: err.message };
  }
}

describe("a fetch handler's Request: its body read whole", () => {
  it('gives text, JSON, an ArrayBuffer of the body exactly, and bytes', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        const as = new URL(request.url).searchParams.get('as');
        if (as === 'json') return Response.json({ json: await request.json() });
        if (as === 'buffer') {
          const buffer = await request.arrayBuffer();
          return Response.json({ isArrayBuffer: buffer instanceof ArrayBuffer, byteLength: buffer.byteLength, bytes: [...new Uint8Array(buffer)] });
        }
        if (as === 'bytes') {
          const bytes = await request.bytes();
          return Response.json({ isUint8Array: bytes instanceof Uint8Array, bytes: [...bytes] });
        }
        return Response.json({ text: await request.text() });
      },
    });
    const post = async (as, body) => (await request(`${server.url}/?as=${as}`, { method: 'POST', body })).json;
    assert.deepEqual(await post('text', 'héllo'), { text: 'héllo' });
    assert.deepEqual(await post('json', '{"a":[1,2]}'), { json: { a: [1, 2] } });
    assert.deepEqual(await post('buffer', new Uint8Array([0, 255, 7])), { isArrayBuffer: true, byteLength: 3, bytes: [0, 255, 7] });
    assert.deepEqual(await post('bytes', new Uint8Array([9, 8])), { isUint8Array: true, bytes: [9, 8] });
    // Decoded as undici decodes: a leading byte order mark dropped, bytes that are not UTF-8 replaced.
    assert.deepEqual(await post('text', new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0xff])), { text: 'a\ufffd' });
    assert.deepEqual(await post('text', new Uint8Array([])), { text: '' });
  });

  it('leaves the Request used: a second read rejects, clone() and new Request(request) throw, its body is locked', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        const usedBefore = request.bodyUsed;
        const text = await request.text();
        return Response.json({
          text,
          usedBefore,
          usedAfter: request.bodyUsed,
          locked: request.body.locked,
          again: await outcome(() => request.json()),
          clone: await outcome(() => request.clone()),
          copy: await outcome(() => new Request(request)),
        });
      },
    });
    const { json } = await request(server.url, { method: 'POST', body: 'once' });
    assert.equal(json.text, 'once');
    assert.equal(json.usedBefore, false);
    assert.equal(json.usedAfter, true);
    assert.equal(json.locked, true);
    assert.equal(json.again.threw, 'TypeError');
    assert.equal(json.clone.threw, 'TypeError');
    assert.equal(json.copy.threw, 'TypeError');
  });

  it('rejects json() with a SyntaxError for a body that is not JSON, and reads a body read through its stream as before', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        if (request.headers.get('x-read') === 'stream') {
          let text = '';
          const decoder = new TextDecoder();
          for await (const chunk of request.body) text += decoder.decode(chunk, { stream: true });
          return Response.json({ text, used: request.bodyUsed, again: await outcome(() => request.text()) });
        }
        return Response.json(await outcome(() => request.json()));
      },
    });
    assert.equal((await request(server.url, { method: 'POST', body: '{nope' })).json.threw, 'SyntaxError');
    const streamed = (await request(server.url, { method: 'POST', body: 'by the stream', headers: { 'x-read': 'stream' } })).json;
    assert.equal(streamed.text, 'by the stream');
    assert.equal(streamed.used, true);
    assert.equal(streamed.again.threw, 'TypeError');
  });

  it('a body over the limit makes json() reject with the limit, and the answer is 413', async (t) => {
    let rejected;
    const server = await serve(
      t,
      {
        async fetch(request) {
          try {
            await request.json();
          } catch (err) {
            rejected = err;
          }
          return new Response('read');
        },
      },
      { bodyLimit: 100 },
    );
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(`"${'x'.repeat(300)}"`));
        controller.close();
      },
    });
    const res = await request(server.url, { method: 'POST', body, duplex: 'half' });
    assert.equal(rejected?.code, 'FUNCRUN_BODY_TOO_LARGE');
    assert.equal(res.status, 413);
  });

  it('still reads formData() and blob() with the content type the request carries', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        if (new URL(request.url).pathname === '/blob') {
          const blob = await request.blob();
          return Response.json({ type: blob.type, text: await blob.text() });
        }
        const form = await request.formData();
        return Response.json({ name: form.get('name'), n: form.getAll('n') });
      },
    });
    const form = await request(server.url, { method: 'POST', body: new URLSearchParams('name=ann&n=1&n=2') });
    assert.deepEqual(form.json, { name: 'ann', n: ['1', '2'] });
    const blob = await request(`${server.url}/blob`, { method: 'POST', body: 'plain', headers: { 'content-type': 'text/x-spec' } });
    assert.deepEqual(blob.json, { type: 'text/x-spec', text: 'plain' });
  });
});

describe("a fetch handler's Request: passed on before it is read", () => {
  it('is a Request: new Request(request) and clone() carry its method, URL, headers and body', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        const copy = new Request(request);
        const clone = copy.clone();
        return Response.json({
          instance: request instanceof Request,
          method: copy.method,
          path: new URL(copy.url).pathname,
          custom: copy.headers.get('x-custom'),
          copy: await copy.text(),
          clone: await clone.text(),
          originalUsed: await outcome(() => request.text()),
        });
      },
    });
    const { json } = await request(`${server.url}/a/b`, { method: 'PUT', body: 'passed on', headers: { 'x-custom': 'yes' } });
    assert.equal(json.instance, true);
    assert.equal(json.method, 'PUT');
    assert.equal(json.path, '/a/b');
    assert.equal(json.custom, 'yes');
    assert.equal(json.copy, 'passed on');
    assert.equal(json.clone, 'passed on');
    // Passed on, its body belongs to the copy.
    assert.equal(json.originalUsed.threw, 'TypeError');
  });

  it('after clone(), the clone and the Request itself each read the whole body, in either order', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        const cloneFirst = new URL(request.url).searchParams.has('clone-first');
        const clone = request.clone();
        const [first, second] = cloneFirst ? [clone, request] : [request, clone];
        const as = first.headers.get('content-type') === 'application/json' ? 'json' : 'text';
        const firstRead = await first[as]();
        return Response.json({ first: firstRead, second: await second[as](), used: [request.bodyUsed, clone.bodyUsed] });
      },
    });
    for (const order of ['', '?clone-first']) {
      const text = await request(`${server.url}/${order}`, { method: 'POST', body: 'read twice' });
      assert.deepEqual(text.json, { first: 'read twice', second: 'read twice', used: [true, true] }, order);
      // Sent without a length, in chunks.
      const chunked = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"n":'));
          controller.enqueue(new TextEncoder().encode('1}'));
          controller.close();
        },
      });
      const json = await request(`${server.url}/${order}`, { method: 'POST', body: chunked, duplex: 'half', headers: { 'content-type': 'application/json' } });
      assert.deepEqual(json.json, { first: { n: 1 }, second: { n: 1 }, used: [true, true] }, order);
    }
  });

  it('request.constructor is the global Request: new request.constructor(url, init) makes a Request', async (t) => {
    const server = await serve(t, {
      async fetch(request) {
        const made = new request.constructor('http://localhost/made', { method: 'POST', body: 'made' });
        return Response.json({
          same: request.constructor === Request,
          name: request.constructor.name,
          made: [made instanceof Request, made.url, made.signal.aborted, await made.text()],
        });
      },
    });
    const { json } = await request(`${server.url}/a`, { method: 'POST', body: 'x' });
    assert.deepEqual(json, { same: true, name: 'Request', made: [true, 'http://localhost/made', false, 'made'] });
  });

  it('is sent on with fetch as the init of a request to another server, body included', async (t) => {
    const to = await upstream(t);
    const server = await serve(t, {
      fetch: (request) => fetch(new Request(`${to}${new URL(request.url).pathname}`, request)),
    });
    const res = await request(`${server.url}/forwarded`, { method: 'POST', body: 'to upstream', headers: { 'x-custom': 'passed' } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { method: 'POST', path: '/forwarded', custom: 'passed', body: 'to upstream' });
  });

  it('serves a Hono app that reads the body as JSON, and one that passes c.req.raw on', async (t) => {
    const to = await upstream(t);
    const app = new Hono();
    app.post('/echo', async (c) => c.json({ got: await c.req.json(), raw: c.req.raw instanceof Request }));
    app.post('/proxy', (c) => fetch(`${to}/proxied`, c.req.raw));
    const server = await serve(t, app);
    const echo = await request(`${server.url}/echo`, { method: 'POST', body: '{"n":1}', headers: { 'content-type': 'application/json' } });
    assert.deepEqual(echo.json, { got: { n: 1 }, raw: true });
    const proxied = await request(`${server.url}/proxy`, { method: 'POST', body: 'via hono', headers: { 'x-custom': 'h' } });
    assert.deepEqual(proxied.json, { method: 'POST', path: '/proxied', custom: 'h', body: 'via hono' });
  });
});

/** A POST sent with node's client, its body written in `chunks` (chunked unless told otherwise): status and body. */
function post(url, headers, chunks) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers, agent: false }, async (res) => {
      let text = '';
      for await (const chunk of res) text += chunk;
      resolve({ status: res.statusCode, text });
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

/** A loopback server answering with the headers and the body it received. */
async function headersUpstream(t) {
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ headers: req.headers, body }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${server.address().port}`;
}

// The connection-level headers (RFC 9110 section 7.6.1), and two that Connection names.
const HOP = {
  'transfer-encoding': 'chunked',
  connection: 'keep-alive, X-Hop , x-other',
  'keep-alive': 'timeout=5',
  'proxy-connection': 'keep-alive',
  upgrade: 'h2c',
  te: 'trailers',
  trailer: 'x-sum',
  'x-hop': 'named by Connection',
  'x-other': 'named too',
};
const HOP_NAMES = ['transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer', 'x-hop', 'x-other'];

describe("a fetch handler's Request: the connection's own headers left out", () => {
  it('request.headers has no connection-level header and none Connection names, and keeps the end-to-end ones', async (t) => {
    const server = await serve(t, {
      fetch: async (request) => Response.json({ headers: Object.fromEntries(request.headers), body: await request.text() }),
    });
    const res = await post(server.url, { ...HOP, 'x-custom': 'kept', 'content-type': 'text/plain', accept: 'text/plain' }, ['hel', 'lo']);
    assert.equal(res.status, 200);
    const { headers, body } = JSON.parse(res.text);
    assert.equal(body, 'hello');
    for (const name of HOP_NAMES) assert.equal(headers[name], undefined, name);
    assert.equal(headers['x-custom'], 'kept');
    assert.equal(headers['content-type'], 'text/plain');
    assert.equal(headers.accept, 'text/plain');
    assert.match(headers.host, /^127\.0\.0\.1:\d+$/);
  });

  it('keeps every header of a request that has none of them, a repeated Set-Cookie included', async (t) => {
    const server = await serve(t, { fetch: (request) => Response.json({ headers: [...request.headers], cookies: request.headers.getSetCookie() }) });
    const res = await post(server.url, { 'content-length': '2', 'x-custom': 'kept', 'set-cookie': ['a=1', 'b=2'] }, ['hi']);
    const { headers, cookies } = JSON.parse(res.text);
    assert.deepEqual(cookies, ['a=1', 'b=2']);
    assert.deepEqual(
      headers.filter(([name]) => name === 'content-length' || name === 'x-custom'),
      [
        ['content-length', '2'],
        ['x-custom', 'kept'],
      ],
    );
  });

  it('a chunked upload proxied with fetch(new Request(upstream, request)) arrives whole, and so through a Hono app passing c.req.raw on', async (t) => {
    const to = await headersUpstream(t);
    const app = new Hono();
    app.post('/hono', (c) => fetch(`${to}/hono`, c.req.raw));
    app.post('/*', (c) => fetch(new Request(`${to}/made`, c.req.raw)));
    const plain = await serve(t, { fetch: (request) => fetch(new Request(`${to}/plain`, request)) });
    const hono = await serve(t, app);
    for (const url of [`${plain.url}/`, `${hono.url}/hono`, `${hono.url}/other`]) {
      const res = await post(url, { ...HOP, 'x-custom': 'along' }, ['a chunked ', 'upload, ', 'whole']);
      assert.equal(res.status, 200, `${url}: ${res.text}`);
      const { headers, body } = JSON.parse(res.text);
      assert.equal(body, 'a chunked upload, whole');
      assert.equal(headers['x-custom'], 'along');
      // The client's own went no further: the upstream got undici's framing, and none of the names Connection listed.
      assert.equal(headers['x-hop'], undefined);
      assert.equal(headers['x-other'], undefined);
      assert.equal(headers['keep-alive'], undefined);
      assert.equal(headers.upgrade, undefined);
    }
  });

  it('a chunked upload over the body limit, proxied, is still the 413', async (t) => {
    const to = await headersUpstream(t);
    const server = await serve(t, { fetch: (request) => fetch(new Request(to, request)) }, { bodyLimit: 8 });
    const res = await post(server.url, { 'transfer-encoding': 'chunked' }, ['0123456', '789abcdef']);
    assert.equal(res.status, 413);
    assert.equal(JSON.parse(res.text).code, 'FUNCRUN_BODY_TOO_LARGE');
  });
});

describe("a fetch handler's Request: the methods a Request cannot carry", () => {
  it("TRACE is funcrun's 405 with an Allow of the methods that reach fetch; TRACK, which node does not parse, its 400: neither reaches fetch", async (t) => {
    let called = 0;
    const server = await serve(t, {
      fetch() {
        called++;
        return new Response('ok');
      },
    });
    const { exchange, firstResponse } = require('./raw');
    const trace = firstResponse((await exchange(server.port, 'TRACE /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { wait: 4000 })).text);
    assert.equal(trace.status, 405);
    assert.equal(trace.headers.allow, 'GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS');
    assert.equal(JSON.parse(trace.body).code, 'FUNCRUN_METHOD_NOT_ALLOWED');
    const track = firstResponse((await exchange(server.port, 'TRACK /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { wait: 4000 })).text);
    assert.equal(track.status, 400);
    assert.equal(JSON.parse(track.body).code, 'FUNCRUN_MALFORMED_REQUEST');
    assert.equal((await request(`${server.url}/x`, { method: 'PUT', body: 'a' })).text, 'ok');
    assert.equal(called, 1, 'only the PUT reached fetch');
  });
});
