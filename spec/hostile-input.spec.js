'use strict';
// Hostile input is normal input: every request is processed in time linear in its size, never
// blocks the event loop for long, and gets a well-formed JSON answer (a 4xx, never a 5xx).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { serve, startServer, request } = require('./helpers');
const { exchange, firstResponse, statuses } = require('./raw');

const LIMIT = 4_000_000;

/**
 * Sends a hostile request and, while it is being processed, a liveness probe. Resolves with the
 * hostile answer, how long it took, and how long the probe waited. The defects these specs
 * reproduce block the event loop for tens of seconds; the bounds below are 1 s and 3 s.
 */
async function whileHostile(url, path, init) {
  const started = performance.now();
  const hostile = request(url + path, init).then((answer) => ({ ...answer, ms: performance.now() - started }));
  await new Promise((resolve) => setTimeout(resolve, 30));
  const probeStart = performance.now();
  const probe = await request(url + '/health/liveness');
  const probeMs = performance.now() - probeStart;
  assert.equal(probe.status, 200);
  return { ...(await hostile), probeMs };
}

function assertQuick(answer) {
  assert.ok(answer.probeMs < 1000, `liveness waited ${Math.round(answer.probeMs)} ms`);
  assert.ok(answer.ms < 3000, `the hostile request took ${Math.round(answer.ms)} ms`);
}

const structured = (event) => ({ method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
const event = (extra) => ({ specversion: '1.0', id: '1', source: '/spec', type: 'spec.test', ...extra });

describe('hostile input: time linear in size', () => {
  let server;
  before(async () => {
    server = await startServer((ctx, data) => (Buffer.isBuffer(data) ? data.toString('utf8') : { kind: typeof data }), { bodyLimit: LIMIT });
  });
  after(() => server.close());

  it('data_base64 of 1 MB of whitespace and a "!" is a 400 at once, and liveness is answered meanwhile', async () => {
    const answer = await whileHostile(server.url, '/', structured(event({ data_base64: ' '.repeat(1_000_000) + '!' })));
    assert.equal(answer.status, 400);
    assert.equal(answer.json.attribute, 'data_base64');
    assertQuick(answer);
  });

  it('malformed JSON nested 1,000,000 deep is a 400 with its position, not a 500', async () => {
    const answer = await whileHostile(server.url, '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(1_000_000) });
    assert.equal(answer.status, 400);
    assert.equal(typeof answer.json.position, 'number');
    assert.equal(typeof answer.json.line, 'number');
    assertQuick(answer);
  });

  it('well-formed JSON nested deeper than 512 levels is a 400; 512 levels are fine', async () => {
    const deep = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(513) + ']'.repeat(513) });
    assert.equal(deep.status, 400);
    assert.match(deep.json.message, /nested deeper than 512/);
    const ok = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(512) + ']'.repeat(512) });
    assert.equal(ok.status, 200);
    const inString = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify('['.repeat(5000)) });
    assert.equal(inString.status, 200, 'brackets inside strings do not count');
  });

  it('a structured CloudEvent whose data nests 1,000,000 deep is a 400 at once', async () => {
    const body = '{"specversion":"1.0","id":"1","source":"/s","type":"t","data":' + '['.repeat(1_000_000);
    const answer = await whileHostile(server.url, '/', { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body });
    assert.equal(answer.status, 400);
    assertQuick(answer);
  });
});

describe('hostile input: text must be what it claims', () => {
  let server;
  before(async () => {
    server = await startServer((ctx, data) => ({ data }));
  });
  after(() => server.close());

  const invalid = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]); // {"a":"\xff\xfe"}
  for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8']) {
    it(`invalid UTF-8 in a ${type} body is a 400, not silently replaced`, async () => {
      const answer = await request(server.url, { method: 'POST', headers: { 'content-type': type }, body: invalid });
      assert.equal(answer.status, 400);
      assert.match(answer.json.message, /UTF-8/);
    });
  }

  it('a body in a declared single-byte charset is decoded by it', async () => {
    const answer = await request(server.url, { method: 'POST', headers: { 'content-type': 'text/plain; charset=latin1' }, body: Buffer.from([0x63, 0x61, 0x66, 0xe9]) });
    assert.equal(answer.json.data, 'café');
  });

  it('bytes invalid in a declared multi-byte charset are a 400', async () => {
    const answer = await request(server.url, { method: 'POST', headers: { 'content-type': 'text/plain; charset=shift_jis' }, body: Buffer.from([0x82]) });
    assert.equal(answer.status, 400);
  });
});

describe('hostile CloudEvents', () => {
  let server;
  before(async () => {
    server = await startServer((ctx, data) => ({ data: Buffer.isBuffer(data) ? { bytes: data.toString('utf8') } : data, attributes: { ...ctx.cloudevent, data: undefined } }));
  });
  after(() => server.close());

  it('a ce-data header is not data: 400 naming it', async () => {
    const answer = await request(server.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-data': 'forged', 'content-type': 'application/json' },
      body: '{"real":true}',
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.attribute, 'data');
  });

  for (const [text, why] of [
    ['abcde', 'a length no bytes have'],
    ['a===', 'three padding characters'],
    ['ab=c', 'padding in the middle'],
    ['ab-_', 'the URL alphabet'],
    ['YWJj!', 'a character outside the alphabet'],
  ]) {
    it(`data_base64 with ${why} (${JSON.stringify(text)}) is a 400`, async () => {
      const answer = await request(server.url, structured(event({ data_base64: text })));
      assert.equal(answer.status, 400);
      assert.equal(answer.json.attribute, 'data_base64');
    });
  }

  for (const text of ['aGVsbG8=', 'aGVsbG8', 'aGVs\nbG8=']) {
    it(`data_base64 ${JSON.stringify(text)} decodes to the bytes it encodes`, async () => {
      const answer = await request(server.url, structured(event({ data_base64: text })));
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.json.data, { bytes: 'hello' });
    });
  }

  for (const time of ['2020-02-30T00:00:00Z', '2021-02-29T00:00:00Z', '2020-01-01T24:00:00Z', '2020-13-01T00:00:00Z', '2020-01-01T00:00:00+24:00', '2020-00-10T00:00:00Z']) {
    it(`time ${time} is not a time: 400`, async () => {
      const answer = await request(server.url, structured(event({ time })));
      assert.equal(answer.status, 400);
      assert.equal(answer.json.attribute, 'time');
    });
  }

  it('a leap day and a leap second are times', async () => {
    for (const time of ['2020-02-29T12:00:00Z', '2016-12-31T23:59:60Z', '2020-01-01T00:00:00.123+05:30']) {
      assert.equal((await request(server.url, structured(event({ time })))).status, 200, time);
    }
  });

  it('integer extensions are 32-bit: 2^31 is a 400, 2^31 - 1 and -2^31 pass', async () => {
    assert.equal((await request(server.url, structured(event({ big: 2 ** 31 })))).status, 400);
    assert.equal((await request(server.url, structured(event({ big: 2 ** 31 - 1, small: -(2 ** 31) })))).status, 200);
  });

  it('specversion 0.3 data with datacontentencoding base64 is decoded', async () => {
    const answer = await request(
      server.url,
      structured({ specversion: '0.3', id: '1', source: '/s', type: 't', datacontenttype: 'application/octet-stream', datacontentencoding: 'base64', data: 'aGVsbG8=' }),
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json.data, { bytes: 'hello' });
  });

  it('specversion 0.3 base64 data that is not base64 is a 400', async () => {
    const answer = await request(server.url, structured({ specversion: '0.3', id: '1', source: '/s', type: 't', datacontentencoding: 'base64', data: '!!!' }));
    assert.equal(answer.status, 400);
  });
});

describe('HTTP framing an attacker chooses', () => {
  let server;
  let port;
  before(async () => {
    server = await startServer((ctx, data) => ({ path: ctx.path, data }), { bodyLimit: 1000 });
    port = server.server.address().port;
  });
  after(() => server.close());

  it('an absolute-form target is routed by its path', async () => {
    const { text } = await exchange(port, 'GET http://example.test/health/liveness HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.status, 200);
    assert.equal(answer.body, 'OK');
    const fn = firstResponse((await exchange(port, 'GET HTTP://example.test/a/b?x=1 HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n')).text);
    assert.equal(JSON.parse(fn.body).path, '/a/b');
    const bare = firstResponse((await exchange(port, 'GET http://example.test HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n')).text);
    assert.equal(JSON.parse(bare.body).path, '/');
  });

  it('an HTTP/1.1 request without Host gets a JSON 400', async () => {
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nConnection: close\r\n\r\n')).text);
    assert.equal(answer.status, 400);
    assert.match(answer.headers['content-type'], /^application\/json/);
    assert.match(JSON.parse(answer.body).message, /Host/);
  });

  it('an HTTP/1.0 request without Host is served', async () => {
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.0\r\n\r\n')).text);
    assert.equal(answer.status, 200);
  });

  it('an unknown Expect gets a JSON 417', async () => {
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n')).text);
    assert.equal(answer.status, 417);
    assert.equal(JSON.parse(answer.body).statusCode, 417);
  });

  it('Expect: 100-continue with a Content-Length over the limit gets 413 and no 100 Continue', async () => {
    const { text } = await exchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 5000\r\n\r\n', { wait: 1500 });
    assert.deepEqual(statuses(text), [413]);
    assert.doesNotMatch(text, /100 Continue/);
    assert.equal(JSON.parse(firstResponse(text).body).limit, 1000);
  });

  it('Expect: 100-continue within the limit gets 100 Continue, then the answer', async () => {
    const { text } = await exchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n', {
      writes: [[100, 'hi']],
    });
    assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    assert.deepEqual(JSON.parse(text.slice(text.indexOf('{'))).data, 'hi');
  });
});

describe('named functions: query names that are Object.prototype members', () => {
  let server;
  before(async () => {
    const echo = (input) => input;
    server = await startServer({ functions: { echo } });
  });
  after(() => server.close());

  it('?toString=1&valueOf=2&hasOwnProperty=3 are ordinary parameters', async () => {
    const answer = await request(server.url + '/echo?toString=1&valueOf=2&hasOwnProperty=3&a.toString=4');
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, { toString: '1', valueOf: '2', hasOwnProperty: '3', a: { toString: '4' } });
  });
});

describe('more hostile shapes', () => {
  it('named functions: query names nesting deeper than 512 levels are a 400', async (t) => {
    const server = await serve(t, { functions: { echo: (input) => input, ignore: () => 'ok' } });
    const key = Array(6000).fill('a').join('.');
    for (const name of ['echo', 'ignore']) assert.equal((await request(`${server.url}/${name}?${key}=1`)).status, 400);
    assert.equal((await request(`${server.url}/echo?${Array(512).fill('a').join('.')}=1`)).status, 200);
  });

  it('an echoed structured event with data_base64 and a leap second, or 0.3 attributes, is sent back as it came', async (t) => {
    const server = await serve(t, (ctx) => ctx.cloudevent);
    for (const event of [
      { specversion: '1.0', id: '1', source: '/s', type: 't', time: '2016-12-31T23:59:60Z', data_base64: 'aGk=' },
      { specversion: '0.3', id: '1', source: '/s', type: 't', schemaurl: 'https://example.test/s', data_base64: 'aGk=' },
      { specversion: '1.0', id: '1', source: '/s', type: 't', data: { a: 1 } },
    ]) {
      const answer = await request(server.url, structured(event));
      assert.equal(answer.status, 200, JSON.stringify(event));
      assert.deepEqual(answer.json, event, 'nothing invented, nothing reformatted');
    }
  });

  it('an extension attribute named like a method of the event is a 400', async (t) => {
    const server = await serve(t, () => 'ok');
    for (const name of ['validate', 'emit', 'constructor']) {
      const answer = await request(server.url, structured(event({ [name]: 'x' })));
      assert.equal(answer.status, 400, name);
      assert.equal(answer.json.attribute, name);
    }
  });

  it('a unique 512 KiB datacontenttype per event is not kept: memory stays flat', async (t) => {
    const v8 = require('node:v8');
    v8.setFlagsFromString('--expose-gc');
    const gc = require('node:vm').runInNewContext('gc');
    const server = await serve(t, () => 'ok', { bodyLimit: 2_000_000 });
    const send = (i) => request(server.url, structured(event({ datacontenttype: `text/plain; x=${String(i).padEnd(512 * 1024, 'y')}`, data: 'd' })));
    await send(-1);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 40; i++) assert.equal((await send(i)).status, 200);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.ok(grown < 10 * 1024 * 1024, `heap grew by ${(grown / 1048576).toFixed(1)} MB`);
  });

  it('routes with optional parameters match a long path at once', async (t) => {
    const server = await serve(t, { routes: { 'GET /a/:x?/:y?/:z?': (ctx) => ctx.params } });
    const started = performance.now();
    const answer = await request(`${server.url}/a/${'x'.repeat(8000)}/`);
    assert.ok(performance.now() - started < 1000);
    assert.equal(answer.json.x.length, 8000);
    const miss = await request(`${server.url}/a/${'x'.repeat(8000)}/1/2/3/4`);
    assert.equal(miss.status, 404);
  });
});

describe('framing: pipelining before garbage, CONNECT, transfer codings', () => {
  let server;
  let port;
  before(async () => {
    server = await startServer((ctx, data) => ({ path: ctx.path, data }));
    port = server.server.address().port;
  });
  after(() => server.close());

  it('complete pipelined requests followed by malformed bytes are answered, then the connection closes', async () => {
    const one = (path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const { text, timedOut } = await exchange(port, one('/a') + one('/b') + 'GARBAGE \u0000\r\n\r\n');
    assert.equal(timedOut, false);
    assert.deepEqual(statuses(text), [200, 200]);
    assert.match(text, /"path":"\/b"/);
  });

  it('CONNECT gets a JSON 405', async () => {
    const { text } = await exchange(port, 'CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.status, 405);
    assert.equal(JSON.parse(answer.body).statusCode, 405);
  });

  // A client that never closes its side must not keep the connection (and its slot) after the answer.
  for (const [what, bytes, status] of [
    ['CONNECT', 'CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n', 405],
    ['malformed bytes', 'GARBAGE \u0000\r\n\r\n', 400],
    ['headers too large', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, 431],
  ]) {
    it(`after ${what} (${status}) the connection is closed by funcrun, even when the client keeps its side open`, async (t) => {
      const socket = require('node:net').connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      t.after(() => socket.destroy());
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk) => (text += chunk));
      const ended = new Promise((resolve) => socket.once('end', resolve)); // and the client never ends its own side
      socket.write(bytes);
      await ended;
      assert.equal(firstResponse(text).status, status);
      const connections = () => new Promise((resolve, reject) => server.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
      for (let i = 0; (await connections()) > 0; i++) {
        assert.ok(i < 200, 'the half-open connection is still held after 10 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
  }

  it('Transfer-Encoding: gzip, chunked is a 501, not still-coded bytes for the function', async () => {
    const { text } = await exchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.status, 501);
    assert.equal(answer.headers.connection, 'close');
  });
});

describe('a request whose body goes wrong', () => {
  for (const [what, body, status, options] of [
    ['a body slower than the request timeout gets a JSON 408', 'Content-Length: 10\r\n\r\nab', 408, { requestTimeout: 800 }],
    ['malformed chunk framing gets a JSON 400', 'Transfer-Encoding: chunked\r\n\r\nzz\r\n', 400, {}],
  ]) {
    it(`${what}, then the connection closes`, async (t) => {
      const server = await serve(t, () => 'ok', options);
      const { text, timedOut } = await exchange(server.server.address().port, `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n${body}`, { wait: 5000 });
      assert.equal(timedOut, false);
      const answer = firstResponse(text);
      assert.equal(answer.status, status, text);
      assert.equal(JSON.parse(answer.body).statusCode, status);
    });
  }
});
