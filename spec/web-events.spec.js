'use strict';
// CloudEvents for fetch handlers: readEvent()/readEvents() read a WHATWG Request with the same
// checks and errors as a `handle` function's request (each case is sent to a real server as well,
// and what its `handle` received, or the error its client got, compared), and eventResponse()
// makes a Response the SDK reads back as the same event.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { HTTP, CloudEvent } = require('cloudevents');
const { readEvent, readEvents, eventResponse, HttpError } = require('../lib/index.js');
const { serve, startServer, request } = require('./helpers');

const BINARY = { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/spec', 'ce-type': 'spec.test' };
const STRUCTURED = { 'content-type': 'application/cloudevents+json' };
const event = (extra) => ({ specversion: '1.0', id: '1', source: '/spec', type: 'spec.test', ...extra });
const web = ({ headers, body }) => new Request('http://x/', { method: 'POST', headers, body });

// What each mode gives, read both ways.
const EVENTS = {
  'binary, JSON data': { headers: { ...BINARY, 'content-type': 'application/json' }, body: '{"order":7,"items":["a"]}' },
  'binary, text data': { headers: { ...BINARY, 'content-type': 'text/plain; charset=utf-8' }, body: 'héllo' },
  'binary, bytes': { headers: { ...BINARY, 'content-type': 'application/octet-stream' }, body: Buffer.from([0, 1, 2, 255]) },
  'binary, no body': { headers: BINARY, body: undefined },
  'binary, percent-encoded and extension attributes': {
    headers: { ...BINARY, 'ce-subject': 'caf%C3%A9 %22x%22', 'ce-time': '2024-02-29T23:59:60Z', 'ce-partition': 'p1', 'content-type': 'application/json' },
    body: '1',
  },
  'binary, percent-encoded control characters in a value': { headers: { ...BINARY, 'ce-subject': 'a%00b%0D%0Ac%7F' }, body: undefined },
  'structured, JSON data': { headers: STRUCTURED, body: JSON.stringify(event({ datacontenttype: 'application/json', data: { order: 7 } })) },
  'structured, data_base64': { headers: STRUCTURED, body: JSON.stringify(event({ data_base64: 'AAEC/w==' })) },
  'structured, a charset and typed extensions': {
    headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
    body: JSON.stringify(event({ count: 3, urgent: true, subject: 'ünïcode' })),
  },
  'structured, a 200 KB attribute value': { headers: STRUCTURED, body: JSON.stringify(event({ subject: 'x'.repeat(200_000) })) },
  'structured, specversion 0.3': { headers: STRUCTURED, body: JSON.stringify(event({ specversion: '0.3', schemaurl: 'https://example.com/s' })) },
};

// Requests refused: the status, code, message and attribute must be those the handle path gives.
const REFUSED = {
  'binary without ce-id': { headers: { ...BINARY, 'ce-id': undefined }, body: undefined },
  'binary without ce-source': { headers: { ...BINARY, 'ce-source': undefined }, body: undefined },
  'specversion 2.0': { headers: { ...BINARY, 'ce-specversion': '2.0' }, body: undefined },
  'a time that is no instant': { headers: { ...BINARY, 'ce-time': '2020-02-30T00:00:00Z' }, body: undefined },
  'binary JSON data that is not JSON': { headers: { ...BINARY, 'content-type': 'application/json' }, body: '{"a":' },
  'structured, not JSON': { headers: STRUCTURED, body: '{"specversion":' },
  'structured, empty': { headers: STRUCTURED, body: '' },
  'structured, a JSON array (not an event)': { headers: STRUCTURED, body: '[1,2]' },
  'structured, a JSON string (not an event)': { headers: STRUCTURED, body: '"event"' },
  'structured, a __proto__ key': { headers: STRUCTURED, body: '{"specversion":"1.0","id":"1","source":"/s","type":"t","__proto__":{"polluted":true}}' },
  'structured, a constructor key': { headers: STRUCTURED, body: JSON.stringify(event({ constructor: 'x' })) },
  'structured, data and data_base64': { headers: STRUCTURED, body: JSON.stringify(event({ data: 1, data_base64: 'AA==' })) },
  'binary, a ce-__proto__ header': { headers: { ...BINARY, 'ce-__proto__': 'x' }, body: undefined },
  'binary, a ce-constructor header': { headers: { ...BINARY, 'ce-constructor': 'x' }, body: undefined },
  'binary, a ce-datacontenttype smuggling a header': {
    headers: { ...BINARY, 'content-type': 'text/plain', 'ce-datacontenttype': 'text/plain%0D%0ASet-Cookie:%20x=1' },
    body: 'a',
  },
  'a CloudEvents format other than JSON': { headers: { 'content-type': 'application/cloudevents+xml' }, body: '<event/>' },
  'a compressed body': { headers: { ...STRUCTURED, 'content-encoding': 'gzip' }, body: JSON.stringify(event()) },
  'a charset node cannot decode': { headers: { 'content-type': 'application/cloudevents+json; charset=x-nope' }, body: JSON.stringify(event()) },
  'an integer extension past 32 bits': { headers: STRUCTURED, body: JSON.stringify(event({ big: 2 ** 31 })) },
};

const clean = (headers) => Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined));
const sent = ({ headers, body }) => ({ method: 'POST', headers: clean(headers), body });
const refusal = (err) => {
  assert.ok(err instanceof HttpError, `not funcrun's HttpError: ${err}`);
  return { status: err.statusCode, code: err.code, message: err.message, attribute: err.details?.attribute };
};

describe('readEvent() reads a Request as a handle function gets its event', () => {
  let server;
  const seen = [];
  before(async () => {
    server = await startServer((context) => {
      seen.push(context.cloudevent);
    });
  });
  after(() => server.close());

  async function handled(init) {
    seen.length = 0;
    const answer = await request(server.url, sent(init));
    return { answer, events: [...seen] };
  }

  for (const [name, init] of Object.entries(EVENTS)) {
    it(`${name}: the same event, attributes and data`, async () => {
      const { answer, events } = await handled(init);
      assert.equal(answer.status, 204, answer.text);
      assert.equal(events.length, 1);
      const read = await readEvent(web({ headers: clean(init.headers), body: init.body }));
      assert.deepStrictEqual(read, events[0]);
      assert.ok(read instanceof CloudEvent);
      assert.ok(Object.isFrozen(read));
    });
  }

  for (const [name, init] of Object.entries(REFUSED)) {
    it(`${name}: the same error status, code and message`, async () => {
      const { answer, events } = await handled(init);
      assert.equal(events.length, 0);
      assert.ok(answer.status === 400 || answer.status === 415, answer.text);
      const expected = { status: answer.status, code: answer.json.code, message: answer.json.message, attribute: answer.json.attribute };
      await assert.rejects(readEvent(web({ headers: clean(init.headers), body: init.body })), (err) => {
        assert.deepStrictEqual(refusal(err), expected);
        return true;
      });
    });
  }

  it('a batch: readEvents() gives the events the handler ran with, in order', async () => {
    const init = {
      headers: { 'content-type': 'application/cloudevents-batch+json' },
      body: JSON.stringify([event({ data: 1 }), event({ id: '2', data_base64: 'AQ==' })]),
    };
    const { answer, events } = await handled(init);
    assert.equal(answer.status, 204, answer.text);
    assert.equal(events.length, 2);
    assert.deepStrictEqual(await readEvents(web(init)), events);
  });

  it('a batch with one bad event: the same 400 naming its index', async () => {
    const init = { headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify([event(), event({ id: undefined, source: '/s' })]) };
    const { answer, events } = await handled(init);
    assert.equal(events.length, 0);
    assert.equal(answer.status, 400);
    await assert.rejects(readEvents(web(init)), (err) => {
      assert.deepStrictEqual(refusal(err), { status: 400, code: answer.json.code, message: answer.json.message, attribute: answer.json.attribute });
      assert.match(err.message, /event \[1\]: missing required attribute 'id'/);
      return true;
    });
  });
});

describe('readEvent() and readEvents() on their own', () => {
  it('a request that is no CloudEvent: 400 FUNCRUN_EVENT_REQUIRED', async () => {
    const plain = web({ headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    await assert.rejects(readEvent(plain), (err) => err instanceof HttpError && err.statusCode === 400 && err.code === 'FUNCRUN_EVENT_REQUIRED');
    await assert.rejects(readEvents(new Request('http://x/')), (err) => err.code === 'FUNCRUN_EVENT_REQUIRED');
  });

  it('a batch where one event is expected: 415, and its body is left unread', async () => {
    const batch = web({ headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify([event()]) });
    await assert.rejects(readEvent(batch), (err) => err.statusCode === 415 && err.code === 'FUNCRUN_UNSUPPORTED_EVENT_FORMAT' && /batch/.test(err.message));
    assert.equal(batch.bodyUsed, false);
  });

  it('readEvents() gives a single event as one element', async () => {
    const events = await readEvents(web({ headers: STRUCTURED, body: JSON.stringify(event({ data: { a: 1 } })) }));
    assert.equal(events.length, 1);
    assert.deepEqual(events[0].data, { a: 1 });
  });

  it('reads the body once: a body already read is a TypeError, not an empty event', async () => {
    const req = web({ headers: { ...BINARY, 'content-type': 'application/json' }, body: '{"a":1}' });
    await req.text();
    await assert.rejects(readEvent(req), (err) => err instanceof TypeError && /already been read/.test(err.message));
  });

  it('a body stream that errors (past a limit): that error, not an event', async () => {
    const tooLarge = new HttpError(413, 'too large', { code: 'FUNCRUN_BODY_TOO_LARGE' });
    const body = new ReadableStream({
      pull(controller) {
        controller.error(tooLarge);
      },
    });
    const req = new Request('http://x/', { method: 'POST', headers: STRUCTURED, body, duplex: 'half' });
    await assert.rejects(readEvent(req), (err) => err === tooLarge);
  });

  it('a raw control character a Request holds in a ce- header is read as the value it is, and answered percent-encoded', async () => {
    const read = await readEvent(web({ headers: { ...BINARY, 'ce-subject': 'a\x01b' }, body: undefined }));
    assert.equal(read.subject, 'a\x01b');
    const res = eventResponse(read);
    assert.equal(res.headers.get('ce-subject'), 'a%01b');
  });

  it('a ce- header a Request holds as raw UTF-8 bytes is read as the UTF-8 it is', async () => {
    const read = await readEvent(web({ headers: { ...BINARY, 'ce-subject': Buffer.from('café').toString('latin1') }, body: undefined }));
    assert.equal(read.subject, 'café');
  });

  it('a 100 KB ce- header (past what node accepts from a client) is read; eventResponse() answers it structured', async () => {
    const long = 'y'.repeat(100_000);
    const read = await readEvent(web({ headers: { ...BINARY, 'ce-subject': long }, body: undefined }));
    assert.equal(read.subject.length, 100_000);
    const res = eventResponse(read);
    assert.match(res.headers.get('content-type'), /^application\/cloudevents\+json/);
    assert.equal(res.headers.get('ce-subject'), null);
    assert.equal(JSON.parse(await res.text()).subject, long);
  });
});

// The SDK's own reading of an answer (bytes as a Buffer body, anything else as text, as its binding takes them).
const sdkRead = async (res, bytes = false) =>
  HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: bytes ? Buffer.from(await res.arrayBuffer()) : await res.text() });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('eventResponse() makes a Response the SDK reads back', () => {
  it('binary by default: attributes as ce- headers, JSON data as the body', async () => {
    const res = eventResponse({ type: 'com.example.done', source: '/orders', subject: 'o-7', tenant: 'acme', data: { order: 7 } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ce-type'), 'com.example.done');
    assert.equal(res.headers.get('content-type'), 'application/json');
    const back = await sdkRead(res);
    assert.equal(back.type, 'com.example.done');
    assert.equal(back.source, '/orders');
    assert.equal(back.subject, 'o-7');
    assert.equal(back.tenant, 'acme');
    assert.deepEqual(back.data, { order: 7 });
  });

  it('structured on request: one JSON document the SDK reads as the same event', async () => {
    const res = eventResponse({ type: 't', source: '/s', id: 'fixed', time: '2024-01-02T03:04:05.000Z', data: { a: [1] } }, { mode: 'structured' });
    assert.match(res.headers.get('content-type'), /^application\/cloudevents\+json; charset=utf-8$/);
    assert.equal(res.headers.get('ce-id'), null);
    const back = await sdkRead(res);
    assert.equal(back.id, 'fixed');
    assert.equal(back.time, '2024-01-02T03:04:05.000Z');
    assert.deepEqual(back.data, { a: [1] });
  });

  for (const mode of ['binary', 'structured']) {
    it(`${mode}: an event without id, time or specversion gets a new UUID, the time now and 1.0`, async () => {
      const before = Date.now();
      const back = await sdkRead(eventResponse({ type: 't', source: '/s' }, { mode }));
      assert.match(back.id, UUID);
      assert.equal(back.specversion, '1.0');
      const time = Date.parse(back.time);
      assert.ok(time >= before - 1 && time <= Date.now() + 1, back.time);
      const other = await sdkRead(eventResponse({ type: 't', source: '/s' }, { mode }));
      assert.notEqual(other.id, back.id);
    });
  }

  it('binary: bytes data is the body as it is, typed application/octet-stream', async () => {
    const bytes = Uint8Array.from([0, 1, 2, 0xfe, 0xff]);
    const res = eventResponse({ type: 't', source: '/s', data: bytes });
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    const body = Buffer.from(await res.clone().arrayBuffer());
    assert.deepEqual([...body], [0, 1, 2, 0xfe, 0xff]);
    const back = await sdkRead(res, true);
    assert.deepEqual([...Buffer.from(back.data)], [0, 1, 2, 0xfe, 0xff]);
  });

  it('structured: bytes data goes as data_base64', async () => {
    const res = eventResponse({ type: 't', source: '/s', data: Buffer.from('hi') }, { mode: 'structured' });
    const json = JSON.parse(await res.clone().text());
    assert.equal(json.data_base64, 'aGk=');
    assert.equal(json.data, undefined);
    assert.equal(Buffer.from((await sdkRead(res)).data).toString(), 'hi');
  });

  it('an SDK CloudEvent keeps its own id and time; a received event is answered as it came', async () => {
    const sdkEvent = new CloudEvent({ type: 't', source: '/s', id: 'sdk-1', time: '2024-05-06T07:08:09.000Z', data: 'text' });
    const back = await sdkRead(eventResponse(sdkEvent));
    assert.equal(back.id, 'sdk-1');
    assert.equal(back.time, '2024-05-06T07:08:09.000Z');
    assert.equal(back.data, 'text');
    const received = await readEvent(web({ headers: { ...BINARY, 'ce-partition': 'p', 'content-type': 'application/json' }, body: '{"x":1}' }));
    const forwarded = eventResponse(received);
    assert.equal(forwarded.headers.get('ce-id'), '1');
    assert.equal(forwarded.headers.get('ce-partition'), 'p');
    const again = await readEvent(new Request('http://x/', { method: 'POST', headers: forwarded.headers, body: await forwarded.text() }));
    assert.deepStrictEqual(
      { ...again },
      {
        ...received,
        time: forwarded.headers.get('ce-time'),
      },
    );
  });

  it("custom status and headers go with it; the event's own headers win", async () => {
    const res = eventResponse(
      { type: 't', source: '/s', id: 'mine', data: { ok: true } },
      { status: 202, headers: { 'x-request': 'abc', 'ce-id': 'forged', 'content-type': 'text/html' } },
    );
    assert.equal(res.status, 202);
    assert.equal(res.headers.get('x-request'), 'abc');
    assert.equal(res.headers.get('ce-id'), 'mine');
    assert.equal(res.headers.get('content-type'), 'application/json');
    const headers = new Headers([
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ]);
    assert.deepEqual(eventResponse({ type: 't', source: '/s' }, { headers }).headers.getSetCookie(), ['a=1', 'b=2']);
  });

  it('a string value with control characters or non-ASCII is percent-encoded (the HTTP binding), and readEvent() decodes it', async () => {
    const subject = 'line\r\nSet-Cookie: x=1 \u00e9 "q" 100%';
    const res = eventResponse({ type: 't', source: '/s', subject });
    assert.equal(res.headers.get('set-cookie'), null);
    assert.equal(res.headers.get('ce-subject'), 'line%0D%0ASet-Cookie:%20x=1%20%C3%A9%20%22q%22%20100%25');
    // The SDK reads binary headers without decoding them; funcrun's reading decodes.
    assert.equal((await readEvent(new Request('http://x/', { method: 'POST', headers: res.headers }))).subject, subject);
  });

  it('an event it cannot make is a TypeError naming what is wrong', () => {
    assert.throws(() => eventResponse({ source: '/s' }), /type must be a non-empty string/);
    assert.throws(() => eventResponse({ type: 't', source: 'not a uri' }), /source must be a URI reference/);
    assert.throws(() => eventResponse({ type: 't', source: '/s', specversion: '2.0' }), /specversion must be 1.0 or 0.3/);
    assert.throws(() => eventResponse(JSON.parse('{"type":"t","source":"/s","__proto__":"x"}')), /invalid attribute name '__proto__'/);
    assert.throws(() => eventResponse({ type: 't', source: '/s', Bad: 'x' }), /invalid attribute name 'Bad'/);
    assert.throws(() => eventResponse({ type: 't', source: '/s', nested: { a: 1 } }), /attribute 'nested' must be/);
    assert.throws(() => eventResponse({ type: 't', source: '/s', data_base64: 'AA==' }), /give bytes as data/);
    assert.throws(() => eventResponse({ type: 't', source: '/s', data: Buffer.from('a'), data_base64: 'Yg==' }), /give bytes as data/);
    assert.throws(() => eventResponse({ type: 't', source: '/s', big: 2 ** 31 }), /attribute 'big' must be a string, a 32-bit integer or a boolean/);
    assert.throws(() => eventResponse({ type: 't', source: '/s' }, { mode: 'batch' }), /mode must be/);
    assert.throws(() => eventResponse(null), TypeError);
  });

  it('bytes as an ArrayBuffer or any view are sent as bytes (application/octet-stream); a Blob is a TypeError', async () => {
    const bytes = [1, 2, 255, 0];
    for (const data of [new Uint8Array(bytes).buffer, new DataView(new Uint8Array(bytes).buffer), new Int8Array(new Uint8Array(bytes).buffer)]) {
      const res = eventResponse({ type: 't', source: '/s', data }, { mode: 'binary' });
      assert.equal(res.headers.get('content-type'), 'application/octet-stream', data.constructor.name);
      assert.deepEqual([...new Uint8Array(await res.arrayBuffer())], bytes, data.constructor.name);
    }
    assert.throws(() => eventResponse({ type: 't', source: '/s', data: new Blob(['a']) }), TypeError);
  });

  it('an event readEvent() would refuse is a TypeError too: an empty or non-text id, a time that is no timestamp, a reserved name', async () => {
    const refused = [
      [{ id: '' }, /attribute 'id' must be a non-empty string/],
      [{ id: 5 }, /attribute 'id' must be a non-empty string/],
      [{ time: 'yesterday' }, /attribute 'time' must be an RFC 3339 timestamp/],
      [{ time: 7 }, /attribute 'time' must be an RFC 3339 timestamp/],
      [{ subject: false }, /attribute 'subject' must be a non-empty string/],
      [{ validate: 'x' }, /'validate' is reserved/],
      [{ dataschema: 'not a uri %%' }, /attribute 'dataschema' must be a URI/],
    ];
    for (const [extra, message] of refused)
      assert.throws(
        () => eventResponse({ type: 't', source: '/s', ...extra }),
        (err) => err instanceof TypeError && message.test(err.message),
        JSON.stringify(extra),
      );
    // A Date time is its timestamp; what passes here reads back.
    const made = eventResponse({ type: 't', source: '/s', id: 'a', time: new Date(0), subject: 'x', dataschema: 'https://s.example/x' }, { mode: 'binary' });
    const back = await readEvent(new Request('http://x/', { method: 'POST', headers: made.headers, body: await made.arrayBuffer() }));
    assert.deepEqual([back.id, back.time, back.subject], ['a', '1970-01-01T00:00:00.000Z', 'x']);
  });
});

describe("eventResponse() without a mode answers in the request's mode, as a handle function's returned event is", () => {
  const answering = {
    async fetch(request) {
      const plain = request.headers.get('x-plain') !== null;
      const data = plain ? { plain: true } : (await readEvent(request)).data;
      return eventResponse({ type: 'com.example.done', source: '/spec', data });
    },
  };
  const modeOf = (res) =>
    /^application\/cloudevents\+json/.test(res.headers.get('content-type')) ? 'structured' : res.headers.get('ce-id') !== null ? 'binary' : 'none';

  for (const [name, options, expected] of [
    ['funcrun', {}, { binary: 'binary', structured: 'structured', plain: 'binary' }],
    [
      "faas-js-runtime's compatibility: binary always, as its returned events",
      { compat: 'faas-js-runtime' },
      { binary: 'binary', structured: 'binary', plain: 'binary' },
    ],
  ]) {
    it(`${name}: a binary event, a structured event, a plain request`, async (t) => {
      const server = await serve(t, answering, options);
      const ce = new CloudEvent({ id: 'e-1', type: 'com.example.order', source: '/spec', data: { n: 1 } });
      const answers = {};
      for (const mode of ['binary', 'structured']) {
        const { headers, body } = mode === 'binary' ? HTTP.binary(ce) : HTTP.structured(ce);
        const res = await fetch(server.url, { method: 'POST', headers, body });
        answers[mode] = modeOf(res);
        assert.deepEqual(HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: await res.text() }).data, { n: 1 });
      }
      answers.plain = modeOf(await fetch(server.url, { method: 'POST', headers: { 'x-plain': '1' }, body: 'x' }));
      assert.deepEqual(answers, expected);
    });
  }

  it('outside an invocation, binary', () => {
    assert.notEqual(eventResponse({ type: 't', source: '/s' }).headers.get('ce-id'), null);
  });
});

describe("eventResponse() in a fetch handler carries the invocation's trace, as a handle function's answered event does", () => {
  const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
  const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
  const TRACESTATE = 'congo=t61rcWkgMzE';
  const OWN = `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`;
  const answering = {
    fetch(request, env, ctx) {
      const url = new URL(request.url);
      ctx.log.info('answering');
      const own = url.searchParams.has('own') ? { traceparent: OWN } : {};
      return eventResponse({ type: 'com.example.done', source: '/spec', ...own }, { mode: url.searchParams.get('mode') ?? 'binary' });
    },
  };

  it("binary and structured: the request's trace, with the invocation's span, and its tracestate", async (t) => {
    const server = await serve(t, answering, { logLevel: 'info' });
    const binary = await fetch(server.url, { headers: { traceparent: TRACEPARENT, tracestate: TRACESTATE } });
    const { span_id: span } = server.log.entries().find((line) => line.msg === 'answering');
    assert.equal(binary.headers.get('ce-traceparent'), `00-${TRACE_ID}-${span}-01`);
    assert.equal(binary.headers.get('ce-tracestate'), TRACESTATE);
    const structured = await sdkRead(await fetch(`${server.url}?mode=structured`, { headers: { traceparent: TRACEPARENT } }));
    assert.match(structured.traceparent, new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  });

  it('an event with a traceparent of its own keeps it; a request without a trace answers an event without one', async (t) => {
    const server = await serve(t, answering);
    const own = await fetch(`${server.url}?own=1`, { headers: { traceparent: TRACEPARENT } });
    assert.equal(own.headers.get('ce-traceparent'), OWN);
    const untraced = await fetch(server.url);
    assert.equal(untraced.status, 200);
    assert.equal(untraced.headers.get('ce-traceparent'), null);
  });

  it('outside an invocation it adds none', () => {
    assert.equal(eventResponse({ type: 't', source: '/s' }).headers.get('ce-traceparent'), null);
  });

  it("where request scoping is off until used (Node 22's AsyncLocalStorage), taking eventResponse from funcrun turns it on", () => {
    // Node 24's cheap AsyncLocalStorage is turned off by a flag: the process then runs as Node 22 does.
    const slowScopeFlag = '_enable' in require('node:async_hooks').AsyncLocalStorage.prototype ? [] : ['--no-async-context-frame'];
    const script = `
      const { start, stop, eventResponse } = require(${JSON.stringify(require.resolve('../lib/index.js'))});
      (async () => {
        const server = await start({ fetch: () => eventResponse({ type: 't', source: '/s' }) }, { port: 0, host: '127.0.0.1', logLevel: 'silent' });
        const res = await fetch('http://127.0.0.1:' + server.address().port + '/', { headers: { traceparent: '${TRACEPARENT}' } });
        const slow = '_enable' in require('node:async_hooks').AsyncLocalStorage.prototype;
        process.stdout.write(JSON.stringify({ slow, traceparent: res.headers.get('ce-traceparent') }));
        await stop(server);
      })();`;
    const { stdout, stderr } = require('node:child_process').spawnSync(process.execPath, [...slowScopeFlag, '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    const seen = JSON.parse(stdout || 'null');
    assert.equal(seen?.slow, true, stderr);
    assert.match(seen.traceparent ?? '', new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  });
});

describe('loading', () => {
  it("require('funcrun') and eventResponse() load no SDK; the first readEvent() loads it", () => {
    const script = `
      const sdk = () => Object.keys(require.cache).some((f) => /node_modules[\\\\/]cloudevents[\\\\/]/.test(f));
      const { readEvent, eventResponse } = require(${JSON.stringify(require.resolve('../lib/index.js'))});
      const seen = [sdk()];
      eventResponse({ type: 't', source: '/s', data: { a: 1 } }, { mode: 'structured' });
      seen.push(sdk());
      readEvent(new Request('http://x/', { method: 'POST', headers: ${JSON.stringify(BINARY)} })).then((e) => {
        seen.push(sdk(), e.id);
        process.stdout.write(JSON.stringify(seen));
      });`;
    const { stdout, stderr } = require('node:child_process').spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(stdout || 'null'), [false, false, true, '1'], stderr);
  });

  it("the names eventResponse() refuses without the SDK are those of the SDK's event methods an attribute could spell", () => {
    const { CloudEvent } = require('cloudevents');
    const spelled = new Set();
    for (let proto = CloudEvent.prototype; proto !== null; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) if (/^[a-z0-9]+$/.test(name)) spelled.add(name);
    }
    for (const name of spelled) assert.throws(() => eventResponse({ type: 't', source: '/s', [name]: 'x' }), new RegExp(`'${name}' is reserved`), name);
    assert.deepEqual([...spelled].sort(), ['constructor', 'emit', 'validate']);
  });
});

describe('docs/cloudevents.md', () => {
  it("the fetch handler of 'CloudEvents in a fetch handler' reads an event and answers with one, as written", async () => {
    const page = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'docs', 'cloudevents.md'), 'utf8');
    const section = page.slice(page.indexOf('## CloudEvents in a fetch handler'), page.indexOf('## Event contracts'));
    const code = /```js\n([\s\S]*?)```/.exec(section)[1];
    const module = { exports: {} };
    new Function('require', 'module', code)((name) => (name === 'funcrun' ? require('../lib/index.js') : require(name)), module);
    const res = await module.exports.fetch(web({ headers: STRUCTURED, body: JSON.stringify(event({ data: { id: 'o-7' } })) }));
    assert.equal(res.status, 200);
    const answer = await sdkRead(res);
    assert.equal(answer.type, 'com.example.order.confirmed');
    assert.deepEqual(answer.data, { confirmed: 'o-7' });
    await assert.rejects(
      module.exports.fetch(web({ headers: clean({ ...BINARY, 'ce-id': undefined }), body: undefined })),
      (err) => err.code === 'FUNCRUN_INVALID_EVENT',
    );
  });
});
