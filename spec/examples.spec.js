'use strict';
// Each example answers as its README says.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const { spawnSync } = require('node:child_process');
const { CloudEvent, HTTP } = require('cloudevents');
const { runServing, request } = require('./helpers');

const EXAMPLES = path.join(__dirname, '..', 'examples');

/** Serves examples/<name> with node lib/serve.js for the test `t`, which stops it once the test ends. */
async function example(t, name) {
  const proc = await runServing([path.join(EXAMPLES, name)]);
  t.after(() => proc.stop());
  return proc;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const post = (body, headers = JSON_HEADERS) => ({ method: 'POST', headers, body });
const binaryEvent = (type, data, contentType = 'application/json') =>
  post(data, { 'ce-id': '1', 'ce-source': '/shop', 'ce-type': type, 'ce-specversion': '1.0', ...(contentType && { 'content-type': contentType }) });

/** The server's peak resident memory in MiB (VmHWM), or undefined where there is no /proc. */
function peakMemory(pid) {
  try {
    return Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return undefined;
  }
}

/**
 * Sends each hostile request ([target, init]) to the served example: each is a 400 within 2 s,
 * and raises the server's peak memory by less than 50 MiB. Returns the answers.
 */
async function assertRejected(url, proc, requests) {
  const answers = [];
  for (const [target, init] of requests) {
    const body = init?.body ?? '';
    const what = `${init?.method ?? 'GET'} ${target} ${Buffer.isBuffer(body) ? `<${body.length} bytes>` : body.slice(0, 60)}`;
    const before = peakMemory(proc.child.pid);
    const started = Date.now();
    const res = await request(url + target, init);
    // 400 for input the schema refuses; 415 for bytes sent to a function that takes JSON.
    assert.ok(res.status === 400 || res.status === 415, `${what}: ${res.status} ${res.text.slice(0, 200)}`);
    assert.ok(Date.now() - started < 2000, `${what} took ${Date.now() - started} ms`);
    const after = peakMemory(proc.child.pid);
    if (before !== undefined) assert.ok(after - before < 50, `${what} raised the peak memory by ${Math.round(after - before)} MiB`);
    answers.push(res);
  }
  return answers;
}

describe('examples', () => {
  it('hello: greets from the query string and from a JSON body', async (t) => {
    const { url } = await example(t, 'hello');
    assert.deepEqual((await request(url + '/?name=Ann')).json, { greeting: 'Hello, Ann!', method: 'GET' });
    const res = await request(url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Bob"}' });
    assert.deepEqual(res.json, { greeting: 'Hello, Bob!', method: 'POST' });
    assert.equal((await request(url + '/health/readiness')).text, 'OK');
  });

  it('hello: a name that is not a string of at most 100 characters is a 400, by body or query', async (t) => {
    const proc = await example(t, 'hello');
    const { url } = proc;
    assert.deepEqual((await request(url + '/')).json, { greeting: 'Hello, world!', method: 'GET' });
    assert.equal((await request(url + '/?name=')).json.greeting, 'Hello, world!');
    assert.equal((await request(url + '/?name=Cy', post('{"name": null}'))).json.greeting, 'Hello, Cy!');
    assert.equal((await request(url + '/?name=' + 'x'.repeat(100))).json.greeting, `Hello, ${'x'.repeat(100)}!`);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    assert.equal((await request(url + '/', post('name=Di', form))).json.greeting, 'Hello, Di!');
    const answers = await assertRejected(url, proc, [
      ['/', post('{"name": {"toString": 1}}')], // was a 500: the template literal threw
      ['/', post('{"name": {"first": "Ann"}}')], // was "Hello, [object Object]!"
      ['/', post('{"name": 5}')],
      ['/', post('{"name": ["a", "b"]}')],
      ['/?name=a&name=b', undefined], // a repeated key is a list: was "Hello, a,b!"
      ['/', post('name=a&name=b', form)],
      ['/?name=' + 'x'.repeat(101), undefined],
      ['/', post(JSON.stringify({ name: 'x'.repeat(900_000) }))], // was echoed whole
    ]);
    for (const res of answers) assert.equal(res.json.message, 'name must be a string of at most 100 characters');
  });

  it('cloudevent: answers an order event with a confirmation event, in the mode it came in', async (t) => {
    const { url } = await example(t, 'cloudevent');
    const order = new CloudEvent({ type: 'dev.example.order', source: '/shop', data: { customerId: 1, productId: 2 } });
    for (const mode of ['binary', 'structured']) {
      const message = HTTP[mode](order);
      const res = await fetch(url, { method: 'POST', headers: message.headers, body: message.body });
      assert.equal(res.status, 200);
      const answer = HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: await res.text() });
      assert.equal(answer.type, 'dev.example.order.confirmed');
      assert.equal(answer.source, '/order-confirmer');
      assert.deepEqual(answer.data, { confirmed: true, customerId: 1, productId: 2 });
      assert.equal(res.headers.has('ce-id'), mode === 'binary');
    }
    assert.equal((await request(url, { method: 'POST', body: '{}' })).status, 400);
  });

  it('cloudevent: event data other than two ids from 1 to 2^31 - 1 is a 400, not a confirmation', async (t) => {
    const proc = await example(t, 'cloudevent');
    const { url } = proc;
    const good = await request(url, binaryEvent('dev.example.order', '{"customerId": 2147483647, "productId": 1, "note": "x"}'));
    assert.equal(good.status, 200);
    assert.deepEqual(good.json, { confirmed: true, customerId: 2147483647, productId: 1 }, 'only the ids go back');
    const order = (data) => binaryEvent('dev.example.order', data);
    const structured = (event) =>
      post(JSON.stringify({ specversion: '1.0', id: '1', source: '/shop', type: 'dev.example.order', ...event }), {
        'content-type': 'application/cloudevents+json',
      });
    // Each of these was confirmed, with whatever ids it carried (or none).
    await assertRejected(url, proc, [
      ['/', order('null')],
      ['/', order('"an order"')],
      ['/', order('[1, 2]')],
      ['/', order('{"customerId": 1}')],
      ['/', order('{"customerId": "1", "productId": 2}')],
      ['/', order('{"customerId": {"a": [1, 2, 3]}, "productId": 2}')],
      ['/', order('{"customerId": 1e308, "productId": 2}')],
      ['/', order('{"customerId": -1, "productId": 2}')],
      ['/', order('{"customerId": 0, "productId": 2}')],
      ['/', order('{"customerId": 1.5, "productId": 2}')],
      ['/', order('{"customerId": 2147483648, "productId": 2}')],
      ['/', binaryEvent('dev.example.order', 'bytes', 'application/octet-stream')],
      ['/', binaryEvent('dev.example.order', undefined, undefined)],
      ['/', structured({ data: { customerId: 'NaN', productId: 2 } })],
      ['/', structured({ datacontenttype: 'application/octet-stream', data_base64: Buffer.from('{"customerId":1,"productId":2}').toString('base64') })],
      [
        '/',
        post(
          JSON.stringify(
            [1, 'x'].map((customerId, i) => ({
              specversion: '1.0',
              id: `${i}`,
              source: '/shop',
              type: 'dev.example.order',
              data: { customerId, productId: 2 },
            })),
          ),
          { 'content-type': 'application/cloudevents-batch+json' },
        ),
      ],
    ]);
  });

  let typescriptBuilt = false;
  /** Compiles examples/typescript with its own tsc config, once. */
  function buildTypescript() {
    if (typescriptBuilt) return;
    const folder = path.join(EXAMPLES, 'typescript');
    // What `npm install` does for its "funcrun": "file:../.." dependency: a link to this package.
    const link = path.join(folder, 'node_modules', 'funcrun');
    fs.mkdirSync(path.dirname(link), { recursive: true });
    if (!fs.existsSync(link)) fs.symlinkSync(path.relative(path.dirname(link), path.join(__dirname, '..')), link, 'dir');
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', folder], { encoding: 'utf8' });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    assert.ok(fs.existsSync(path.join(folder, 'build', 'index.js')));
    typescriptBuilt = true;
  }

  it(
    'typescript: unbuilt, runs src/index.ts as it is (type stripping)',
    { skip: !process.features.typescript && 'this node does not strip types' },
    async (t) => {
      fs.rmSync(path.join(EXAMPLES, 'typescript', 'build'), { recursive: true, force: true });
      typescriptBuilt = false;
      const { url } = await example(t, 'typescript');
      const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"customerId": 1, "productId": 2}' });
      assert.equal(res.status, 201);
      assert.deepEqual(res.json, { customerId: 1, productId: 2, total: 20 });
    },
  );

  it('typescript: compiles with its own tsc config and answers 201 with the total', async (t) => {
    buildTypescript();
    const { url } = await example(t, 'typescript');
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"customerId": 1, "productId": 2}' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-customer'), '1');
    assert.deepEqual(res.json, { customerId: 1, productId: 2, total: 20 });
    assert.equal((await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"customerId": "1"}' })).status, 400);
    assert.equal((await request(url)).status, 405);

    const extra = await request(url, post('{"customerId": 2147483647, "productId": 3, "total": 0, "admin": true}'));
    assert.equal(extra.status, 201);
    assert.deepEqual(extra.json, { customerId: 2147483647, productId: 3, total: 30 }, 'only the checked fields go back');
  });

  it('typescript: a purchase whose ids are not integers from 1 to 2^31 - 1 is a 400', async (t) => {
    buildTypescript();
    const proc = await example(t, 'typescript');
    const { url } = proc;
    const answers = await assertRejected(url, proc, [
      ['/', post('{"customerId": 1, "productId": 1e308}')], // was 201 with "total": null (Infinity)
      ['/', post('{"customerId": -5, "productId": -1}')], // was 201
      ['/', post('{"customerId": 0, "productId": 2}')],
      ['/', post('{"customerId": 1, "productId": 2147483648}')],
      ['/', post('{"customerId": 1.5, "productId": 2}')],
      ['/', post('{"customerId": "1", "productId": "2"}')],
      ['/', post('{"customerId": null, "productId": 2}')],
      ['/', post('{"productId": 2}')],
      ['/', post('null')],
      ['/', post('[1, 2]')],
      ['/', post('"1"')],
      ['/', post('')],
      ['/', post('{"customerId": 1, "productId": 2}', { 'content-type': 'application/octet-stream' })],
    ]);
    for (const res of answers) assert.match(res.json.message, /customerId.*productId/);
  });

  it('purchase: reverseBytes takes only bytes, at most 64 KiB; a JSON {"length": 1e9} is a 400', async (t) => {
    const proc = await example(t, 'purchase');
    const { url } = proc;
    const octets = { 'content-type': 'application/octet-stream' };
    const reversed = await fetch(url + '/reverseBytes', post(Buffer.from([1, 2, 3, 255]), octets));
    assert.deepEqual([...Buffer.from(await reversed.arrayBuffer())], [255, 3, 2, 1]);
    const empty = await request(url + '/reverseBytes', { method: 'POST' });
    assert.equal(empty.status, 200);
    assert.equal(empty.text, '');
    const most = await fetch(url + '/reverseBytes', post(Buffer.alloc(64 * 1024, 7), octets));
    assert.equal(Buffer.from(await most.arrayBuffer()).length, 64 * 1024);
    const answers = await assertRejected(url, proc, [
      // Buffer.from() took these for array-likes: {"length":1e9} allocated a gigabyte and looped over it.
      ['/reverseBytes', post('{"length": 1e9}')],
      ['/reverseBytes', post('{"length": 1e9}', { 'content-type': 'text/plain' })],
      ['/reverseBytes', post('{"type": "Buffer", "data": [1, 2, 3]}')],
      ['/reverseBytes', post('[1, 2, 3]')],
      ['/reverseBytes', post('"abc"')],
      ['/reverseBytes', post('5')], // was a 500
      ['/reverseBytes?length=1000000000', undefined], // was a 500
      ['/', binaryEvent('reverseBytes', '{"length": 1e9}')],
      ['/reverseBytes', post(Buffer.alloc(64 * 1024 + 1), octets)],
    ]);
    assert.match(answers[0].json.message, /reverseBytes takes bytes/);
    assert.match(answers.at(-1).json.message, /at most 65536 bytes/);
  });

  it('purchase: ids, strings, lists and maps are bounded by each inputSchema, by body, query and event', async (t) => {
    const proc = await example(t, 'purchase');
    const { url } = proc;
    const order = await request(url + '/purchase?customerId=2147483647&productId=1');
    assert.deepEqual(order.json, { orderId: 'order-2147483647-1', customerId: 2147483647, productId: 1, status: 'purchased' });
    assert.equal((await request(url + '/toUpperCase', post('"hello"'))).text, '"HELLO"');
    assert.equal((await request(url + '/toUpperCase', post(JSON.stringify('x'.repeat(10_000))))).status, 200);
    // A huge index makes one kid, not a billion.
    assert.deepEqual((await request(url + '/family?kids.999999999.first=Buffy')).json, { kids: [{ first: 'Buffy' }] });
    const pets = (n) => JSON.stringify({ pets: Array.from({ length: n }, (_, i) => `pet${i}`) });
    assert.equal((await request(url + '/family', post(pets(20)))).status, 200);
    await assertRejected(url, proc, [
      ['/purchase', post('{"customerId": 1e300, "productId": 2}')], // was an order "order-1e+300-2"
      ['/purchase', post('{"customerId": 2147483648, "productId": 2}')],
      ['/purchase', post('{"customerId": 1, "productId": -2}')],
      ['/purchase', post('null')],
      ['/purchase', post('')],
      ['/purchase?customerId=1e300&productId=2', undefined],
      ['/purchase?customerId=NaN&productId=2', undefined],
      ['/purchase?customerId=Infinity&productId=2', undefined],
      ['/purchase?customerId=&productId=2', undefined],
      ['/purchase?customerId=1&customerId=2&productId=2', undefined],
      ['/', binaryEvent('purchase', '{"customerId": 1e300, "productId": 2}')],
      ['/toUpperCase', post('{"toString": 1}')], // was a 500: String() threw
      ['/toUpperCase', post('5')],
      ['/toUpperCase', post('')],
      ['/toUpperCase?a=1', undefined], // was "[OBJECT OBJECT]"
      ['/toUpperCase', post(JSON.stringify('x'.repeat(10_001)))],
      ['/family', post(pets(21))],
      ['/family', post(JSON.stringify({ pets: ['x'.repeat(101)] }))],
      ['/family', post(JSON.stringify({ kids: Array(21).fill({ first: 'K' }) }))],
      ['/family', post(JSON.stringify({ addresses: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`a${i}`, { city: 'C' }])) }))],
      ['/family', post('{"dad": {"first": "J", "password": "x"}}')],
      ['/family?dad.age=-1', undefined],
      ['/family?dad.age=1e9', undefined],
      ['/family?dad.first=' + 'x'.repeat(101), undefined],
    ]);
  });

  it('purchase: a body of about 1 MiB with a violation per byte, key or item is a 400 in bounded memory', async (t) => {
    const proc = await example(t, 'purchase');
    const { url } = proc;
    assert.equal((await request(url + '/purchase?customerId=1&productId=2')).status, 200);
    const bytes = Buffer.alloc(1000 * 1024, 1);
    const octets = { 'content-type': 'application/octet-stream' };
    // A Buffer is an object whose keys are its bytes: additionalProperties fails once per byte.
    // Listing every violation made 900 MB of errors for these; at most 50 are listed now.
    const answers = await assertRejected(url, proc, [
      ['/purchase', post(bytes, octets)],
      ['/', binaryEvent('purchase', bytes, 'application/octet-stream')],
      ['/purchase', post(`{${Array.from({ length: 100_000 }, (_, i) => `"${i}":1`)}}`)],
      ['/family', post(`{"pets": [${Array(500_000).fill(1)}]}`)],
      ['/family', post(`{"kids": [${Array(500_000).fill(1)}]}`)],
    ]);
    assert.deepEqual(
      answers.map((res) => res.status),
      [415, 415, 400, 400, 400],
      'bytes are not JSON input',
    );
    for (const res of answers.slice(2)) assert.ok(res.json.violations.length <= 50, `${res.json.violations.length} violations`);
  });

  it("the README's ten-line handler answers its curl", async () => {
    const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
    const handler = /```js\n(\/\/ index\.js\n[\s\S]*?)```/.exec(readme)[1];
    assert.ok(handler.split('\n').filter(Boolean).length <= 11, 'about ten lines');
    const folder = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'funcrun-readme-'));
    fs.writeFileSync(path.join(folder, 'index.js'), handler);
    const proc = await runServing([folder]);
    try {
      const curl = await request(proc.url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Ann"}' });
      assert.deepEqual(curl.json, { greeting: 'Hello, Ann!' });
      assert.match(readme, /# \{"greeting":"Hello, Ann!"\}/);
      assert.deepEqual((await request(proc.url + '/?name=Bo')).json, { greeting: 'Hello, Bo!' });
      assert.equal((await request(proc.url + '/?name=' + 'x'.repeat(101))).status, 400);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });
  it("observability: orders calls prices in the same trace; both functions' lines carry it", async (t) => {
    const prices = await runServing([path.join(EXAMPLES, 'observability', 'prices')]);
    t.after(() => prices.stop());
    // Between the two, a loopback relay notes the traceparent orders sends.
    const sent = [];
    const relay = http.createServer((req, res) => {
      sent.push(req.headers.traceparent);
      req.pipe(
        http.request(prices.url, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode, answer.headers);
          answer.pipe(res);
        }),
      );
    });
    await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
    t.after(() => relay.close());
    const orders = await runServing([path.join(EXAMPLES, 'observability', 'orders')], { env: { PRICES_URL: `http://127.0.0.1:${relay.address().port}` } });
    t.after(() => orders.stop());
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await request(orders.url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: JSON.stringify({ id: 17 }),
    });
    assert.deepEqual(res.json, { cents: 300 });
    const pricing = orders.lines().find((l) => l.msg === 'pricing');
    const asked = await prices.waitFor((l) => l.msg === 'price asked');
    assert.equal(pricing.trace_id, traceId);
    assert.equal(asked.trace_id, traceId);
    assert.equal(asked.id, 17);
    assert.equal(typeof asked.reqId, 'number');
    // orders sent its own span as the parent; prices' helper line has a span of its own.
    assert.deepEqual(sent, [`00-${traceId}-${pricing.span_id}-01`]);
    assert.notEqual(asked.span_id, pricing.span_id);
  });
});
