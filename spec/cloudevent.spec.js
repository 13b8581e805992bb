'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { CloudEvent, HTTP } = require('cloudevents');
const { serve, startServer, request } = require('./helpers');
const { exchange } = require('./raw');

// Sends an SDK Message and reads the answer back as an SDK Message.
async function send(url, message, path = '/') {
  const res = await fetch(url + path, { method: 'POST', headers: message.headers, body: message.body });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: Object.fromEntries(res.headers), body, text: body.toString() };
}

const order = { customerId: 1, productId: 2 };
const event = (extra = {}) => new CloudEvent({ type: 'dev.example.order', source: '/shop', subject: 'order-1', data: order, ...extra });

describe('CloudEvents in', () => {
  let server;
  const seen = [];
  before(async () => {
    server = await startServer((ctx, data) => {
      seen.push({ ctx, data });
      return undefined;
    });
  });
  after(() => server.close());
  const last = () => seen[seen.length - 1];

  it('binary mode: context.cloudevent is the event and the data is the second argument', async () => {
    const sent = event();
    const res = await send(server.url, HTTP.binary(sent));
    assert.equal(res.status, 204);
    const { ctx, data } = last();
    assert.ok(ctx.cloudevent instanceof CloudEvent);
    assert.equal(ctx.cloudevent.id, sent.id);
    assert.equal(ctx.cloudevent.type, 'dev.example.order');
    assert.equal(ctx.cloudevent.source, '/shop');
    assert.equal(ctx.cloudevent.subject, 'order-1');
    assert.equal(ctx.cloudevent.specversion, '1.0');
    assert.equal(ctx.cloudevent.time, sent.time);
    assert.deepEqual(data, order);
    assert.deepEqual(ctx.body, order);
  });

  it('structured mode gives the same event and data', async () => {
    const sent = event({ myextension: 'ext' });
    const res = await send(server.url, HTTP.structured(sent));
    assert.equal(res.status, 204);
    const { ctx, data } = last();
    assert.equal(ctx.cloudevent.id, sent.id);
    assert.equal(ctx.cloudevent.subject, 'order-1');
    assert.equal(ctx.cloudevent.myextension, 'ext');
    assert.deepEqual(data, order);
  });

  it('binary mode extensions arrive as attributes', async () => {
    await send(server.url, HTTP.binary(event({ traceparent: 'abc', partitionkey: 'p1' })));
    assert.equal(last().ctx.cloudevent.traceparent, 'abc');
    assert.equal(last().ctx.cloudevent.partitionkey, 'p1');
  });

  it('specversion 0.3 is accepted in both modes', async () => {
    for (const mode of ['binary', 'structured']) {
      const res = await send(server.url, HTTP[mode](event({ specversion: '0.3' })));
      assert.equal(res.status, 204, mode);
      assert.equal(last().ctx.cloudevent.specversion, '0.3');
      assert.deepEqual(last().data, order);
    }
  });

  it('data by datacontenttype: text is a string, XML a Document, octet-stream a Buffer', async () => {
    await send(server.url, HTTP.binary(event({ datacontenttype: 'text/plain', data: 'plain words' })));
    assert.equal(last().data, 'plain words');

    await send(server.url, HTTP.binary(event({ datacontenttype: 'application/xml', data: '<order><id>9</id></order>' })));
    assert.equal(last().data.documentElement.nodeName, 'order');
    assert.equal(last().data.getElementsByTagName('id')[0].textContent, '9');

    await send(server.url, HTTP.structured(event({ datacontenttype: 'text/xml', data: '<a>1</a>' })));
    assert.equal(last().data.documentElement.nodeName, 'a');

    const bytes = Buffer.from([0, 1, 2, 250]);
    await send(server.url, HTTP.binary(event({ datacontenttype: 'application/octet-stream', data: bytes })));
    assert.ok(Buffer.isBuffer(last().data));
    assert.deepEqual([...last().data], [...bytes]);
  });

  it('structured data_base64 arrives as a Buffer', async () => {
    const bytes = Buffer.from('binary \x00 payload');
    const res = await send(server.url, HTTP.structured(event({ datacontenttype: 'application/octet-stream', data: bytes })));
    assert.equal(res.status, 204);
    assert.ok(Buffer.isBuffer(last().data));
    assert.equal(last().data.toString(), 'binary \x00 payload');
  });

  it('an event without data gives undefined', async () => {
    await send(server.url, HTTP.binary(new CloudEvent({ type: 't', source: '/s' })));
    assert.equal(last().data, undefined);
  });

  const binaryHeaders = { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0' };
  const invalid = [
    ['a missing id', { ...binaryHeaders, 'ce-id': undefined }, 'id'],
    ['a missing source', { ...binaryHeaders, 'ce-source': undefined }, 'source'],
    ['a missing type', { ...binaryHeaders, 'ce-type': undefined }, 'type'],
    ['a missing specversion', { ...binaryHeaders, 'ce-specversion': undefined }, 'specversion'],
    ['an unknown specversion', { ...binaryHeaders, 'ce-specversion': '2.0' }, 'specversion'],
    ['a bad time', { ...binaryHeaders, 'ce-time': 'garbage' }, 'time'],
    ['an impossible time', { ...binaryHeaders, 'ce-time': '2024-13-45T99:00:00Z' }, 'time'],
    ['an empty id', { ...binaryHeaders, 'ce-id': '' }, 'id'],
    ['a bad extension name', { ...binaryHeaders, 'ce-bad_name': 'x' }, 'bad_name'],
  ];
  for (const [what, headers, attribute] of invalid) {
    it(`binary mode: ${what} is a 400 naming '${attribute}'`, async () => {
      const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined));
      const before = seen.length;
      const res = await request(server.url, { method: 'POST', headers: { ...clean, 'content-type': 'application/json' }, body: '{}' });
      assert.equal(res.status, 400);
      assert.equal(res.json.attribute, attribute);
      assert.match(res.json.message, new RegExp(`'${attribute}'`));
      assert.equal(seen.length, before, 'the handler is not called');
    });
  }

  const structured = { id: '1', source: '/s', type: 't', specversion: '1.0', data: { a: 1 } };
  const invalidStructured = [
    ['a missing id', { ...structured, id: undefined }, 'id'],
    ['a numeric id', { ...structured, id: 5 }, 'id'],
    ['a bad time', { ...structured, time: 'yesterday' }, 'time'],
    ['an unknown specversion', { ...structured, specversion: '9' }, 'specversion'],
    ['both data and data_base64', { ...structured, data_base64: 'AAEC' }, 'data_base64'],
    ['data_base64 that is not base64', { id: '1', source: '/s', type: 't', specversion: '1.0', data_base64: '***' }, 'data_base64'],
    ['a source that is not a URI reference', { ...structured, source: 'has spaces in it' }, 'source'],
    ['an extension that is an object', { ...structured, myext: { a: 1 } }, 'myext'],
    ['a dataschema that is not a URI', { ...structured, dataschema: 'not a uri' }, 'dataschema'],
  ];
  for (const [what, body, attribute] of invalidStructured) {
    it(`structured mode: ${what} is a 400 naming '${attribute}'`, async () => {
      const res = await request(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 400);
      assert.equal(res.json.attribute, attribute);
    });
  }

  it('structured mode: malformed JSON is a 400 saying where', async () => {
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: '{"id": "1",' });
    assert.equal(res.status, 400);
    assert.match(res.json.message, /invalid JSON at line 1/);
  });

  it('structured mode: a JSON value that is not an object is a 400', async () => {
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: '[1]' });
    assert.equal(res.status, 400);
  });

  it('structured mode in another format is a 415', async () => {
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+xml' }, body: '<e/>' });
    assert.equal(res.status, 415);
  });

  it('binary mode: data that does not parse by its content type is a 400 naming data', async () => {
    const res = await request(server.url, { method: 'POST', headers: { ...binaryHeaders, 'content-type': 'application/json' }, body: '{nope' });
    assert.equal(res.status, 400);
    assert.equal(res.json.attribute, 'data');
    assert.match(res.json.message, /invalid JSON at line 1, column 2/);
  });

  it('a structured media type with parameters and odd case is still structured', async () => {
    const message = HTTP.structured(event());
    const res = await send(server.url, { headers: { 'content-type': 'Application/CloudEvents+JSON;charset=UTF-8' }, body: message.body });
    assert.equal(res.status, 204);
    assert.deepEqual(last().data, order);
  });
});

describe('CloudEvents out', () => {
  let server;
  before(async () => {
    server = await startServer((ctx, data) => {
      switch (ctx.query.answer) {
        case 'chain':
          return ctx
            .cloudEventResponse({ echo: data ?? null })
            .id('fixed-id')
            .source('/answers')
            .type('dev.example.answer')
            .version('1.0')
            .response();
        case 'unfinished':
          return ctx.cloudEventResponse({ unfinished: true }).type('dev.example.unfinished').source('/answers');
        case 'defaults':
          return ctx.cloudEventResponse('text data').response();
        case 'sdk':
          return new CloudEvent({ type: 'dev.example.sdk', source: '/sdk', data: { sdk: true }, myext: 'x' });
        case 'binary-data':
          return new CloudEvent({ type: 'dev.example.bytes', source: '/sdk', datacontenttype: 'application/octet-stream', data: Buffer.from([9, 8, 7]) });
        case 'message':
          return HTTP.structured(new CloudEvent({ id: 'm-1', type: 'dev.example.message', source: '/msg', data: { m: 1 } }));
        case 'nothing':
          return undefined;
        default:
          return { plain: true };
      }
    });
  });
  after(() => server.close());

  it('a response() event answers a binary request in binary mode', async () => {
    const res = await send(server.url, HTTP.binary(event()), '/?answer=chain');
    assert.equal(res.status, 200);
    assert.equal(res.headers['ce-id'], 'fixed-id');
    assert.equal(res.headers['ce-type'], 'dev.example.answer');
    assert.equal(res.headers['ce-source'], '/answers');
    assert.equal(res.headers['ce-specversion'], '1.0');
    assert.ok(res.headers['ce-time']);
    const answer = HTTP.toEvent({ headers: res.headers, body: res.text });
    assert.deepEqual(answer.data, { echo: order });
  });

  it('a response() event answers a structured request in structured mode', async () => {
    const res = await send(server.url, HTTP.structured(event()), '/?answer=chain');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^application\/cloudevents\+json/);
    assert.equal(res.headers['ce-id'], undefined);
    const answer = HTTP.toEvent({ headers: res.headers, body: res.text });
    assert.equal(answer.type, 'dev.example.answer');
    assert.equal(answer.id, 'fixed-id');
    assert.deepEqual(answer.data, { echo: order });
  });

  it('a CloudEvent answers a plain HTTP request in binary mode', async () => {
    const res = await send(server.url, { headers: { 'content-type': 'application/json' }, body: '{"x":1}' }, '/?answer=chain');
    assert.equal(res.headers['ce-type'], 'dev.example.answer');
    assert.deepEqual(JSON.parse(res.text), { echo: { x: 1 } });
  });

  it('the chain returned without response() counts as if it had been called', async () => {
    const res = await send(server.url, HTTP.binary(event()), '/?answer=unfinished');
    assert.equal(res.status, 200);
    assert.equal(res.headers['ce-type'], 'dev.example.unfinished');
    assert.match(res.headers['ce-id'], /^[0-9a-f-]{36}$/);
    assert.deepEqual(JSON.parse(res.text), { unfinished: true });
  });

  it('response() generates an id, specversion 1.0 and the time', async () => {
    const before = Date.now();
    const a = await send(server.url, HTTP.binary(event()), '/?answer=defaults');
    const b = await send(server.url, HTTP.binary(event()), '/?answer=defaults');
    assert.notEqual(a.headers['ce-id'], b.headers['ce-id']);
    assert.equal(a.headers['ce-specversion'], '1.0');
    assert.ok(Date.parse(a.headers['ce-time']) >= before - 1000);
    assert.ok(a.headers['ce-source']);
    assert.ok(a.headers['ce-type']);
    assert.equal(HTTP.toEvent({ headers: a.headers, body: a.text }).data, 'text data');
  });

  it("response()'s time is toISOString()'s text at every millisecond, second and year boundary", async (t) => {
    let instant = 0;
    t.mock.method(Date, 'now', () => instant);
    const instants = [
      0,
      7,
      99,
      999,
      1000,
      1001,
      -1,
      -1000,
      -1001,
      Date.UTC(2026, 10, 28, 23, 59, 59, 999),
      Date.UTC(2026, 10, 29),
      253402300799999,
      253402300800000,
      -62167219200001,
    ];
    for (instant of instants) {
      const res = await send(server.url, HTTP.binary(event()), '/?answer=defaults');
      assert.equal(res.headers['ce-time'], new Date(instant).toISOString(), `at ${instant}`);
    }
  });

  it('a returned SDK CloudEvent goes out with its attributes and extensions', async () => {
    const res = await send(server.url, HTTP.binary(event()), '/?answer=sdk');
    assert.equal(res.headers['ce-type'], 'dev.example.sdk');
    assert.equal(res.headers['ce-myext'], 'x');
    assert.deepEqual(JSON.parse(res.text), { sdk: true });
  });

  it('binary data goes out as the exact bytes', async () => {
    const res = await send(server.url, HTTP.binary(event()), '/?answer=binary-data');
    assert.equal(res.headers['content-type'], 'application/octet-stream');
    assert.deepEqual([...res.body], [9, 8, 7]);
    const structured = await send(server.url, HTTP.structured(event()), '/?answer=binary-data');
    assert.equal(JSON.parse(structured.text).data_base64, Buffer.from([9, 8, 7]).toString('base64'));
  });

  it('a returned Message is sent as it is', async () => {
    const res = await send(server.url, HTTP.binary(event()), '/?answer=message');
    assert.match(res.headers['content-type'], /^application\/cloudevents\+json/);
    const answer = HTTP.toEvent({ headers: res.headers, body: res.text });
    assert.equal(answer.id, 'm-1');
    assert.deepEqual(answer.data, { m: 1 });
  });

  it('an event handler returning nothing answers 204; a plain object answers JSON', async () => {
    assert.equal((await send(server.url, HTTP.binary(event()), '/?answer=nothing')).status, 204);
    const res = await send(server.url, HTTP.binary(event()), '/');
    assert.deepEqual(JSON.parse(res.text), { plain: true });
    assert.equal(res.headers['ce-id'], undefined);
  });

  it('an event whose datacontenttype no header can carry is answered structured, not a failed writeHead', async (t) => {
    const { CloudEvent } = require('cloudevents');
    const bad = await serve(t, () =>
      Object.freeze(
        Object.assign(Object.create(CloudEvent.prototype), {
          specversion: '1.0',
          id: '1',
          source: '/s',
          type: 't',
          datacontenttype: 'text/plain\u20ac',
          data: 'x',
        }),
      ),
    );
    const { text } = await exchange(bad.server.address().port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 200 OK\r\ncontent-type: application\/cloudevents\+json/);
    assert.match(text, /"datacontenttype":"text\/plain/);
  });
});

describe('CloudEvents passed through', () => {
  it('a received event is not given values it did not have, and goes back out as it came', async (t) => {
    const { url } = await serve(t, (ctx) => ctx.cloudevent);
    const headers = {
      'ce-id': 'x-1',
      'ce-source': '/s',
      'ce-type': 't',
      'ce-specversion': '1.0',
      'ce-subject': 'caf\u00e9 "quoted" 100%',
      'content-type': 'application/json',
    };
    const encoded = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, k === 'ce-subject' ? 'caf%C3%A9%20%22quoted%22%20100%25' : v]));
    const binary = await send(url, { headers: encoded, body: '{"a":1}' });
    assert.equal(binary.status, 200);
    assert.equal(binary.headers['ce-time'], undefined, 'no invented time');
    assert.equal(binary.headers['ce-subject'], 'caf%C3%A9%20%22quoted%22%20100%25');
    const back = HTTP.toEvent({ headers: binary.headers, body: binary.text });
    assert.equal(back.id, 'x-1');
    const structured = await send(url, {
      headers: { 'content-type': 'application/cloudevents+json' },
      body: JSON.stringify({ id: 'x-2', source: '/s', type: 't', specversion: '1.0', data: { b: 2 } }),
    });
    const json = JSON.parse(structured.text);
    assert.deepEqual(json, { id: 'x-2', source: '/s', type: 't', specversion: '1.0', data: { b: 2 } });
  });

  it("the response chain's answer encodes what the function gave (id, type, source), whatever funcrun wrote beside it", async (t) => {
    const { url } = await serve(t, (ctx) => {
      const chain = ctx.cloudEventResponse({ ok: true }).type(ctx.query.type).source(ctx.query.source);
      return (ctx.query.id === undefined ? chain : chain.id(ctx.query.id)).response();
    });
    const ce = { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0', 'content-type': 'application/json' };
    const query = (q) => `/?${new URLSearchParams(q)}`;
    // Each value alone needs encoding: the others around it need none.
    const id = await send(url, { headers: ce, body: '{}' }, query({ id: 'caf\u00e9 "1"', type: 't', source: '/a' }));
    assert.equal(id.status, 200);
    assert.equal(id.headers['ce-id'], 'caf%C3%A9%20%221%22');
    const type = await send(url, { headers: ce, body: '{}' }, query({ type: 'caf\u00e9 100%', source: '/a' }));
    assert.equal(type.headers['ce-type'], 'caf%C3%A9%20100%25');
    const source = await send(url, { headers: ce, body: '{}' }, query({ type: 't', source: '/a%20b' }));
    assert.equal(source.headers['ce-source'], '/a%2520b');
    assert.deepEqual([type.headers['ce-type'], source.headers['ce-source']].map(decodeURIComponent), ['caf\u00e9 100%', '/a%20b']);
    // What the chain wrote is sent as it made it.
    assert.equal(source.headers['ce-specversion'], '1.0');
    assert.match(source.headers['ce-time'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.match(source.headers['ce-id'], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("an answer whose event fills node's 16 KiB head is structured, so that node's own clients can read it; a lone surrogate too", async (t) => {
    const { url } = await serve(t, (ctx, data) => ctx.cloudEventResponse({ ok: true }).type('t').source('/s').id(data.id).response());
    const ce = { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0', 'content-type': 'application/json' };
    // The event's headers alone under 16 KiB, the whole head over it: fetch refused such heads (UND_ERR_HEADERS_OVERFLOW).
    for (const id of ['x'.repeat(16_200), '\u00e9'.repeat(2_700)]) {
      const res = await send(url, { headers: ce, body: JSON.stringify({ id }) });
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'], /^application\/cloudevents\+json/);
      assert.equal(JSON.parse(res.text).id, id);
    }
    const fits = await send(url, { headers: ce, body: JSON.stringify({ id: 'x'.repeat(14_000) }) });
    assert.equal(fits.headers['ce-id'], 'x'.repeat(14_000));
    // A lone surrogate has no UTF-8 to percent-encode: JSON escapes it.
    const lone = await send(url, { headers: ce, body: JSON.stringify({ id: 'a\ud800b' }) });
    assert.equal(lone.status, 200);
    assert.match(lone.headers['content-type'], /^application\/cloudevents\+json/);
    assert.equal(JSON.parse(lone.text).id, 'a\ud800b');
  });

  it('a percent-encoded binary attribute arrives decoded', async (t) => {
    let subject;
    const { url } = await serve(t, (ctx) => {
      subject = ctx.cloudevent.subject;
    });
    await send(url, { headers: { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0', 'ce-subject': 'caf%C3%A9%20100%25' }, body: '' });
    assert.equal(subject, 'caf\u00e9 100%');
  });

  it('a binary attribute sent as raw UTF-8 is read as the UTF-8 it is; bytes that are not UTF-8 as node reads them', async (t) => {
    const subjects = [];
    const { url } = await serve(t, (ctx) => void subjects.push(ctx.cloudevent.subject));
    const port = new URL(url).port;
    const head = 'ce-id: 1\r\nce-source: /s\r\nce-type: t\r\nce-specversion: 1.0\r\n';
    for (const subject of [Buffer.from('café ✓'), Buffer.from([0x63, 0x61, 0x66, 0xe9])]) {
      const request = Buffer.concat([
        Buffer.from(`POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n${head}ce-subject: `),
        subject,
        Buffer.from('\r\n\r\n'),
      ]);
      const { text } = await exchange(port, request);
      assert.match(text, /^HTTP\/1\.1 204 /);
    }
    assert.deepEqual(subjects, ['café ✓', 'caf\u00e9']);
  });

  it('a source is checked on every response(), whichever source the one before gave', async (t) => {
    const { url } = await serve(t, (ctx) => ctx.cloudEventResponse({}).source(ctx.query.source).type('t'));
    for (const [source, status] of [
      ['/a', 200],
      ['', 500],
      ['/a', 200],
      ['has spaces', 500],
      ['/a%2', 500],
      ['/a', 200],
    ]) {
      const res = await send(url, HTTP.binary(event()), `/?source=${encodeURIComponent(source)}`);
      assert.equal(res.status, status, `source ${JSON.stringify(source)}`);
      if (status === 200) assert.equal(res.headers['ce-source'], source);
    }
  });

  it("an arriving event's source is checked on every request, whichever source the one before had", async (t) => {
    const { url } = await serve(t, (ctx) => ({ source: ctx.cloudevent.source }));
    for (const [source, status] of [
      ['/a', 200],
      ['', 400],
      ['/a', 200],
      ['has%20spaces', 400],
      ['/a', 200],
    ]) {
      const headers = { 'ce-id': '1', 'ce-source': source, 'ce-type': 't', 'ce-specversion': '1.0', 'content-type': 'application/json' };
      const res = await send(url, { headers, body: '{}' });
      assert.equal(res.status, status, `source ${JSON.stringify(source)}`);
    }
  });

  it('an invalid response() (empty type, bad source) is a 500 logged, not an invalid event sent', async (t) => {
    const { url, log } = await serve(t, (ctx) => ctx.cloudEventResponse({}).source('has spaces').type('t'));
    const res = await send(url, HTTP.binary(event()));
    assert.equal(res.status, 500);
    assert.ok(log.entries().some((e) => /source must be a URI reference/.test(e.err?.message ?? '')));
  });

  it('an empty id given to response() is a 500 logged, not an event sent with an empty ce-id', async (t) => {
    const { url, log } = await serve(t, (ctx) => ctx.cloudEventResponse({}).id('').source('/s').type('t').response());
    const res = await send(url, HTTP.binary(event()));
    assert.equal(res.status, 500);
    assert.equal(res.headers['ce-id'], undefined);
    assert.ok(log.entries().some((e) => /id must be a non-empty string/.test(e.err?.message ?? '')));
  });
});
