'use strict';
// What a function returns cannot crash the process, corrupt the framing, or be steered by the
// client: streams are piped safely, funcrun owns framing, parsed request data is only data.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Readable } = require('node:stream');
const { serve, startServer, request } = require('./helpers');
const { exchange, firstResponse, statuses } = require('./raw');

const openFds = () => fs.readdirSync('/proc/self/fd').length;

describe('returned streams', () => {
  let server;
  let make;
  let destroyed = 0;
  before(async () => {
    server = await startServer(() => make());
  });
  after(() => server.close());

  it('an object-mode stream (rows) is a 500 before any byte, logged with the reqId, counted, and the server lives on', async () => {
    make = () => Readable.from([{ id: 1 }, { id: 2 }]);
    const answer = await request(server.url);
    assert.equal(answer.status, 500);
    assert.equal(answer.json.message, 'Internal Server Error');
    const line = server.log.entries().find((e) => e.level === 50 && /not bytes or a string/.test(e.err?.message ?? ''));
    assert.ok(line, 'logged');
    assert.equal(typeof line.reqId, 'number');
    make = () => Readable.from([Buffer.from('fine')]);
    assert.equal((await request(server.url)).text, 'fine');
    const metrics = await request(server.url + '/metrics');
    assert.match(metrics.text, /faas_errors\{[^}]*\} [1-9]/);
  });

  it('a stream failing after its first bytes cuts the connection; the server lives on', async () => {
    make = () =>
      Readable.from(
        (async function* () {
          yield Buffer.from('part');
          throw new Error('disk on fire');
        })(),
      );
    await assert.rejects(request(server.url));
    make = () => Readable.from(['ok']);
    assert.equal((await request(server.url)).text, 'ok');
  });

  it('a stream failing before any byte is a 500', async () => {
    make = () => new Readable({ read() { this.destroy(new Error('no such file')); } });
    assert.equal((await request(server.url)).status, 500);
  });

  it('an already destroyed stream is a 500, not a request that hangs', async () => {
    make = () => {
      const stream = new Readable({ read() {} });
      stream.destroy();
      return stream;
    };
    const answer = await request(server.url, { signal: AbortSignal.timeout(3000) });
    assert.equal(answer.status, 500);
  });

  it('strings in a stream are sent as UTF-8', async () => {
    make = () => Readable.from(['caf', 'é']);
    assert.equal((await request(server.url)).text, 'café');
  });

  it('HEAD gets the headers and no body; the stream is destroyed', async () => {
    let stream;
    make = () => (stream = new Readable({ read() { this.push('x'); } }));
    const answer = await request(server.url, { method: 'HEAD' });
    assert.equal(answer.status, 200);
    assert.equal(answer.text, '');
    assert.ok(stream.destroyed);
  });

  it('streams of aborted downloads are destroyed: 100 aborts leave no open file descriptors', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-stream-')), 'big');
    fs.writeFileSync(file, Buffer.alloc(8 * 1024 * 1024, 1));
    make = () => {
      const stream = fs.createReadStream(file, { highWaterMark: 16 * 1024 });
      stream.once('close', () => destroyed++);
      return stream;
    };
    const before = openFds();
    for (let i = 0; i < 100; i++) {
      const controller = new AbortController();
      const res = await fetch(server.url, { signal: controller.signal });
      const reader = res.body.getReader();
      await reader.read();
      controller.abort();
      await reader.closed.catch(() => {});
    }
    for (let i = 0; i < 100 && destroyed < 100; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(destroyed, 100);
    assert.ok(openFds() - before < 10, `open file descriptors grew by ${openFds() - before}`);
  });
});

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
});

describe('funcrun owns the framing', () => {
  let server;
  let port;
  let headers;
  before(async () => {
    server = await startServer(() => ({ statusCode: 200, headers, body: 'hello world' }));
    port = server.server.address().port;
  });
  after(() => server.close());

  it('a function\'s transfer-encoding, content-length and connection are left out; the next request on the connection is served', async () => {
    headers = { 'transfer-encoding': 'chunked', 'content-length': '5', connection: 'upgrade', 'keep-alive': 'timeout=1', upgrade: 'websocket', 'x-kept': 'yes' };
    const one = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
    const { text } = await exchange(port, one + one.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'));
    assert.deepEqual(statuses(text), [200, 200]);
    const first = firstResponse(text);
    assert.equal(first.headers['content-length'], '11');
    assert.equal(first.headers['transfer-encoding'], undefined);
    assert.equal(first.headers.upgrade, undefined);
    assert.equal(first.headers['x-kept'], 'yes');
    assert.ok(first.body.startsWith('hello worldHTTP/1.1 200'), 'the first body is exactly 11 bytes');
    assert.ok(server.log.entries().some((e) => e.level === 40 && /headers left out/.test(e.msg)));
  });

  it('array values are sent as repeated headers', async () => {
    headers = { 'set-cookie': ['a=1', 'b=2'], 'x-list': ['x', 'y'] };
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text);
    assert.deepEqual(answer.headers['set-cookie'], ['a=1', 'b=2']);
    assert.deepEqual(answer.headers['x-list'], ['x', 'y']);
    assert.equal(answer.headers['0'], undefined);
  });

  it('headers given as [name, value] pairs, a Headers or a Map are sent by name', async () => {
    for (headers of [[['x-a', '1'], ['x-a', '2']], new Headers([['x-a', '1']]), new Map([['x-a', '1']])]) {
      const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text);
      assert.equal(answer.status, 200);
      assert.ok(answer.headers['x-a'] !== undefined, JSON.stringify(answer.headers));
      assert.equal(answer.headers['0'], undefined);
    }
  });

  it('a header value node refuses is left out rather than failing the response', async () => {
    headers = { 'x-bad': 'caf\u20ac', 'x-crlf': 'a\r\nset-cookie: x=1', 'x-good': 'ok' };
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-good'], 'ok');
    assert.equal(answer.headers['x-bad'], undefined);
    assert.equal(answer.headers['set-cookie'], undefined);
  });
});

describe('malformed bytes on a connection whose response is in flight', () => {
  it('close the connection; no 400 is written into the streaming body', async (t) => {
    const server = await serve(t, () =>
      Readable.from(
        (async function* () {
          for (let i = 0; i < 6; i++) {
            yield Buffer.from(`chunk${i};`);
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
      ),
    );
    const { text } = await exchange(server.server.address().port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', { writes: [[80, 'GARBAGE \u0000\r\n\r\n']] });
    assert.deepEqual(statuses(text), [200]);
    assert.doesNotMatch(text, /HTTP\/1\.1 400/);
    assert.doesNotMatch(text, /malformed/);
  });

  it('with no response in flight, malformed bytes get a JSON 400', async (t) => {
    const server = await serve(t, () => 'ok');
    const { text } = await exchange(server.server.address().port, 'GARBAGE \u0000\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.status, 400);
    assert.equal(JSON.parse(answer.body).statusCode, 400);
  });
});

describe('streams funcrun does not send are closed, never left to crash the process', () => {
  const fsStream = (file) => fs.createReadStream(file);
  const missing = path.join(os.tmpdir(), 'funcrun-no-such-file');
  const crashes = [];
  const onCrash = (err) => crashes.push(err);

  async function settle(check) {
    for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  }

  it('HEAD of a function returning a stream of a missing file: 200 headers, no crash, the server lives on', async (t) => {
    process.on('uncaughtException', onCrash);
    const server = await serve(t, () => fsStream(missing));
    t.after(() => process.off('uncaughtException', onCrash));
    const head = await request(server.url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(crashes, []);
    assert.equal((await request(server.url)).status, 500);
  });

  for (const [name, options, fn, init] of [
    ['the late result after a 504 timeout', { timeout: 100 }, (track) => async () => (await new Promise((r) => setTimeout(r, 250)), track()), {}],
    ['a batch handler\'s value that is not an event', {}, (track) => () => track(), { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify([{ specversion: '1.0', id: '1', source: '/s', type: 't' }]) }],
    ['the body of a structured return with an invalid statusCode', {}, (track) => () => ({ statusCode: 'teapot', body: track() }), {}],
  ]) {
    it(`${name}: the stream is destroyed`, async (t) => {
      let opened = 0;
      let closed = 0;
      const track = () => {
        opened++;
        const stream = new Readable({ read() {} });
        stream.once('close', () => closed++);
        return stream;
      };
      process.on('uncaughtException', onCrash);
      const server = await serve(t, fn(track), options);
      t.after(() => process.off('uncaughtException', onCrash));
      for (let i = 0; i < 10; i++) await request(server.url, init);
      await settle(() => closed === opened && opened === 10);
      assert.equal(opened, 10);
      assert.equal(closed, opened);
      assert.deepEqual(crashes, []);
    });
  }

  it('a stream returned after the client went away is destroyed', async (t) => {
    let closed = 0;
    const server = await serve(t, async () => {
      await new Promise((r) => setTimeout(r, 150));
      const stream = new Readable({ read() {} });
      stream.once('close', () => closed++);
      return stream;
    });
    for (let i = 0; i < 5; i++) await fetch(server.url, { signal: AbortSignal.timeout(50) }).catch(() => {});
    await settle(() => closed === 5);
    assert.equal(closed, 5);
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
});
