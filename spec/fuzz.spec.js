'use strict';
// Random requests, bounded in count and time: every complete request gets a status funcrun
// documents, bad client input never gets a 5xx, the process never crashes, memory stays flat.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const v8 = require('node:v8');
const vm = require('node:vm');
const { serve, request } = require('./helpers');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const SEED = Number(process.env.FUZZ_SEED || 20261122);
const COUNT = Number(process.env.FUZZ_COUNT || 400);
const LIMIT = 4096;
const DOCUMENTED = new Set([200, 204, 400, 404, 405, 408, 413, 415, 431]);

// A small seeded generator (mulberry32): the same seed gives the same requests.
function random(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (list) => list[Math.floor(next() * list.length)];
  const bytes = (n) => Buffer.from(Array.from({ length: n }, () => Math.floor(next() * 256)));
  return { next, pick, bytes };
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'PROPFIND', 'post', 'G@T', ''];
const PATHS = ['/', '/a/b/c', '/%', '/%zz/x', '/..%2f..%2fetc', '/?a=1&a=2&b', '/?__proto__=1&constructor=2&method=X', '/?%ff=%fe', '/' + 'x'.repeat(3000), '/caf\u00e9', '*', 'http://host/abs', '/health/readiness', '/metrics', '//double'];
const TYPES = [
  'application/json', 'application/json;charset=utf-8', 'APPLICATION/JSON; charset="UTF-8"', 'application/ld+json', 'text/plain', 'text/plain; charset=klingon',
  'text/xml', 'application/xml', 'application/x-www-form-urlencoded', 'application/octet-stream', 'multipart/form-data; boundary=x',
  'application/cloudevents+json', 'application/cloudevents-batch+json', 'application/cloudevents+xml', 'garbage', ';;;', '', undefined,
];
const BODIES = (r) => [
  '', '{', '{"a":1', '{"a":1}', '[1,2,3]', 'null', '"str"', '{"a":"\u0000"}', '<a><b></a>', '<a>ok</a>', '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
  'a=1&a=2&b=%ZZ', JSON.stringify({ id: '1', source: '/s', type: 't', specversion: '1.0', data: { a: 1 } }), JSON.stringify({ id: 1, specversion: '9' }),
  JSON.stringify([{ id: '1', source: '/s', type: 't', specversion: '1.0' }, 5]), r.bytes(64), Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xff]), 'x'.repeat(LIMIT + 10),
];
const CE_HEADERS = [{}, { 'ce-id': '1' }, { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0' }, { 'ce-specversion': '0.3', 'ce-id': '1', 'ce-source': 'bad source', 'ce-type': 't' }, { 'ce-time': 'yesterday', 'ce-id': 'x', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0' }, { 'ce-Bad_Name': 'x' }];

// One request as raw bytes, sometimes malformed on purpose. `abort`: send part, then hang up.
function makeRequest(r) {
  const method = r.pick(METHODS);
  const path = r.pick(PATHS);
  const body = r.pick(BODIES(r));
  const payload = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const headers = { host: 'fuzz', connection: 'close', ...r.pick(CE_HEADERS) };
  const type = r.pick(TYPES);
  if (type !== undefined) headers['content-type'] = type;
  if (r.next() < 0.05) headers['content-encoding'] = r.pick(['gzip', 'identity', 'br']);
  if (r.next() < 0.05) headers['x-\u00ff'] = 'bad header name';
  if (r.next() < 0.05) headers.origin = 'https://evil.example';
  const framing = r.next();
  let head = `${method} ${path} HTTP/1.1\r\n` + Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n');
  let data;
  if (framing < 0.6) data = Buffer.concat([Buffer.from(`${head}\r\ncontent-length: ${payload.length}\r\n\r\n`, 'latin1'), payload]);
  else if (framing < 0.85) {
    const chunk = payload.length ? Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from('\r\n')]) : Buffer.alloc(0);
    data = Buffer.concat([Buffer.from(`${head}\r\ntransfer-encoding: chunked\r\n\r\n`, 'latin1'), chunk, Buffer.from('0\r\n\r\n')]);
  } else if (framing < 0.93) {
    data = Buffer.concat([Buffer.from(`${head}\r\ncontent-length: ${payload.length + 100}\r\n\r\n`, 'latin1'), payload]);
    return { data, abort: true };
  } else {
    data = Buffer.from(`${head}\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n`, 'latin1'); // conflicting framing
  }
  return { data, abort: false };
}

function exchange(port, { data, abort }) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(data);
      if (abort) setTimeout(() => socket.destroy(), 5);
    });
    let out = '';
    socket.setTimeout(5000, () => {
      socket.destroy();
      resolve({ timedOut: true, out });
    });
    socket.on('data', (c) => (out += c.toString('latin1')));
    socket.on('close', () => resolve({ out }));
    socket.on('error', () => undefined);
  });
}

describe(`fuzzing the server (seed ${SEED}, ${COUNT} requests)`, () => {
  let server;
  const crashes = [];
  const onCrash = (err) => crashes.push(err);
  before(async () => {
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    server = await serve(
      {
        handle: (ctx, data) => ({ kind: Buffer.isBuffer(data) ? 'buffer' : data?.nodeType === 9 ? 'xml' : typeof data, event: ctx.cloudevent?.type ?? null, method: ctx.method }),
        cors: () => ['https://app.example'],
      },
      { bodyLimit: LIMIT, headersTimeout: 2000, requestTimeout: 3000 },
    );
  });
  after(async () => {
    await server.close();
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
  });

  async function batch(r, count, concurrency) {
    const port = Number(new URL(server.url).port);
    const statuses = new Map();
    let next = 0;
    const worker = async () => {
      while (next < count) {
        next++;
        const req = makeRequest(r);
        const { out, timedOut } = await exchange(port, req);
        if (req.abort) continue;
        assert.ok(!timedOut, `no answer to ${JSON.stringify(req.data.toString('latin1').slice(0, 200))}`);
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1]);
        assert.ok(DOCUMENTED.has(status), `status ${status} for ${JSON.stringify(req.data.toString('latin1').slice(0, 300))}\n${out.slice(0, 300)}`);
        if (status >= 400) assert.match(out, /\r\ncontent-type: application\/json/i, `an error without a JSON body: ${out.slice(0, 300)}`);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return statuses;
  }

  it('answers every complete request with a documented status, never a 5xx, and keeps serving', { timeout: 60_000 }, async () => {
    const statuses = await batch(random(SEED), COUNT, 32);
    assert.ok(statuses.size >= 5, `a varied run: ${JSON.stringify([...statuses])}`);
    if (process.env.FUZZ_VERBOSE) console.log(JSON.stringify([...statuses]));
    assert.deepEqual(crashes, []);
    assert.equal((await request(server.url + '/health/liveness')).status, 200);
  });

  it('keeps memory flat over another round, with many connections at once', { timeout: 60_000 }, async () => {
    const r = random(SEED + 1);
    await batch(r, 100, 64); // warm up code paths and caches
    gc();
    const before = process.memoryUsage().heapUsed;
    await batch(r, COUNT, 128);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.ok(grown < 8 * 1024 * 1024, `heap grew by ${(grown / 1048576).toFixed(1)} MB`);
    assert.deepEqual(crashes, []);
  });
});
