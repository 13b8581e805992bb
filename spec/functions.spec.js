'use strict';
// Named functions: the Java variant's wire contract, over real HTTP, with the cloudevents SDK as
// the client for events.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { CloudEvent, HTTP } = require('cloudevents');
const { serve, startServer, request, runServing } = require('./helpers');

const purchaseModule = require('../examples/purchase/index.js');

async function sendEvent(url, message, target = '/') {
  const res = await fetch(url + target, { method: 'POST', headers: message.headers, body: message.body });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: Object.fromEntries(res.headers), body, text: body.toString() };
}

const json = (url, target, body, type = 'application/json') => request(url + target, { method: 'POST', headers: { 'content-type': type }, body });

describe('named functions over plain HTTP', () => {
  let server;
  const seen = [];
  before(async () => {
    const echo = (input, context) => {
      seen.push({ input, context });
      return input;
    };
    const fail = (input) => {
      if (input?.status) throw Object.assign(new Error('chosen status'), { statusCode: input.status });
      throw new Error('broken');
    };
    server = await startServer({ functions: { ...purchaseModule.functions, echo, fail } });
  });
  after(() => server.close());

  it('POST /<name> with a JSON body: the parsed body is the input, the output is 200 JSON', async () => {
    const res = await json(server.url, '/purchase', '{"customerId": 1, "productId": 2}');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(res.json, { orderId: 'order-1-2', customerId: 1, productId: 2, status: 'purchased' });
  });

  it('a JSON primitive is the input; a string output is JSON text', async () => {
    const upper = await json(server.url, '/toUpperCase', '"HELLO world"');
    assert.equal(upper.text, '"HELLO WORLD"');
    assert.equal(upper.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal((await json(server.url, '/echo', '2')).text, '2');
    assert.equal((await json(server.url, '/echo', 'true')).text, 'true');
  });

  it('the second argument is the context', async () => {
    await request(server.url + '/echo?x=1', { method: 'POST', headers: { 'content-type': 'application/json', 'x-h': 'v' }, body: '{}' });
    const { context } = seen.at(-1);
    assert.equal(context.headers['x-h'], 'v');
    assert.equal(context.method, 'POST');
    assert.equal(typeof context.log.info, 'function');
  });

  it('an empty body is undefined, and undefined output is 204', async () => {
    const res = await request(server.url + '/echo', { method: 'POST' });
    assert.equal(res.status, 204);
    assert.equal(seen.at(-1).input, undefined);
    assert.equal((await request(server.url + '/forget', { method: 'POST' })).status, 204);
  });

  it('GET /<name>?query: the query is the input, coerced by the schema', async () => {
    const res = await request(server.url + '/purchase?customerId=1&productId=2');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { orderId: 'order-1-2', customerId: 1, productId: 2, status: 'purchased' });
  });

  it('without a schema, query values stay strings', async () => {
    const res = await request(server.url + '/echo?a=1&b=true');
    assert.deepEqual(res.json, { a: '1', b: 'true' });
  });

  it('GET: nested properties, repeated keys, index segments and map entries', async () => {
    const res = await request(
      server.url +
        '/family?dad.first=John&dad.age=50&pets=cat&pets=dog&kids.1.first=Buffy&kids.2.first=Charlie&addresses.home.city=Boston&addresses.work.city=Cambridge',
    );
    assert.deepEqual(res.json, {
      dad: { first: 'John', age: 50 },
      pets: ['cat', 'dog'],
      kids: [{ first: 'Buffy' }, { first: 'Charlie' }],
      addresses: { home: { city: 'Boston' }, work: { city: 'Cambridge' } },
    });
    const single = await request(server.url + '/family?pets=cat');
    assert.deepEqual(single.json.pets, ['cat'], 'a single value becomes the list the schema declares');
  });

  it('input failing the schema is a 400 listing each violation, by body or by query', async () => {
    const body = await json(server.url, '/purchase', '{"customerId": "1", "extra": true}');
    assert.equal(body.status, 400);
    assert.deepEqual(body.json.violations.map((v) => v.field).sort(), ['(input)', '(input)', 'customerId'].sort());
    assert.match(body.json.message, /'productId' is required/);
    assert.match(body.json.message, /\(input\) must NOT have additional property 'extra'/);
    const query = await request(server.url + '/purchase?customerId=x&productId=0');
    assert.equal(query.status, 400);
    assert.deepEqual(query.json.violations.map((v) => v.field).sort(), ['customerId', 'productId']);
  });

  it('bad JSON is a 400', async () => {
    const res = await json(server.url, '/purchase', '{"customerId": 1,');
    assert.equal(res.status, 400);
    assert.match(res.json.message, /invalid JSON/);
  });

  it('no such function is a 404; a method other than GET or POST a 405', async () => {
    assert.equal((await json(server.url, '/nothing', '{}')).status, 404);
    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      const res = await request(server.url + '/purchase', { method });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'GET, HEAD, POST');
    }
  });

  it('a CloudEvents-only function called by plain HTTP is a 400 saying so', async () => {
    const res = await json(server.url, '/audit', '{"customerId": 1}');
    assert.equal(res.status, 400);
    assert.match(res.json.message, /function 'audit' takes CloudEvents only/);
  });

  it('a throw is a 500, or its numeric statusCode', async () => {
    const broken = await json(server.url, '/fail', '{}');
    assert.equal(broken.status, 500);
    assert.equal(broken.json.message, 'Internal Server Error');
    assert.equal((await json(server.url, '/fail', '{"status": 409}')).status, 409);
  });

  it('a Buffer arrives for application/octet-stream, and a Buffer output goes out as octet-stream', async () => {
    const res = await fetch(server.url + '/reverseBytes', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.from([1, 2, 3, 255]),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual([...Buffer.from(await res.arrayBuffer())], [255, 3, 2, 1]);
  });

  it('violations quote field names cut short', async (t) => {
    const f = (input) => input;
    f.inputSchema = { type: 'object', additionalProperties: { type: 'integer' } };
    const own = await serve(t, { functions: { f } });
    const answer = await request(own.url + '/f', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ['k'.repeat(20_000)]: 'x' }),
    });
    assert.equal(answer.status, 400);
    assert.ok(answer.text.length < 2000, `${answer.text.length} bytes`);
  });
});

describe('named functions by CloudEvent', () => {
  let server;
  const seen = [];
  before(async () => {
    const record = (input, context) => {
      seen.push({ input, context });
      return { got: input };
    };
    const other = () => 'other';
    other.trigger = 'dev.example.shared';
    const another = () => 'another';
    another.trigger = 'dev.example.shared';
    const wholeEvent = (event) => {
      seen.push({ input: event });
      return new CloudEvent({ type: 'dev.example.replied', source: '/whole', data: { subject: event.subject } });
    };
    wholeEvent.cloudEvent = true;
    const symbol = () => Symbol('no JSON');
    symbol.trigger = 'dev.example.symbol';
    const nothing = () => null;
    nothing.trigger = 'dev.example.null';
    server = await startServer({ functions: { ...purchaseModule.functions, record, other, another, wholeEvent, symbol, nothing } });
  });
  after(() => server.close());

  const order = (extra = {}) => new CloudEvent({ type: 'purchase', source: '/shop', data: { customerId: 1, productId: 2 }, ...extra });

  it('a binary event is routed by ce-type and answered in binary mode', async () => {
    const res = await sendEvent(server.url, HTTP.binary(order()));
    assert.equal(res.status, 200);
    assert.equal(res.headers['ce-type'], 'purchase.output');
    assert.equal(res.headers['ce-source'], 'purchase');
    assert.equal(res.headers['ce-specversion'], '1.0');
    assert.match(res.headers['ce-id'], /^[0-9a-f-]{36}$/);
    const answer = HTTP.toEvent({ headers: res.headers, body: res.text });
    assert.deepEqual(answer.data, { orderId: 'order-1-2', customerId: 1, productId: 2, status: 'purchased' });
  });

  it('a structured event is answered in structured mode, with the request specversion', async () => {
    const res = await sendEvent(server.url, HTTP.structured(order({ specversion: '0.3' })));
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^application\/cloudevents\+json/);
    const answer = JSON.parse(res.text);
    assert.equal(answer.type, 'purchase.output');
    assert.equal(answer.source, 'purchase');
    assert.equal(answer.specversion, '0.3');
    assert.equal(answer.data.orderId, 'order-1-2');
  });

  it('the input is the event data; the event is on the context', async () => {
    await sendEvent(server.url, HTTP.binary(order({ type: 'record', subject: 's1' })));
    const { input, context } = seen.at(-1);
    assert.deepEqual(input, { customerId: 1, productId: 2 });
    assert.equal(context.cloudevent.subject, 's1');
  });

  it('data_base64 and application/octet-stream data arrive as a Buffer; a Buffer output as data_base64', async () => {
    const bytes = Buffer.from([10, 20, 30]);
    const binary = await sendEvent(
      server.url,
      HTTP.binary(new CloudEvent({ type: 'reverseBytes', source: '/s', datacontenttype: 'application/octet-stream', data: bytes })),
    );
    assert.equal(binary.headers['content-type'], 'application/octet-stream');
    assert.deepEqual([...binary.body], [30, 20, 10]);
    const structured = await sendEvent(
      server.url,
      HTTP.structured(new CloudEvent({ type: 'reverseBytes', source: '/s', datacontenttype: 'application/octet-stream', data: bytes })),
    );
    assert.equal(JSON.parse(structured.text).data_base64, Buffer.from([30, 20, 10]).toString('base64'));
  });

  it('a CloudEvents-only function receives the whole event and its returned event is sent', async () => {
    const res = await sendEvent(server.url, HTTP.binary(order({ type: 'wholeEvent', subject: 'whole' })));
    assert.equal(res.headers['ce-type'], 'dev.example.replied');
    assert.deepEqual(JSON.parse(res.text), { subject: 'whole' });
    assert.ok(seen.at(-1).input instanceof CloudEvent);
  });

  it("a function's trigger names the ce-type it answers; a builder returned overrides the defaults", async () => {
    const res = await sendEvent(server.url, HTTP.binary(order({ type: 'dev.example.purchase.audit' })));
    assert.equal(res.status, 200);
    assert.equal(res.headers['ce-type'], 'dev.example.audit.passed');
    assert.equal(res.headers['ce-source'], '/purchase/audit');
  });

  it('no function for the type is a 404; more than one is a 409', async () => {
    const none = await sendEvent(server.url, HTTP.binary(order({ type: 'dev.example.unknown' })));
    assert.equal(none.status, 404);
    assert.match(JSON.parse(none.text).message, /no function for ce-type 'dev\.example\.unknown'/);
    const both = await sendEvent(server.url, HTTP.binary(order({ type: 'dev.example.shared' })));
    assert.equal(both.status, 409);
    assert.match(JSON.parse(both.text).message, /other, another|another, other/);
  });

  it('an output JSON has no text for (a Symbol) is an event without data, as null is: no body, no content type', async () => {
    for (const type of ['dev.example.symbol', 'dev.example.null']) {
      const res = await sendEvent(server.url, HTTP.binary(order({ type })));
      assert.equal(res.status, 200, type);
      assert.equal(res.headers['ce-type'], `${type === 'dev.example.null' ? 'nothing' : 'symbol'}.output`);
      assert.equal(res.headers['content-type'], undefined, type);
      assert.equal(res.text, '', type);
      const structured = await sendEvent(server.url, HTTP.structured(order({ type })));
      assert.equal(JSON.parse(structured.text).data ?? null, null, type);
    }
  });

  it('undefined output answers 204', async () => {
    assert.equal((await sendEvent(server.url, HTTP.binary(order({ type: 'forget' })))).status, 204);
  });

  it('event data failing the schema is a 400', async () => {
    const res = await sendEvent(server.url, HTTP.binary(order({ data: { customerId: 'one', productId: 2 } })));
    assert.equal(res.status, 400);
    assert.match(JSON.parse(res.text).message, /customerId must be integer/);
  });

  it('a plain POST to / is a 400 saying it takes a CloudEvent', async () => {
    const res = await json(server.url, '/', '{}');
    assert.equal(res.status, 400);
    assert.match(res.json.message, /POST \/ takes a CloudEvent/);
  });

  it('an event posted to /<name> goes to that function and is answered as an event', async () => {
    const res = await sendEvent(server.url, HTTP.binary(order({ type: 'anything' })), '/purchase');
    assert.equal(res.headers['ce-type'], 'purchase.output');
  });
});

describe('the purchase example of the function contract, end to end', () => {
  it('by POST body, GET query, binary and structured event', async (t) => {
    const proc = await runServing([path.join(__dirname, '..', 'examples', 'purchase')]);
    t.after(() => proc.stop());
    const expected = { orderId: 'order-1-2', customerId: 1, productId: 2, status: 'purchased' };
    assert.deepEqual((await json(proc.url, '/purchase', '{"customerId":1,"productId":2}')).json, expected);
    assert.deepEqual((await request(proc.url + '/purchase?customerId=1&productId=2')).json, expected);
    for (const mode of ['binary', 'structured']) {
      const res = await sendEvent(proc.url, HTTP[mode](new CloudEvent({ type: 'purchase', source: '/shop', data: { customerId: 1, productId: 2 } })));
      assert.deepEqual(HTTP.toEvent({ headers: res.headers, body: res.text }).data, expected, mode);
    }
    assert.equal((await request(proc.url + '/health/readiness')).text, 'OK');
  });
});

describe('functions beside handle and routes', () => {
  it('handle takes what the functions do not: other paths, plain requests to /, unknown event types', async (t) => {
    const { url } = await serve(t, { handle: (ctx) => `handle ${ctx.method} ${ctx.path}`, functions: { echo: (x) => x } });
    assert.equal((await json(url, '/echo', '{"a":1}')).text, '{"a":1}');
    assert.equal((await request(url + '/elsewhere')).text, 'handle GET /elsewhere');
    assert.equal((await request(url + '/')).text, 'handle GET /');
    assert.equal((await json(url, '/', '{}')).text, 'handle POST /');
    const event = await sendEvent(url, HTTP.binary(new CloudEvent({ type: 'unknown', source: '/s', data: {} })));
    assert.equal(event.text, 'handle POST /');
    const routed = await sendEvent(url, HTTP.binary(new CloudEvent({ type: 'echo', source: '/s', data: { b: 2 } })));
    assert.equal(routed.headers['ce-type'], 'echo.output');
  });

  it('routes and functions claiming the same path stop the start, with a trailing slash too', async (t) => {
    await assert.rejects(serve(t, { routes: { 'GET /echo': () => 1 }, functions: { echo: (x) => x } }), /routes and functions both claim \/echo/);
    await assert.rejects(serve(t, { routes: { 'GET /echo/': () => 1 }, functions: { echo: (x) => x } }), /routes and functions both claim \/echo/);
  });

  it("a function where a probe or the metrics answer stops the start: its GET would be the runtime's", async (t) => {
    await assert.rejects(serve(t, { functions: { metrics: (x) => x } }), /the function at \/metrics is where the metrics answers/);
    const liveness = Object.assign(() => true, { path: '/hello' });
    await assert.rejects(serve(t, { liveness, functions: { hello: (x) => x } }), /the function at \/hello is where the liveness probe answers/);
  });

  it('invalid functions stop the start with what is wrong', async (t) => {
    await assert.rejects(serve(t, { functions: { 'a/b': () => 1 } }), /a name is a path segment/);
    for (const name of ['.', '..']) await assert.rejects(serve(t, { functions: { [name]: () => 1 } }), /not '\.' or '\.\.', which a URL resolves away/);
    // ajv checks an $async schema in a promise: it would pass every input.
    const order = Object.assign(() => 1, { inputSchema: { $async: true, type: 'object', properties: { id: { type: 'integer' } } } });
    await assert.rejects(serve(t, { functions: { order } }), /a schema with \$async is not checked/);
    await assert.rejects(serve(t, { functions: { a: 'x' } }), /functions\['a'\] must be a function/);
    await assert.rejects(serve(t, { functions: { a: Object.assign(() => 1, { trigger: 5 }) } }), /trigger must be a CloudEvent type/);
  });
});

describe('named functions: what the Java variant leaves to funcrun', () => {
  it('a body that is not JSON (XML, a form, text) sent to a function with a schema is a 415, not checked against it', async (t) => {
    let runs = 0;
    const order = Object.assign(
      () => {
        runs++;
        return 'ran';
      },
      { inputSchema: { type: 'object' } },
    );
    const { url } = await serve(t, { functions: { order } });
    for (const [type, body] of [
      ['application/xml', '<order><id>1</id></order>'],
      ['application/x-www-form-urlencoded', 'id=1'],
      ['text/plain', '{"id":1}'],
    ]) {
      const res = await json(url, '/order', body, type);
      assert.equal(res.status, 415, type);
      assert.equal(res.json.code, 'FUNCRUN_BYTES_NOT_ACCEPTED', type);
    }
    const event = await sendEvent(url, HTTP.binary(new CloudEvent({ type: 'order', source: '/s', datacontenttype: 'application/xml', data: '<order/>' })));
    assert.equal(event.status, 415);
    assert.equal(runs, 0);
    assert.equal((await json(url, '/order', '{"id":1}', 'application/vnd.shop+json')).status, 200);
    // The media type is the client's text: quoted cut short.
    const long = await json(url, '/order', 'x', `text/${'p'.repeat(5000)}`);
    assert.equal(long.json.message, `function 'order' takes JSON input described by its schema, not 'text/${'p'.repeat(35)}…'`);
  });

  it('a batch to / is routed whole before any event runs: one no function takes (404) or two do (409) refuses it, naming the event', async (t) => {
    const ran = [];
    const count = (input, context) => ran.push(context.cloudevent.id);
    const both = Object.assign((x) => x, { trigger: 'twice' });
    const { url } = await serve(t, { functions: { count, twice: (x) => x, both } });
    const batch = (types) =>
      request(url + '/', {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify(types.map((type, i) => ({ specversion: '1.0', type, source: '/s', id: String(i) }))),
      });
    const missing = await batch(['count', 'nosuch']);
    assert.equal(missing.status, 404);
    assert.match(missing.json.message, /^event \[1\]: no function for ce-type 'nosuch'$/);
    const ambiguous = await batch(['count', 'twice']);
    assert.equal(ambiguous.status, 409);
    assert.match(ambiguous.json.message, /^event \[1\]: ce-type 'twice' matches more than one function/);
    assert.deepEqual(ran, [], 'no event of either batch ran');
    assert.equal((await batch(['count', 'count'])).status, 200);
    assert.deepEqual(ran, ['0', '1']);
  });

  it("bytes in any view, a web stream, a Blob and a Response are answered as handle's are, not as {}", async (t) => {
    const outputs = {
      arrayBuffer: () => new Uint8Array([1, 2]).buffer,
      dataView: () => new DataView(new Uint8Array([3, 4]).buffer),
      float: () => new Uint8Array(new Float32Array([1.5]).buffer),
      stream: () => new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode('streamed')), c.close()) }),
      blob: () => new Blob(['a blob'], { type: 'text/plain' }),
      response: () => new Response('a response', { status: 201, headers: { 'content-type': 'text/plain' } }),
    };
    const { url } = await serve(t, { functions: outputs });
    const body = async (name) => {
      const res = await fetch(`${url}/${name}`);
      return { status: res.status, bytes: [...Buffer.from(await res.arrayBuffer())] };
    };
    assert.deepEqual((await body('arrayBuffer')).bytes, [1, 2]);
    assert.deepEqual((await body('dataView')).bytes, [3, 4]);
    assert.deepEqual((await body('float')).bytes, [...Buffer.from(new Float32Array([1.5]).buffer)]);
    assert.equal(Buffer.from((await body('stream')).bytes).toString(), 'streamed');
    assert.equal(Buffer.from((await body('blob')).bytes).toString(), 'a blob');
    const response = await body('response');
    assert.equal(response.status, 201);
    assert.equal(Buffer.from(response.bytes).toString(), 'a response');
  });

  it("a function's this is the handlers' frozen empty object, not undefined", async (t) => {
    const { url } = await serve(t, {
      functions: {
        self() {
          return { type: typeof this, frozen: Object.isFrozen(this), keys: Object.keys(this ?? {}) };
        },
      },
    });
    assert.deepEqual((await request(url + '/self')).json, { type: 'object', frozen: true, keys: [] });
  });

  it("a client's text in a query name or a ce-type is quoted, escaped and cut, as violations are", async (t) => {
    const { url } = await serve(t, { functions: { echo: (x) => x } });
    const query = await request(`${url}/echo?a..b=1`);
    assert.equal(query.status, 400);
    assert.equal(query.json.message, "invalid query parameter name 'a..b'");
    const type = `evil\u202e${'x'.repeat(100)}`;
    // Structured: a header could not carry U+202E.
    const event = await sendEvent(url, HTTP.structured(new CloudEvent({ type, source: '/s', data: {} })));
    assert.equal(event.status, 404);
    const message = JSON.parse(event.text).message;
    assert.match(message, /^no function for ce-type 'evil\\u202ex+…'$/);
    assert.ok(message.length < 80, message);
  });
});

describe('named functions: query names are parameters, whatever they spell', () => {
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

  it('named functions: query names nesting deeper than 512 levels are a 400', async (t) => {
    const own = await serve(t, { functions: { echo: (input) => input, ignore: () => 'ok' } });
    const key = Array(6000).fill('a').join('.');
    for (const name of ['echo', 'ignore']) assert.equal((await request(`${own.url}/${name}?${key}=1`)).status, 400);
    assert.equal((await request(`${own.url}/echo?${Array(512).fill('a').join('.')}=1`)).status, 200);
  });
});
