'use strict';
// Random requests, bounded in count and time: every complete request gets a status funcrun
// documents, bad client input never gets a 5xx, the process never crashes, memory stays flat.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const v8 = require('node:v8');
const vm = require('node:vm');
const { serve, startServer, request } = require('./helpers');

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
const PATHS = [
  '/',
  '/a/b/c',
  '/%',
  '/%zz/x',
  '/..%2f..%2fetc',
  '/?a=1&a=2&b',
  '/?__proto__=1&constructor=2&method=X',
  '/?%ff=%fe',
  '/' + 'x'.repeat(3000),
  '/caf\u00e9',
  '*',
  'http://host/abs',
  '/health/readiness',
  '/metrics',
  '//double',
];
const TYPES = [
  'application/json',
  'application/json;charset=utf-8',
  'APPLICATION/JSON; charset="UTF-8"',
  'application/ld+json',
  'text/plain',
  'text/plain; charset=klingon',
  'text/xml',
  'application/xml',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  'application/cloudevents+json',
  'application/cloudevents-batch+json',
  'application/cloudevents+xml',
  'garbage',
  ';;;',
  '',
  undefined,
];
const BODIES = (r) => [
  '',
  '{',
  '{"a":1',
  '{"a":1}',
  '[1,2,3]',
  'null',
  '"str"',
  '{"a":"\u0000"}',
  '<a><b></a>',
  '<a>ok</a>',
  '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
  'a=1&a=2&b=%ZZ',
  JSON.stringify({ id: '1', source: '/s', type: 't', specversion: '1.0', data: { a: 1 } }),
  JSON.stringify({ id: 1, specversion: '9' }),
  JSON.stringify([{ id: '1', source: '/s', type: 't', specversion: '1.0' }, 5]),
  r.bytes(64),
  Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xff]),
  'x'.repeat(LIMIT + 10),
];
const CE_HEADERS = [
  {},
  { 'ce-id': '1' },
  { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0' },
  { 'ce-specversion': '0.3', 'ce-id': '1', 'ce-source': 'bad source', 'ce-type': 't' },
  { 'ce-time': 'yesterday', 'ce-id': 'x', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0' },
  { 'ce-Bad_Name': 'x' },
];

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
  let head =
    `${method} ${path} HTTP/1.1\r\n` +
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n');
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
    server = await startServer(
      {
        handle: (ctx, data) => ({
          kind: Buffer.isBuffer(data) ? 'buffer' : data?.nodeType === 9 ? 'xml' : typeof data,
          event: ctx.cloudevent?.type ?? null,
          method: ctx.method,
        }),
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

// Adversarial generators: inputs shaped to make parsers slow (long runs of one character, deep
// nesting, namespace nesting, many attributes or headers), invalid UTF-8, and functions that
// misbehave (odd thrown values, odd streams, odd log arguments). The longest event-loop block
// seen while they run is reported and bounded: the defects these guard against block for tens
// of seconds; linear handling of these sizes takes milliseconds.
const { monitorEventLoopDelay } = require('node:perf_hooks');
const { Readable } = require('node:stream');

const HOSTILE_LIMIT = 512 * 1024;

function hostileBodies(r) {
  const size = () => 1024 * (16 + Math.floor(r.next() * 480));
  const run = (ch) => ch.repeat(Math.ceil(size() / ch.length)).slice(0, size());
  const nested = (open, close, n) => open.repeat(n) + (r.next() < 0.5 ? close.repeat(n) : '');
  return [
    ['application/json', () => run(r.pick([' ', '[', '{', '"', '\\', '{"a":', '1', '-']))],
    ['application/json', () => nested('[', ']', Math.floor(size() / 2))],
    ['application/json', () => nested('{"a":', '}', Math.floor(size() / 6))],
    ['application/json', () => '"' + run('\\u00') + '"'],
    ['application/xml', () => run(r.pick(['<', '<a>', '&', '&#', '<!--', '<![CDATA[', ' ', '<a ', '"']))],
    ['application/xml', () => nested('<a>', '</a>', Math.floor(size() / 8))],
    ['application/xml', () => Array.from({ length: Math.floor(size() / 24) }, (_, i) => `<a xmlns:p${i}="u${i}">`).join('')],
    ['application/xml', () => '<a ' + Array.from({ length: Math.floor(size() / 10) }, (_, i) => `b${i}="1"`).join(' ') + '/>'],
    [
      'application/cloudevents+json',
      () => JSON.stringify({ specversion: '1.0', id: '1', source: '/s', type: 't', data_base64: run(r.pick([' ', 'A', '=', '\n'])) + '!' }),
    ],
    ['application/cloudevents+json', () => '{"specversion":"1.0","id":"1","source":"/s","type":"t","data":' + nested('[', ']', Math.floor(size() / 2)) + '}'],
    [
      'application/cloudevents-batch+json',
      () =>
        JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't', time: '2020-02-30T00:00:00Z' }))),
    ],
    ['application/x-www-form-urlencoded', () => run(r.pick(['a=1&', '&', '=', '%', '%zz', 'a[]=1&']))],
    ['text/plain', () => r.bytes(size())],
    ['application/json', () => Buffer.concat([Buffer.from('{"a":"'), Buffer.alloc(size(), 0xc3), Buffer.from('"}')])],
  ];
}

function hostileRequest(r) {
  const [type, make] = r.pick(hostileBodies(r));
  const body = Buffer.from(make(), typeof make === 'string' ? 'latin1' : undefined);
  const extra = r.next() < 0.2 ? Array.from({ length: 1 + Math.floor(r.next() * 400) }, (_, i) => `x-h${i}: ${'v'.repeat(20)}`).join('\r\n') + '\r\n' : '';
  const target = r.next() < 0.2 ? '/?' + Array.from({ length: 2000 }, (_, i) => `k${i % 50}=${i}`).join('&') : '/';
  const head = `POST ${target} HTTP/1.1\r\nhost: fuzz\r\nconnection: close\r\ncontent-type: ${type}\r\n${extra}content-length: ${body.length}\r\n\r\n`;
  return { data: Buffer.concat([Buffer.from(head, 'latin1'), body]), abort: false, type };
}

describe(`adversarial input (seed ${SEED})`, () => {
  let server;
  const crashes = [];
  const onCrash = (err) => crashes.push(err);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  before(async () => {
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    server = await startServer((ctx, data) => ({ kind: Buffer.isBuffer(data) ? 'buffer' : typeof data }), { bodyLimit: HOSTILE_LIMIT, logLevel: 'debug' });
  });
  after(async () => {
    await server.close();
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
  });

  it('parser-hostile bodies up to 512 KiB: a 2xx or 4xx JSON answer each, the event loop never blocked for long', { timeout: 120_000 }, async (t) => {
    const r = random(SEED + 2);
    const port = Number(new URL(server.url).port);
    const worst = new Map();
    delay.enable();
    for (let i = 0; i < 120; i++) {
      const req = hostileRequest(r);
      const started = performance.now();
      const { out, timedOut } = await exchange(port, req);
      const ms = performance.now() - started;
      if (ms > (worst.get(req.type) ?? 0)) worst.set(req.type, ms);
      assert.ok(!timedOut, `no answer to a ${req.type} body of ${req.data.length} bytes`);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1]);
      assert.ok(
        status < 500 && DOCUMENTED.has(status),
        `status ${status} for a ${req.type} body: ${req.data.toString('latin1').slice(0, 120)}\n${out.slice(0, 300)}`,
      );
      if (status >= 400) assert.match(out, /\r\ncontent-type: application\/json/i);
      assert.ok(out.length < 4096, `a short answer: ${out.length} bytes`);
    }
    delay.disable();
    const longest = delay.max / 1e6;
    t.diagnostic(
      `longest event-loop block: ${longest.toFixed(1)} ms; slowest answer per type: ${JSON.stringify(Object.fromEntries([...worst].map(([k, v]) => [k, Math.round(v)])))}`,
    );
    assert.ok(longest < 1000, `the event loop was blocked for ${longest.toFixed(0)} ms`);
    assert.deepEqual(crashes, []);
  });

  it('functions that throw odd values, return odd streams and log odd arguments never stop the server', { timeout: 60_000 }, async (t) => {
    const cyclic = Object.create(null);
    cyclic.self = cyclic;
    const odd = [
      () => {
        throw new Proxy(
          {},
          {
            get() {
              throw new Error('trap');
            },
            getPrototypeOf() {
              throw new Error('trap');
            },
          },
        );
      },
      () => {
        throw Object.defineProperty(new Error('x'), 'statusCode', {
          get() {
            throw new Error('getter');
          },
        });
      },
      () => {
        throw cyclic;
      },
      () => {
        throw Symbol('thrown');
      },
      () => {
        throw Object.assign(new Error('€'), { statusCode: 400, headers: { 'x-bad': '€\r\n' } });
      },
      () => Readable.from([{ row: 1 }]),
      () =>
        Readable.from(
          (async function* () {
            yield 'a';
            throw new Error('mid-stream');
          })(),
        ),
      () => {
        const s = new Readable({ read() {} });
        s.destroy();
        return s;
      },
      () => ({ statusCode: 200, headers: { 'transfer-encoding': 'chunked', 'content-length': '1', 'set-cookie': ['a', 'b'], 'x-€': '1' }, body: 'framed' }),
      () => ({ statusCode: 'teapot' }),
      () => ({ body: Symbol('s') }),
      (ctx) => {
        ctx.log.info('query', ctx.query);
        ctx.log.info({}, 10n);
        ctx.log.info(cyclic, '%j %s', cyclic, Symbol('s'));
        ctx.log.info({ level: 60, reqId: 'forged', time: 0 });
        return 'logged';
      },
    ];
    const misbehaving = await serve(t, (ctx) => odd[Number(ctx.query.i)](ctx));
    const r = random(SEED + 3);
    for (let n = 0; n < 200; n++) {
      const i = Math.floor(r.next() * odd.length);
      const res = await (async () => {
        const answer = await fetch(`${misbehaving.url}/?i=${i}`);
        return { status: answer.status, type: answer.headers.get('content-type'), text: await answer.text() };
      })().catch(() => ({ status: 'cut' }));
      if (res.status === 'cut') continue; // a stream that failed after its first bytes
      assert.ok(res.status < 600, `case ${i}`);
      if (res.status >= 400) assert.match(res.type, /^application\/json/, `case ${i}: ${res.text}`);
    }
    assert.deepEqual(crashes, []);
    assert.equal((await request(misbehaving.url + '/health/liveness')).status, 200);
    for (const line of misbehaving.log.lines) {
      const entry = JSON.parse(line);
      assert.notEqual(entry.reqId, 'forged');
    }
  });
});
