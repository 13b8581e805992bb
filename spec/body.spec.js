'use strict';
require('node:v8').setFlagsFromString('--expose-gc');
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { serve, startServer, request } = require('./helpers');

// Echoes what the handler received, so each case checks the second argument and context.body.
function echo(context, data) {
  const same = context.body === data;
  if (data === undefined) return { kind: 'undefined', same };
  if (Buffer.isBuffer(data)) return { kind: 'buffer', bytes: [...data], same };
  if (data && typeof data === 'object' && data.nodeType === 9) {
    return { kind: 'xml', root: data.documentElement.nodeName, text: data.documentElement.textContent, same };
  }
  if (typeof data === 'string') return { kind: 'string', value: data, same };
  return { kind: Array.isArray(data) ? 'array' : typeof data, value: data, proto: Object.getPrototypeOf(data) === null ? null : 'object', same };
}

describe('request data by media type', () => {
  let server;
  before(async () => {
    server = await startServer(echo, { bodyLimit: 1024 });
  });
  after(() => server.close());

  const post = (body, type, extra = {}) =>
    request(server.url + '/', { method: 'POST', headers: type === undefined ? extra : { 'content-type': type, ...extra }, body });

  it('application/json gives the parsed value', async () => {
    const res = await post('{"a":[1,2],"b":{"c":null}}', 'application/json');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { kind: 'object', value: { a: [1, 2], b: { c: null } }, proto: 'object', same: true });
  });

  it('a JSON primitive gives that primitive', async () => {
    assert.deepEqual((await post('"HELLO"', 'application/json')).json.value, 'HELLO');
    assert.deepEqual((await post('2', 'application/json')).json, { kind: 'number', value: 2, proto: 'object', same: true });
  });

  it('JSON media types are matched case-insensitively, with +json and ;charset= without a space', async () => {
    for (const type of ['Application/JSON', 'application/json;charset=utf-8', 'application/vnd.api+json', 'APPLICATION/JSON; CHARSET="UTF-8"']) {
      const res = await post('{"ok":true}', type);
      assert.deepEqual(res.json.value, { ok: true }, type);
    }
  });

  it('a UTF-8 byte order mark before JSON is ignored', async () => {
    const res = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"bom":1}')]), 'application/json');
    assert.deepEqual(res.json.value, { bom: 1 });
  });

  it('malformed JSON is a 400 that says what is wrong and where', async () => {
    const res = await post('{\n  "a": 1,\n  "b": tru\n}', 'application/json');
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.json.statusCode, 400);
    assert.equal(res.json.line, 3);
    assert.equal(res.json.column, 11); // "tru" then a newline where the "e" should be
    assert.match(res.json.message, /^invalid JSON at line 3, column 11: /);
  });

  it('a JSON error message does not echo the body', async () => {
    const res = await post('{"password": s3cr3t-value}', 'application/json');
    assert.equal(res.status, 400);
    assert.doesNotMatch(res.text, /s3cr3t/);
    assert.equal(res.json.position, 13);
  });

  it("JSON with a __proto__ key, or a constructor's prototype, is a 400 anywhere in it, escaped too, as fastify refuses it", async () => {
    for (const body of [
      '{"__proto__":{"isAdmin":true},"a":1}',
      '{"a":[{"b":{"__proto__":null}}]}',
      '{"\\u005f_proto\\u005f_":{}}',
      '{"constructor":{"prototype":{"isAdmin":true}}}',
      '[{"c\\u006fnstructor":{"prototype":1}}]',
    ]) {
      const res = await post(body, 'application/json');
      assert.equal(res.status, 400, body);
      assert.equal(res.json.message, 'Object contains forbidden prototype property', body);
    }
    // As values, or a constructor without a prototype, they are data like any other.
    const res = await post('{"a":"__proto__","constructor":"Object","b":{"constructor":{"name":"x"}},"c":"\\u00e9"}', 'application/json');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.value, { a: '__proto__', constructor: 'Object', b: { constructor: { name: 'x' } }, c: 'é' });
  });

  it('truncated JSON is a 400 pointing at its end', async () => {
    const res = await post('{"a": [1, 2', 'application/json');
    assert.equal(res.status, 400);
    assert.equal(res.json.position, 11);
  });

  it('an empty JSON body is undefined', async () => {
    const res = await post('', 'application/json');
    assert.deepEqual(res.json, { kind: 'undefined', same: true });
  });

  it('form-urlencoded gives an ordinary object, repeated keys as arrays, __proto__ and constructor only keys', async (t) => {
    const res = await post('a=1&b=x+y&a=2&c=%C3%A9&__proto__=p&constructor=c&toString=t', 'application/x-www-form-urlencoded');
    assert.deepEqual(res.json, {
      kind: 'object',
      value: { a: ['1', '2'], b: 'x y', c: 'é', ['__proto__']: 'p', constructor: 'c', toString: 't' },
      proto: 'object',
      same: true,
    });
    // The prototype is Object's, untouched: `__proto__=p` made an own key, and nothing polluted.
    const probe = await serve(t, (ctx, data) => ({
      ordinary: Object.getPrototypeOf(data) === Object.prototype && Object.getPrototypeOf(ctx.query) === Object.prototype,
      // eslint-disable-next-line no-prototype-builtins -- the parsed objects' own prototype methods are what is checked
      own: Object.hasOwn(data, '__proto__') && data.hasOwnProperty('a') && ctx.query.hasOwnProperty('__proto__'),
      polluted: {}.x !== undefined || {}.q !== undefined,
    }));
    const seen = await request(probe.url + '/?__proto__=q&constructor=c', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'x=1&__proto__[x]=1&__proto__=q&a=1',
    });
    assert.deepEqual(seen.json, { ordinary: true, own: true, polluted: false });
  });

  it('a form whose escapes decode to bytes that are not UTF-8 is a 400, never U+FFFD; escapes of UTF-8, and ones that are no escape, are read', async () => {
    for (const body of ['a=%ff%fe', '%ff=1', 'a=%E2%82', 'a=ok&b=x%C3', 'a=%C3%A9%C3']) {
      const res = await post(body, 'application/x-www-form-urlencoded');
      assert.equal(res.status, 400, body);
      assert.equal(res.json.code, 'FUNCRUN_INVALID_TEXT', body);
    }
    const fine = await post('a=%C3%A9%E2%82%AC&b=%zz&c=100%&d=%41', 'application/x-www-form-urlencoded');
    assert.deepEqual(fine.json.value, { a: 'é€', b: '%zz', c: '100%', d: 'A' });
  });

  it('an empty body with a Content-Type arrives as faas-js-runtime delivers it', async () => {
    assert.deepEqual((await post('', 'text/plain')).json, { kind: 'string', value: '', same: true });
    assert.deepEqual((await post('', 'application/x-www-form-urlencoded')).json, { kind: 'object', value: {}, proto: 'object', same: true });
    assert.deepEqual((await post('', 'application/octet-stream')).json, { kind: 'buffer', bytes: [], same: true });
    assert.deepEqual((await post('', 'application/xml')).json, { kind: 'undefined', same: true });
    // No Content-Type, or a method without a body: nothing arrives.
    assert.deepEqual((await post(Buffer.alloc(0), undefined)).json, { kind: 'undefined', same: true });
    assert.deepEqual((await request(server.url + '/', { headers: { 'content-type': 'text/plain' } })).json, { kind: 'undefined', same: true });
  });

  it('text/* gives a string decoded by its charset', async () => {
    assert.deepEqual((await post('héllo', 'text/plain')).json, { kind: 'string', value: 'héllo', same: true });
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // "café" in ISO-8859-1
    assert.equal((await post(latin1, 'text/plain; charset=iso-8859-1')).json.value, 'café');
    assert.equal((await post('a,b\n1,2', 'text/csv')).json.value, 'a,b\n1,2');
  });

  it('an unknown charset is a 415', async () => {
    const res = await post('x', 'text/plain; charset=klingon');
    assert.equal(res.status, 415);
    assert.match(res.json.message, /klingon/);
  });

  for (const type of ['application/xml', 'text/xml', 'application/atom+xml', 'application/xml;charset=utf-8']) {
    it(`${type} gives an XML DOM Document`, async () => {
      const res = await post('<?xml version="1.0"?><order id="1"><item>tea</item></order>', type);
      assert.deepEqual(res.json, { kind: 'xml', root: 'order', text: 'tea', same: true });
    });
  }

  it('malformed XML is a 400 that says what is wrong and where', async () => {
    const res = await post('<order>\n  <item>tea</order>', 'application/xml');
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^invalid XML at line 2/);
    assert.equal(res.json.line, 2);
  });

  it('text that is not XML at all is a 400', async () => {
    const res = await post('just words', 'text/xml');
    assert.equal(res.status, 400);
    assert.match(res.json.message, /invalid XML/);
  });

  it('any other type gives a Buffer with the exact bytes', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80]);
    for (const type of ['application/octet-stream', 'image/png', 'multipart/mixed; boundary=x', undefined]) {
      const res = await post(bytes, type);
      assert.deepEqual(res.json, { kind: 'buffer', bytes: [...bytes], same: true }, String(type));
    }
  });

  it('no body gives undefined', async () => {
    assert.deepEqual((await request(server.url + '/')).json, { kind: 'undefined', same: true });
    assert.deepEqual((await post(undefined, 'application/json')).json, { kind: 'undefined', same: true });
  });

  it('a body over the limit is a 413 and closes the connection', async () => {
    const res = await post('x'.repeat(1025), 'text/plain');
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('connection'), 'close');
    assert.equal(res.json.limit, 1024);
    assert.equal((await post('x'.repeat(1024), 'text/plain')).status, 200);
  });

  it('a chunked body over the limit is a 413 before it is all sent', async () => {
    const { port } = new URL(server.url);
    const answer = await new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let data = '';
      socket.on('data', (chunk) => (data += chunk));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
      socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n');
      socket.write('800\r\n' + 'y'.repeat(0x800) + '\r\n');
      // The rest of the body never comes: the server must answer and close anyway.
    });
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /"statusCode":413/);
  });

  it('a compressed body is a 415 saying to send it uncompressed', async () => {
    const res = await post('x', 'text/plain', { 'content-encoding': 'gzip' });
    assert.equal(res.status, 415);
    assert.match(res.json.message, /uncompressed/);
  });

  it("a header's value in a refusal is quoted cut short: a Content-Encoding or a charset of thousands of characters", async () => {
    const encoding = await post('x', 'text/plain', { 'content-encoding': 'x'.repeat(12_000) });
    assert.equal(encoding.status, 415);
    assert.equal(encoding.json.message, `Content-Encoding '${'x'.repeat(40)}…' is not supported; send the body uncompressed`);
    const charset = await post('x', `text/plain; charset=${'c'.repeat(5000)}`);
    assert.equal(charset.status, 415);
    assert.equal(charset.json.message, `unsupported charset '${'c'.repeat(40)}…'`);
  });

  it('keeps serving after every bad request: after each one, the same server answers a good request correctly', { timeout: 30_000 }, async (t) => {
    // Its own server: what this checks does not depend on which tests ran before it, or whether they ran.
    const own = await serve(t, echo, { bodyLimit: 1024 });
    const { port } = new URL(own.url);
    const LIMIT_MS = 3000; // every exchange below is bounded: a server that hangs fails, it does not stall the run
    const bounded = (promise, what) => {
      let timer;
      const late = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no answer within ${LIMIT_MS} ms`)), LIMIT_MS);
      });
      return Promise.race([promise, late]).finally(() => clearTimeout(timer));
    };
    /** Sends `raw` on a new connection; resolves with all the server wrote once it closes (or `hangUpAfter` ms pass). */
    const rawExchange = (raw, { hangUpAfter } = {}) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      const done = new Promise((resolve, reject) => {
        let data = '';
        socket.on('data', (chunk) => (data += chunk));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
        socket.write(raw);
        if (hangUpAfter !== undefined) setTimeout(() => socket.destroy(), hangUpAfter);
      });
      return bounded(done, 'raw request').finally(() => socket.destroy());
    };
    /** POSTs JSON on a new connection (no pooled keep-alive socket can stand in for the listener). */
    const freshPost = (body) =>
      new Promise((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: Number(port),
            method: 'POST',
            path: '/',
            agent: false,
            headers: { 'content-type': 'application/json', connection: 'close' },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode, text }));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.setTimeout(LIMIT_MS, () => req.destroy(new Error(`no answer within ${LIMIT_MS} ms`)));
        req.end(body);
      });
    const postJson = (body, type, extra = {}) =>
      request(own.url + '/', { method: 'POST', headers: { 'content-type': type, ...extra }, body, signal: AbortSignal.timeout(LIMIT_MS) });

    // Each bad request, and what it must be answered (undefined: the client hangs up, no answer expected).
    const bad = [
      ['malformed JSON', async () => (await postJson('{"b": tru}', 'application/json')).status, 400],
      ['truncated JSON', async () => (await postJson('{"a": [1, 2', 'application/json')).status, 400],
      ['an unknown charset', async () => (await postJson('x', 'text/plain; charset=klingon')).status, 415],
      ['bytes that are not UTF-8', async () => (await postJson(Buffer.from([0x61, 0xff]), 'text/plain')).status, 400],
      ['malformed XML', async () => (await postJson('<order>\n  <item>tea</order>', 'application/xml')).status, 400],
      ['text that is not XML', async () => (await postJson('just words', 'text/xml')).status, 400],
      ['a body over the limit', async () => (await postJson('x'.repeat(1025), 'text/plain')).status, 413],
      ['a compressed body', async () => (await postJson('x', 'text/plain', { 'content-encoding': 'gzip' })).status, 415],
      [
        'a chunked body over the limit, never finished',
        async () => {
          const answer = await rawExchange(
            'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n' + '800\r\n' + 'y'.repeat(0x800) + '\r\n',
          );
          return Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
        },
        413,
      ],
      [
        'a body over the limit with Expect: 100-continue',
        async () => {
          const answer = await rawExchange('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n', {
            hangUpAfter: 1000,
          });
          return Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
        },
        413,
      ],
      [
        'a malformed HTTP request',
        async () => {
          const answer = await rawExchange('GARBAGE\r\n\r\n');
          return Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
        },
        400,
      ],
      [
        'a client that hangs up halfway through its body',
        async () => {
          await rawExchange('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n' + 'z'.repeat(10), { hangUpAfter: 100 });
          return undefined;
        },
        undefined,
      ],
    ];

    for (const [i, [what, send, expected]] of bad.entries()) {
      let status;
      try {
        status = await send();
      } catch (error) {
        assert.fail(`${what}: the bad request itself got no answer: ${error.cause?.code ?? error.code ?? ''} ${error.message}`);
      }
      assert.equal(status, expected, `${what}: the answer to the bad request itself`);
      // A good request, different each round (so no earlier answer can pass for it), on a fresh connection.
      const payload = { after: what, round: i };
      let good;
      try {
        good = await bounded(freshPost(JSON.stringify(payload)), 'good request');
      } catch (error) {
        assert.fail(`after ${what}, a good request got no answer: ${error.code ?? ''} ${error.message}`);
      }
      assert.equal(good.status, 200, `after ${what}: status of a good request`);
      assert.deepEqual(JSON.parse(good.text), { kind: 'object', value: payload, proto: 'object', same: true }, `after ${what}: answer to a good request`);
    }
  });
});

it('once the body is read, a request kept alive holds none of it: what its reader left on it holds no bytes', async (t) => {
  // Whoever keeps a request (a function, a connection whose body was not read to its end) must
  // not keep its body: the reader's listeners stay on the request after its end.
  const gc = require('node:vm').runInNewContext('gc');
  const kept = [];
  const bodies = [];
  const { url } = await serve(t, (context, data) => {
    kept.push(context.req);
    bodies.push(new WeakRef(data));
    return { bytes: data.length };
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  for (const size of [7, 100_000]) {
    const answer = await new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/octet-stream' } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c)).on('end', () => resolve(JSON.parse(text)));
      });
      req.on('error', reject);
      req.end(Buffer.alloc(size, 1));
    });
    assert.deepEqual(answer, { bytes: size });
  }
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  assert.deepEqual(
    bodies.map((body) => body.deref() === undefined),
    [true, true],
    'each body was collected',
  );
  assert.equal(kept.length, 2);
});

describe('text bodies must be what they claim', () => {
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
    const answer = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=latin1' },
      body: Buffer.from([0x63, 0x61, 0x66, 0xe9]),
    });
    assert.equal(answer.json.data, 'café');
  });

  it('bytes invalid in a declared multi-byte charset are a 400', async () => {
    const answer = await request(server.url, { method: 'POST', headers: { 'content-type': 'text/plain; charset=shift_jis' }, body: Buffer.from([0x82]) });
    assert.equal(answer.status, 400);
  });
});
