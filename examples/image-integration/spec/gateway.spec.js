'use strict';
// StackRox Central's HTTP side as grpc-gateway v2 gives it: `application/json+pretty` is read as
// JSON and answered pretty-printed (pkg/grpc/server.go's marshaler option), and every error is a
// (status, code) pair runtime.HTTPStatusFromCode can produce: no 405, 413 or 415.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { request } = require('./helpers');
const { startPeer } = require('./peers');
const { startService } = require('./service');
const { PATH, UPDATED_PATH } = require('../build/lib/service.js');
const { HTTP_STATUS_FROM_CODE } = require('../build/lib/gateway.js');
const { grpcCode } = require('../build/lib/grpc.js');

const TOKEN = 'gateway-spec-token';
const auth = { authorization: `Bearer ${TOKEN}` };

/** A request with node's client: a body sent chunked (no Content-Length) when `chunked`. */
function raw(url, { method = 'POST', headers = {}, body = '', chunked = false } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: chunked ? headers : { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    if (chunked) {
      // In pieces, so that the limit is met while the body is read, not by its length.
      for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.slice(i, i + 64 * 1024));
      req.end();
    } else req.end(body);
  });
}

describe('the body as grpc-gateway reads it', () => {
  let service;
  let clair;
  before(async () => {
    clair = await startPeer((req, res) => {
      res.writeHead(req.url === '/v1/namespaces' ? 200 : 404, { 'content-type': 'application/json' });
      res.end('{"Namespaces":[]}');
    });
    service = await startService({ apiToken: TOKEN, maxRequestBytes: 256 * 1024 });
  });
  after(async () => {
    await service.close();
    await clair.close();
  });
  const clairBody = () => ({ name: 'clair', type: 'clair', categories: ['SCANNER'], clair: { endpoint: clair.url, insecure: true } });
  const post = (body, headers = {}, path = PATH) =>
    request(service.url + path, { method: 'POST', headers: { ...auth, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

  it('application/json+pretty is read as JSON, and the integration is tested', async () => {
    const seen = clair.received.length;
    const res = await post(clairBody(), { 'content-type': 'application/json+pretty' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.text, '{}');
    assert.equal(clair.received.length, seen + 1, 'the scanner was contacted');
  });

  it("an error asked for as application/json+pretty is indented as StackRox's pretty marshaler writes it", async () => {
    const res = await post({ ...clairBody(), name: '' }, { 'content-type': 'application/json+pretty; charset=utf-8' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const expected = {
      code: 3,
      message: 'invalid image integration: name: is required',
      details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'name', description: 'is required' }] }],
      error: 'invalid image integration: name: is required',
    };
    assert.equal(res.text, JSON.stringify(expected, null, 2));
  });

  it('?pretty (with any value or none) and Accept: application/json+pretty pretty-print; Accept: * keeps the answer compact', async () => {
    const bad = { ...clairBody(), name: '' };
    const pretty = (res) => res.text.startsWith('{\n  "code": 3,\n');
    for (const query of ['?pretty', '?pretty=', '?pretty=false']) {
      const res = await request(`${service.url}${PATH}${query}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(bad),
      });
      assert.ok(pretty(res), `${query}: ${res.text}`);
    }
    assert.ok(pretty(await post(bad, { 'content-type': 'application/json', accept: 'application/json+pretty' })));
    const compact = await post(bad, { 'content-type': 'application/json+pretty', accept: '*' });
    assert.equal(compact.status, 400);
    assert.ok(!compact.text.includes('\n'), compact.text);
    assert.ok(!(await post(bad, { 'content-type': 'application/json' })).text.includes('\n'));
    const get = await request(`${service.url}${PATH}?pretty`, { headers: auth });
    assert.equal(get.status, 501);
    assert.equal(get.text, JSON.stringify({ code: 12, message: 'Method Not Allowed', details: [], error: 'Method Not Allowed' }, null, 2));
  });

  it('a pretty 404 for an id keeps its status, code and message', async () => {
    const res = await post({ config: { ...clairBody(), id: 'abc' }, updatePassword: true }, { accept: 'application/json+pretty' }, UPDATED_PATH);
    assert.equal(res.status, 404);
    assert.equal(
      res.text,
      JSON.stringify(
        { code: 5, message: 'image integration "abc" not found: not found', details: [], error: 'image integration "abc" not found: not found' },
        null,
        2,
      ),
    );
  });

  it('XML, a form, and any other media type are read as JSON: not JSON, a 400 that echoes nothing; JSON under any type is tested', async () => {
    const secret = 'gateway-xml-secret';
    for (const [body, type] of [
      [`<integration><password>${secret}</password></integration>`, 'application/xml'],
      [`name=x&password=${secret}`, 'application/x-www-form-urlencoded'],
      [`{"name": "x", "password": "${secret}"`, 'application/cloudevents+json'],
    ]) {
      const res = await post(body, { 'content-type': type });
      assert.equal(res.status, 400, type);
      assert.equal(res.json.code, 3, type);
      assert.ok(!res.text.includes(secret), res.text);
      assert.ok(!service.log.text().includes(secret));
    }
    for (const type of ['application/xml', 'image/png', 'text/csv; charset=latin1']) {
      const res = await post(clairBody(), { 'content-type': type });
      assert.equal(res.status, 200, `${type}: ${res.text}`);
    }
  });

  it("a body that begins with a byte order mark is a 400, as Go's JSON decoder reads it", async () => {
    const res = await post(`\ufeff${JSON.stringify(clairBody())}`, { 'content-type': 'application/json' });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 3);
    assert.match(res.json.message, /invalid JSON at offset 0/);
  });

  it('a body that is not UTF-8 is a 400', async () => {
    const res = await request(service.url + PATH, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]),
    });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 3);
  });
});

describe('error answers: only pairs grpc-gateway writes', () => {
  let service;
  before(async () => {
    service = await startService({ apiToken: TOKEN, maxRequestBytes: 256 * 1024 });
  });
  after(() => service.close());

  it('a body over the limit is a 429, RESOURCE_EXHAUSTED (8), by its Content-Length or while it is read; never 413', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(300 * 1024) });
    for (const chunked of [false, true]) {
      const res = await raw(service.url + PATH, { headers: { ...auth, 'content-type': 'application/json' }, body: big, chunked });
      assert.equal(res.status, 429, `chunked: ${chunked}`);
      assert.equal(res.json.code, 8);
      assert.match(res.json.message, /larger than the largest accepted, 262144 bytes/);
    }
    // Far past funcrun's own limit for a streamed body (uploadLimit), by its Content-Length alone.
    const huge = await raw(service.url + PATH, { headers: { ...auth, 'content-length': String(2 * 1024 ** 3) }, chunked: true });
    assert.equal(huge.status, 429);
    assert.equal(huge.json.code, 8);
  });

  it('a compressed body is a 400, INVALID_ARGUMENT (3), as the gateway fails to decode it; never 415', async () => {
    const res = await raw(service.url + PATH, { headers: { ...auth, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: '{}' });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 3);
    assert.match(res.json.message, /compressed/);
  });

  it('every error answer is a (status, code) pair of runtime.HTTPStatusFromCode', async () => {
    const answers = [
      ['no token', await raw(service.url + PATH, { body: '{}' })],
      ['not JSON', await raw(service.url + PATH, { headers: auth, body: '{"name":' })],
      ['invalid', await raw(service.url + PATH, { headers: auth, body: '{}' })],
      ['an id', await raw(service.url + PATH, { headers: auth, body: '{"id":"x","name":"n","categories":["SCANNER"]}' })],
      ['no such path', await raw(`${service.url}/v1/other`, { headers: auth, body: '{}' })],
      ['GET', await raw(service.url + PATH, { method: 'GET', headers: auth })],
      ['DELETE', await raw(service.url + UPDATED_PATH, { method: 'DELETE', headers: auth })],
      ['too large', await raw(service.url + PATH, { headers: auth, body: 'x'.repeat(300 * 1024) })],
      ['compressed', await raw(service.url + PATH, { headers: { ...auth, 'content-encoding': 'br' }, body: '{}' })],
      ['/metrics without a token', await raw(`${service.url}/metrics`, { method: 'GET' })],
    ];
    const seen = new Set();
    for (const [what, res] of answers) {
      assert.ok(res.status >= 400, what);
      assert.equal(HTTP_STATUS_FROM_CODE[res.json.code], res.status, `${what}: ${res.status} with code ${res.json.code}`);
      seen.add(res.status);
    }
    assert.deepEqual([...seen].sort(), [400, 401, 404, 429, 501]);
  });

  it('every status the service answers with maps to the code that maps back to it', () => {
    for (const status of [400, 401, 403, 404, 409, 429, 499, 500, 501, 503, 504]) {
      assert.equal(HTTP_STATUS_FROM_CODE[grpcCode(status)], status, String(status));
    }
  });
});
