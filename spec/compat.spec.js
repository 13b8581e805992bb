'use strict';
// Moving from faas-js-runtime: the gaps funcrun's own behaviour closes where the function contract
// is silent, and faas-js-runtime compatibility (funcrun entered under faas-js-runtime's name, or
// FUNC_COMPAT=faas-js-runtime), which follows faas-js-runtime where the contract rules otherwise.
// The CloudEvents SDK is the event client, as a function's own tests would use it.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { CloudEvent, HTTP } = require('cloudevents');
const { serve, request, project, run, runServing, freePort, waitUntilListening } = require('./helpers');
const { start } = require('../lib/index.js');

const binary = (event) => {
  const message = HTTP.binary(event);
  return { method: 'POST', headers: message.headers, body: message.body };
};
const structured = (event) => {
  const message = HTTP.structured(event);
  return { method: 'POST', headers: message.headers, body: message.body };
};
const order = new CloudEvent({ source: '/shop', type: 'order.placed', data: { lunch: 'tacos' } });

describe('funcrun by default, where the function contract is silent: as faas-js-runtime', () => {
  it('a liveness or readiness check answers with the text it returns', async (t) => {
    const liveness = () => 'I am alive';
    liveness.path = '/alive';
    const server = await serve(t, { handle: () => 'ok', liveness, readiness: async () => 'I am ready' });
    const alive = await request(server.url + '/alive');
    assert.equal(alive.status, 200);
    assert.equal(alive.text, 'I am alive');
    assert.match(alive.headers.get('content-type'), /^text\/plain/);
    assert.equal((await request(server.url + '/health/readiness')).text, 'I am ready');
  });

  it('the empty string, undefined and null answer 204 with text/plain, as faas-js-runtime does', async (t) => {
    for (const value of ['', undefined, null]) {
      const server = await serve(t, () => value);
      const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '' });
      assert.equal(res.status, 204);
      assert.equal(res.text, '');
      assert.match(res.headers.get('content-type'), /^text\/plain/);
    }
  });

  it('a declared handler runs with a frozen empty this, never the global object', async (t) => {
    const server = await serve(t, function () {
      return { global: this === globalThis || this?.global !== undefined, frozen: Object.isFrozen(this), keys: Object.keys(this ?? {}).length };
    });
    assert.deepEqual((await request(server.url)).json, { global: false, frozen: true, keys: 0 });
  });

  it("start()'s cors option allows the origins it lists, with faas-js-runtime's method list", async (t) => {
    const server = await serve(t, () => 'ok', { cors: () => ['http://example.com'] });
    const allowed = await request(server.url, { headers: { origin: 'http://example.com' } });
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'http://example.com');
    assert.equal(allowed.headers.get('access-control-allow-methods'), 'OPTIONS, GET, DELETE, POST, PUT, HEAD, PATCH');
    const other = await request(server.url, { headers: { origin: 'http://evil.example' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    // No blanket CORS without a list: funcrun's own rule.
    const plain = await serve(t, () => 'ok');
    assert.equal((await request(plain.url, { headers: { origin: 'http://evil.example' } })).headers.get('access-control-allow-origin'), null);
  });

  it('a binary CloudEvent may repeat its Content-Type as ce-datacontenttype; a different one is a 400', async (t) => {
    const server = await serve(t, (ctx, data) => ({ data, type: ctx.cloudevent.datacontenttype }));
    const headers = { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0', 'content-type': 'text/plain' };
    const same = await request(server.url, { method: 'POST', headers: { ...headers, 'ce-datacontenttype': 'Text/Plain' }, body: 'hello' });
    assert.deepEqual(same.json, { data: 'hello', type: 'text/plain' });
    const other = await request(server.url, { method: 'POST', headers: { ...headers, 'ce-datacontenttype': 'application/json' }, body: 'hello' });
    assert.equal(other.status, 400);
    assert.equal(other.json.attribute, 'datacontenttype');
    // A percent-encoded CR LF never agrees with a header value.
    const smuggled = await request(server.url, { method: 'POST', headers: { ...headers, 'ce-datacontenttype': 'text/plain%0D%0Ax-a: b' }, body: 'hello' });
    assert.equal(smuggled.status, 400);
    assert.equal(smuggled.headers.get('x-a'), null);
  });

  it("Knative's default Node.js template answers OK (its context.log.info('query', context.query) logs)", async (t) => {
    // templates/node/http/index.js of knative/func, unchanged.
    const handle = async (context, body) => {
      context.log.info('query', context.query);
      context.log.info('body', body);
      return { body: 'OK', headers: { 'content-type': 'text/plain' } };
    };
    const server = await serve(t, { handle }, { logLevel: 'info' });
    const res = await request(server.url + '/?name=tiger', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"tiger"}' });
    assert.equal(res.status, 200);
    assert.equal(res.text, 'OK');
    const logged = server.log.entries().filter((e) => e.msg === 'query' || e.msg === 'body');
    assert.equal(logged.length, 2);
  });

  it("cloudEventResponse().version(undefined) leaves specversion 1.0, as the SDK's CloudEvent does", async (t) => {
    const server = await serve(t, (ctx, data) => ctx.cloudEventResponse(data).version(undefined).type('reply').response());
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ce-specversion'), '1.0');
    assert.deepEqual(res.json, { a: 1 });
  });

  it('a returned Error, or one as the body, is answered as an error: its statusCode, its message below 500 (its JSON would be {})', async (t) => {
    for (const options of [{}, { compat: 'faas-js-runtime' }]) {
      const server = await serve(
        t,
        (context) => {
          const error = Object.assign(new Error(`no order ${context.query.id}`), context.query.id === '7' ? { statusCode: 404 } : {});
          return context.query.wrapped ? { statusCode: 418, body: Object.assign(new Error('short and stout'), { statusCode: 418 }) } : error;
        },
        options,
      );
      const missing = await request(`${server.url}/?id=7`);
      assert.equal(missing.status, 404, JSON.stringify(options));
      assert.equal(missing.json.message, 'no order 7');
      const failed = await request(`${server.url}/?id=8`);
      assert.equal(failed.status, 500);
      assert.equal(failed.json.message, 'Internal Server Error');
      const teapot = await request(`${server.url}/?wrapped=1`);
      assert.deepEqual([teapot.status, teapot.json.message], [418, 'short and stout']);
      await server.close();
      assert.equal(server.log.entries().filter((e) => e.msg === 'request failed').length, 1);
    }
  });

  it('the function contract still rules where it speaks: the data is the second argument, numbers and headers alone give 204', async (t) => {
    const server = await serve(t, {
      routes: {
        'POST /event': (ctx, data) => ({ data, event: ctx.cloudevent instanceof CloudEvent }),
        'GET /number': () => 42,
        'GET /headers': () => ({ headers: { 'x-a': 'b' }, message: 'kept out' }),
      },
    });
    assert.deepEqual((await request(server.url + '/event', binary(order))).json, { data: { lunch: 'tacos' }, event: true });
    assert.equal((await request(server.url + '/number')).status, 204);
    const headers = await request(server.url + '/headers');
    assert.equal(headers.status, 204);
    assert.equal(headers.headers.get('x-a'), 'b');
  });
});

describe('FUNC_COMPAT=faas-js-runtime', () => {
  const compat = { compat: 'faas-js-runtime' };

  it('the whole event is the second argument, and a returned event is answered in binary mode', async (t) => {
    const server = await serve(
      t,
      (ctx, event) => {
        if (!(event instanceof CloudEvent) || event !== ctx.cloudevent) throw new Error('not the event');
        return new CloudEvent({ source: 'image-func', type: 'response', datacontenttype: event.datacontenttype, data: event.data });
      },
      compat,
    );
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00]);
    const res = await fetch(server.url, binary(new CloudEvent({ source: '/s', type: 't', datacontenttype: 'image/png', data: png })));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('ce-type'), 'response');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), png);
    // A structured request: faas-js-runtime answers a returned event in binary mode all the same.
    const echo = await request(server.url, structured(order));
    assert.equal(echo.headers.get('ce-source'), 'image-func');
    assert.deepEqual(echo.json, { lunch: 'tacos' });
  });

  it("the function's answers allow every origin, errors and probes do not, and OPTIONS is answered without the function", async (t) => {
    let calls = 0;
    const server = await serve(
      t,
      (ctx) => {
        calls++;
        if (ctx.query.fail !== undefined) throw Object.assign(new Error('no'), { code: 400 });
        return '';
      },
      compat,
    );
    const res = await request(server.url);
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(res.headers.get('access-control-allow-methods'), 'OPTIONS, GET, DELETE, POST, PUT, HEAD, PATCH');
    const options = await request(server.url, { method: 'OPTIONS' });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('access-control-allow-headers'), '*');
    assert.equal(calls, 1);
    // As faas-js-runtime: its error answers, probes and fastify's own 400s carry no CORS headers.
    for (const [path, init, status] of [
      ['/?fail', undefined, 400],
      ['/health/readiness', undefined, 200],
      ['/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' }, 400],
    ]) {
      const answer = await request(server.url + path, init);
      assert.equal(answer.status, status, path);
      assert.equal(answer.headers.get('access-control-allow-origin'), null, path);
    }
  });

  it('a thrown error is answered as text: a 4xx with its message, a 5xx generic (the message would leak)', async (t) => {
    const server = await serve(
      t,
      {
        routes: {
          'GET /legal': () => {
            throw Object.assign(new Error('Unavailable for Legal Reasons'), { code: 451 });
          },
          'GET /boom': () => {
            throw new Error('password=hunter2 at db.internal:5432');
          },
          'GET /forbidden': () => {
            throw Object.assign(new Error('forbidden'), { statusCode: 403 });
          },
          'GET /login': () => {
            throw Object.assign(new Error('log in first'), { code: 401, headers: { 'www-authenticate': 'Bearer' } });
          },
        },
      },
      compat,
    );
    const legal = await request(server.url + '/legal');
    assert.equal(legal.status, 451);
    assert.match(legal.headers.get('content-type'), /^text\/plain/);
    assert.equal(legal.text, 'Unavailable for Legal Reasons');
    const boom = await request(server.url + '/boom');
    assert.equal(boom.status, 500);
    assert.equal(boom.text, 'Internal Server Error');
    assert.doesNotMatch(boom.text, /hunter2|db\.internal/);
    // As faas-js-runtime reads a thrown error: the status from `code` only, none of its headers.
    const forbidden = await request(server.url + '/forbidden');
    assert.deepEqual([forbidden.status, forbidden.text], [500, 'Internal Server Error']);
    const login = await request(server.url + '/login');
    assert.deepEqual([login.status, login.text, login.headers.get('www-authenticate')], [401, 'log in first', null]);
    // funcrun's own errors (no route, malformed data) stay JSON, as fastify's are in faas-js-runtime.
    const malformed = await request(server.url + '/legal', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    assert.match(malformed.headers.get('content-type'), /^application\/json/);
  });

  it("a thrown error's code is read as fastify's reply.code() reads a status: numeric text, a fraction cut, any final status", async (t) => {
    const codes = { text: '404', fraction: 400.5, redirect: 302, ok: 200, word: 'ENOENT', informational: 100 };
    const server = await serve(
      t,
      (context) => {
        throw Object.assign(new Error(`thrown ${context.query.kind}`), { code: codes[context.query.kind] });
      },
      compat,
    );
    const answers = {};
    for (const kind of Object.keys(codes)) {
      const res = await request(`${server.url}/?kind=${kind}`, { redirect: 'manual' });
      answers[kind] = [res.status, res.text];
    }
    assert.deepEqual(answers, {
      text: [404, 'thrown text'],
      fraction: [400, 'thrown fraction'],
      redirect: [302, 'thrown redirect'],
      ok: [200, 'thrown ok'],
      word: [500, 'Internal Server Error'],
      informational: [500, 'Internal Server Error'],
    });
  });

  it('{ statusCode, headers, body } is read as faas-js-runtime reads it: numeric text, a falsy status as none, headers that are no object ignored, no body the whole object', async (t) => {
    const returns = {
      'status-text': { statusCode: '201', body: 'made' },
      'status-fraction': { statusCode: 201.5, body: 'made' },
      'status-zero': { statusCode: 0, body: 'zero' },
      'status-word': { statusCode: 'abc', body: 'never' },
      'headers-null': { headers: null, body: 'y' },
      'headers-text': { headers: 'x', body: 'y' },
      'body-undefined': { body: undefined, a: 1 },
    };
    const server = await serve(t, (context) => returns[context.query.kind], compat);
    const answers = {};
    for (const kind of Object.keys(returns)) {
      const res = await request(`${server.url}/?kind=${kind}`);
      answers[kind] = [res.status, res.text];
    }
    assert.deepEqual(answers, {
      'status-text': [201, 'made'],
      'status-fraction': [201, 'made'],
      'status-zero': [200, 'zero'],
      'status-word': [500, 'Internal Server Error'],
      'headers-null': [200, 'y'],
      'headers-text': [200, 'y'],
      'body-undefined': [200, '{"a":1}'],
    });
  });

  it('context.contentType is the Content-Type header as sent (funcrun: the parsed media type)', async (t) => {
    const seen = async (options) => {
      const server = await serve(t, (ctx) => ({ type: ctx.contentType }), options);
      return (await request(server.url, { method: 'POST', headers: { 'content-type': 'Application/JSON; charset=utf-8' }, body: '{}' })).json.type;
    };
    assert.equal(await seen(compat), 'Application/JSON; charset=utf-8');
    assert.equal(await seen({}), 'application/json');
  });

  it('headers without a body send the whole object as JSON; numbers are empty answers', async (t) => {
    const server = await serve(
      t,
      {
        routes: {
          'GET /headers': () => ({ headers: { 'X-announce-action': 'Saying hello' }, message: 'Well hello there' }),
          'GET /number': () => 42,
          'GET /zero': () => 0,
        },
      },
      compat,
    );
    const headers = await request(server.url + '/headers');
    assert.equal(headers.status, 200);
    assert.equal(headers.headers.get('x-announce-action'), 'Saying hello');
    assert.equal(headers.json.message, 'Well hello there');
    const number = await request(server.url + '/number');
    assert.deepEqual([number.status, number.text, number.headers.get('content-type')], [200, '', 'application/json; charset=utf-8']);
    assert.equal((await request(server.url + '/zero')).status, 204);
  });

  it('an event returned to a plain HTTP request is answered as its JSON, not as an event', async (t) => {
    const server = await serve(
      t,
      () => new CloudEvent({ id: 'a1', source: '/shop', type: 'order.accepted', time: '2024-05-06T07:08:09.000Z', data: { ok: true } }),
      compat,
    );
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('ce-id'), null);
    assert.deepEqual(res.json, { id: 'a1', source: '/shop', type: 'order.accepted', specversion: '1.0', time: '2024-05-06T07:08:09.000Z', data: { ok: true } });
    // To an event, an event (binary mode).
    assert.equal((await request(server.url, binary(order))).headers.get('ce-id'), 'a1');
  });

  it('bodies are parsed where fastify parses them: JSON, text/plain and forms; others arrive as bytes; an empty JSON body is a 400', async (t) => {
    const server = await serve(t, (ctx, data) => ({ bytes: Buffer.isBuffer(data), data: Buffer.isBuffer(data) ? data.toString() : data }), compat);
    const post = (type, body) => request(server.url, { method: 'POST', headers: { 'content-type': type }, body });
    assert.deepEqual((await post('application/json; charset=utf-8', '{"a":1}')).json, { bytes: false, data: { a: 1 } });
    assert.deepEqual((await post('text/plain', 'hi')).json, { bytes: false, data: 'hi' });
    assert.deepEqual((await post('application/x-www-form-urlencoded', 'a=1')).json, { bytes: false, data: { a: '1' } });
    for (const [type, body] of [
      ['application/merge-patch+json', '{"a":1}'],
      ['text/csv', 'a,b'],
      ['application/xml', '<a/>'],
    ]) {
      assert.deepEqual((await post(type, body)).json, { bytes: true, data: body }, type);
    }
    const empty = await post('application/json', '');
    assert.equal(empty.status, 400);
    assert.deepEqual(empty.json, {
      statusCode: 400,
      code: 'FST_ERR_CTP_EMPTY_JSON_BODY',
      error: 'Bad Request',
      message: "Body cannot be empty when content-type is set to 'application/json'",
    });
  });

  it("handle answers / only, to GET, HEAD and POST: another path or method is fastify's 404 (OPTIONS too); routes are still served", async (t) => {
    let calls = 0;
    const server = await serve(t, { routes: { 'PUT /orders': () => 'stored' }, handle: () => (calls++, 'ok') }, compat);
    for (const method of ['GET', 'HEAD', 'POST']) assert.equal((await request(server.url + '/?a=1', { method })).status, 200, method);
    assert.equal(calls, 3);
    for (const [method, target] of [
      ['PUT', '/'],
      ['DELETE', '/'],
      ['PATCH', '/'],
      ['GET', '/other?x=1'],
      ['POST', '/other'],
      ['OPTIONS', '/other'],
    ]) {
      const res = await request(server.url + target, { method });
      assert.equal(res.status, 404, `${method} ${target}`);
      assert.deepEqual(res.json, { statusCode: 404, error: 'Not Found', message: `Route ${method}:${target} not found` });
      assert.equal(res.headers.get('access-control-allow-origin'), null);
    }
    assert.equal(calls, 3);
    assert.equal((await request(server.url + '/', { method: 'OPTIONS' })).status, 204);
    assert.equal((await request(server.url + '/orders', { method: 'PUT' })).text, 'stored');
  });

  it("fastify's 404 quotes the URL to the client, as faas-js-runtime does, but the log leaves out its query's values", async (t) => {
    const secret = 'tok-4f9a1c';
    const server = await serve(t, () => 'ok', { ...compat, logLevel: 'trace' });
    const long = `/other?access_token=${secret}&pad=${'x'.repeat(2000)}`;
    for (const target of [`/other?access_token=${secret}`, long]) {
      const res = await request(server.url + target);
      assert.equal(res.status, 404);
    }
    const rejected = server.log.entries().filter((e) => e.msg === 'request rejected');
    assert.equal(rejected.length, 2);
    assert.equal(rejected[0].message, 'Route GET:/other?access_token=… not found');
    assert.ok(!server.log.text().includes(secret), server.log.text());
  });

  it('a replayed duplicate allows every origin, as the first answer did', async (t) => {
    const server = await serve(t, () => ({ ok: true }), { ...compat, idempotency: true });
    const { headers, body } = HTTP.binary(new CloudEvent({ id: 'once', type: 'order.placed', source: '/spec', data: {} }));
    const answers = [];
    for (let i = 0; i < 2; i++) answers.push(await request(server.url, { method: 'POST', headers: { ...headers, origin: 'https://app.example' }, body }));
    assert.deepEqual(
      answers.map((res) => [res.status, res.headers.get('access-control-allow-origin')]),
      [
        [200, '*'],
        [200, '*'],
      ],
    );
    assert.equal(answers[1].text, answers[0].text);
  });

  it('a request is a binary CloudEvent by its ce-id, as the SDK tells: without one it is plain HTTP', async (t) => {
    const server = await serve(t, (ctx, data) => ({ event: ctx.cloudevent !== undefined, data }), compat);
    const headers = { 'ce-source': '/shop', 'ce-type': 'order.placed', 'ce-specversion': '1.0', 'content-type': 'application/json' };
    const plain = await request(server.url, { method: 'POST', headers, body: '{"lunch":"tacos"}' });
    assert.deepEqual([plain.status, plain.json], [200, { event: false, data: { lunch: 'tacos' } }]);
    const event = await request(server.url, { method: 'POST', headers: { ...headers, 'ce-id': '1' }, body: '{"lunch":"tacos"}' });
    assert.equal(event.json.event, true);
    assert.equal(event.json.data.data.lunch, 'tacos');
  });

  it("an event's data_base64 arrives as a Uint8Array of its bytes, as the SDK decodes it", async (t) => {
    const server = await serve(t, (ctx, event) => ({ uint8: Object.getPrototypeOf(event.data) === Uint8Array.prototype, bytes: [...event.data] }), compat);
    const body = JSON.stringify({
      specversion: '1.0',
      id: '1',
      source: '/s',
      type: 't',
      datacontenttype: 'image/png',
      data_base64: Buffer.from([0x89, 0, 0xff]).toString('base64'),
    });
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body });
    assert.deepEqual(res.json, { uint8: true, bytes: [0x89, 0, 0xff] });
  });

  it("an event's data is read as faas-js-runtime reads it: binary XML, +json and CSV as bytes, structured XML as its text, JSON parsed", async (t) => {
    const kind = (data) => (Buffer.isBuffer(data) ? `bytes:${data.toString()}` : typeof data === 'string' ? `text:${data}` : `value:${JSON.stringify(data)}`);
    const server = await serve(t, (ctx, event) => ({ data: kind(event.data) }), compat);
    const ce = { 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-specversion': '1.0' };
    const binary = async (type, body) => (await request(server.url, { method: 'POST', headers: { ...ce, 'content-type': type }, body })).json.data;
    assert.equal(await binary('application/xml', '<order id="7"/>'), 'bytes:<order id="7"/>');
    assert.equal(await binary('application/ld+json', '{"a":1}'), 'bytes:{"a":1}');
    assert.equal(await binary('text/csv', 'id\n7\n'), 'bytes:id\n7\n');
    assert.equal(await binary('text/plain', 'hi'), 'text:hi');
    assert.equal(await binary('application/json', '{"a":1}'), 'value:{"a":1}');
    const structured = JSON.stringify({ specversion: '1.0', id: '1', source: '/s', type: 't', datacontenttype: 'application/xml', data: '<order id="7"/>' });
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: structured });
    assert.equal(res.json.data, 'text:<order id="7"/>');
  });

  it('answers are JSON unless a string is returned directly or the function names a type: bytes, streams and any { body }; a null or number body is JSON', async (t) => {
    const { Readable } = require('node:stream');
    const returns = {
      string: () => 'hi',
      buffer: () => Buffer.from([1, 2, 255]),
      uint8array: () => new Uint8Array([1, 2, 255]),
      stream: () => Readable.from(['a', 'b']),
      'body-string': () => ({ body: 'hi' }),
      'body-buffer': () => ({ body: Buffer.from('hi') }),
      'body-number': () => ({ body: 42 }),
      'body-true': () => ({ body: true }),
      'body-null': () => ({ statusCode: 200, body: null }),
      'body-typed': () => ({ headers: { 'Content-Type': 'text/html' }, body: '<b>hi</b>' }),
    };
    const server = await serve(t, (ctx) => returns[ctx.query.kind](), compat);
    const answers = {};
    for (const kind of Object.keys(returns)) {
      const res = await request(`${server.url}/?kind=${kind}`);
      answers[kind] = [res.status, res.headers.get('content-type'), res.text];
    }
    const JSON_TYPE = 'application/json; charset=utf-8';
    assert.deepEqual(answers, {
      string: [200, 'text/plain; charset=utf-8', 'hi'],
      buffer: [200, JSON_TYPE, '\x01\x02\ufffd'],
      uint8array: [200, JSON_TYPE, '\x01\x02\ufffd'],
      stream: [200, JSON_TYPE, 'ab'],
      'body-string': [200, JSON_TYPE, 'hi'],
      'body-buffer': [200, JSON_TYPE, 'hi'],
      'body-number': [200, JSON_TYPE, '42'],
      'body-true': [200, JSON_TYPE, 'true'],
      'body-null': [200, JSON_TYPE, 'null'],
      'body-typed': [200, 'text/html', '<b>hi</b>'],
    });
  });

  it("a returned event is written as the SDK's HTTP.binary writes it: application/json; charset=utf-8 without a datacontenttype, string data as it is; the chain sets no datacontenttype", async (t) => {
    const source = '/shop';
    const returns = {
      object: () => new CloudEvent({ source, type: 'object', data: { ok: true } }),
      text: () => new CloudEvent({ source, type: 'text', data: 'plain words' }),
      bytes: () => new CloudEvent({ source, type: 'bytes', data: Buffer.from([1, 2, 3]) }),
      none: () => new CloudEvent({ source, type: 'none' }),
      typed: () => new CloudEvent({ source, type: 'typed', datacontenttype: 'text/csv', data: 'a,b' }),
      chain: (ctx) => ctx.cloudEventResponse({ ok: true }).source(source).type('chain').response(),
    };
    const server = await serve(t, (ctx, event) => returns[event.type](ctx), compat);
    const answers = {};
    for (const type of Object.keys(returns)) {
      const res = await fetch(server.url, binary(new CloudEvent({ source, type, data: {} })));
      answers[type] = [res.headers.get('ce-type'), res.headers.get('content-type'), Buffer.from(await res.arrayBuffer()).toString('latin1')];
    }
    const JSON_TYPE = 'application/json; charset=utf-8';
    assert.deepEqual(answers, {
      object: ['object', JSON_TYPE, '{"ok":true}'],
      text: ['text', JSON_TYPE, 'plain words'],
      bytes: ['bytes', JSON_TYPE, '\x01\x02\x03'],
      none: ['none', JSON_TYPE, ''],
      typed: ['typed', 'text/csv', 'a,b'],
      chain: ['chain', JSON_TYPE, '{"ok":true}'],
    });
    // The chain's event, as the handler holds it.
    const chained = await serve(t, (ctx) => ({ datacontenttype: ctx.cloudEventResponse({ ok: true }).response().datacontenttype ?? null }), compat);
    assert.deepEqual((await request(chained.url)).json, { datacontenttype: null });
  });

  it('metric labels are printed as faas-js-runtime prints them', async (t) => {
    const saved = process.env.FAAS_ID;
    process.env.FAAS_ID = 'test';
    let server;
    try {
      server = await serve(t, (c) => c.query.x ?? 'ok', compat);
    } finally {
      if (saved === undefined) delete process.env.FAAS_ID;
      else process.env.FAAS_ID = saved;
    }
    await request(server.url);
    const text = (await request(server.url + '/metrics')).text;
    assert.match(
      text,
      /^faas_invocations\{faas_name="anonymous",faas_id="test",faas_instance="undefined",faas_version="undefined",faas_runtime="Node.js"\} 1$/m,
    );
  });

  it('is switched on by FUNC_COMPAT, by --compat and by func.yaml run.envs; an unknown value stops the start', async (t) => {
    const folder = project({ 'index.js': 'module.exports = { handle: (ctx, event) => ({ isEvent: event === ctx.cloudevent }) };' });
    const yamlFolder = project({
      'index.js': 'module.exports = { handle: (ctx, event) => ({ isEvent: event === ctx.cloudevent }) };',
      'func.yaml': 'name: moved\nrun:\n  envs:\n    - name: FUNC_COMPAT\n      value: faas-js-runtime\n',
    });
    const runs = [
      ['--compat', [folder, '--compat', 'faas-js-runtime'], {}],
      ['FUNC_COMPAT', [folder], { env: { FUNC_COMPAT: 'faas-js-runtime' } }],
      ['func.yaml', [yamlFolder], {}],
      ['default', [folder], {}],
    ];
    for (const [how, args, options] of runs) {
      const proc = await runServing(args, options);
      t.after(() => proc.stop());
      const res = await request(proc.url, binary(order));
      assert.deepEqual(res.json, { isEvent: how !== 'default' }, how);
    }
    await assert.rejects(
      start(() => 'x', { port: 0, host: '127.0.0.1', compat: 'fastify' }),
      /invalid compat 'fastify'/,
    );
    const saved = process.env.FUNC_COMPAT;
    process.env.FUNC_COMPAT = 'faas-js-runtim';
    try {
      await assert.rejects(
        start(() => 'x', { port: 0, host: '127.0.0.1' }),
        /invalid FUNC_COMPAT/,
      );
    } finally {
      if (saved === undefined) delete process.env.FUNC_COMPAT;
      else process.env.FUNC_COMPAT = saved;
    }
  });
});

describe('compatibility under hostile input', () => {
  it('rawBody is made once per request: a 1 MB batch with includeRaw stays linear', async (t) => {
    const server = await serve(t, () => undefined, { includeRaw: true, bodyLimit: '2mb' });
    const event = JSON.stringify({ id: '1', source: '/s', type: 't', specversion: '1.0' });
    const body =
      '[' +
      Array(Math.floor(1_000_000 / (event.length + 1)))
        .fill(event)
        .join(',') +
      ']';
    const started = performance.now();
    const res = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body });
    const ms = performance.now() - started;
    assert.equal(res.status, 204);
    // About 0.3 s here; decoding the body again for each of the ~19,000 events took 17 s.
    assert.ok(ms < 5000, `${Math.round(ms)} ms`);
  });

  it('compat: an echoed structured event binary mode cannot carry is answered structured, never a 500 or a huge header block', async (t) => {
    const server = await serve(t, (ctx, event) => event, { compat: 'faas-js-runtime' });
    const post = (event) => request(server.url, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
    const base = { id: '1', source: '/s', type: 't', specversion: '1.0', data: { a: 1 } };
    const crlf = await post({ ...base, datacontenttype: 'text/plain\r\nx-injected: 1' });
    assert.equal(crlf.status, 200);
    assert.equal(crlf.headers.get('x-injected'), null);
    assert.match(crlf.headers.get('content-type'), /^application\/cloudevents\+json/);
    const many = { ...base };
    for (let i = 0; i < 5000; i++) many[`ext${i}`] = 'x'.repeat(40);
    const big = await post(many);
    assert.equal(big.status, 200);
    assert.match(big.headers.get('content-type'), /^application\/cloudevents\+json/);
    assert.equal(big.json.ext4999, 'x'.repeat(40));
    // Short enough as it is, too long once percent-encoded (six characters for each é).
    const wide = await post({ ...base, note: 'é'.repeat(5000) });
    assert.equal(wide.status, 200);
    assert.match(wide.headers.get('content-type'), /^application\/cloudevents\+json/);
    assert.equal(wide.json.note, 'é'.repeat(5000));
    // An ordinary one still goes binary, as faas-js-runtime answers.
    const plain = await post(base);
    assert.equal(plain.headers.get('ce-id'), '1');
    assert.deepEqual(plain.json, { a: 1 });
  });

  it('a copy of the context holds data only: no logger internals, no request object', async (t) => {
    const server = await serve(t, (ctx) => ({ ...ctx }));
    const res = await request(server.url + '/?a=1');
    assert.equal(res.status, 200);
    assert.equal(res.json.log, undefined);
    assert.equal(res.json.req, undefined);
    assert.equal(res.json.a, '1');
    assert.doesNotMatch(res.text, /hostname|"pid"/);
  });
});

describe("the application's own copy of the CloudEvents SDK", () => {
  it('events are made with the copy the function imports, so instanceof holds', async (t) => {
    // A second, separate copy of the SDK in the function's own node_modules, as npm leaves one
    // when the function pins another version than funcrun's. Its own dependencies resolve
    // through NODE_PATH to funcrun's.
    const folder = project({
      'package.json': '{"name":"app","private":true,"main":"index.js"}',
      'index.js': `const { CloudEvent } = require('cloudevents');
module.exports = { handle: (ctx, data) => ({ data, mine: ctx.cloudevent instanceof CloudEvent, copy: require.resolve('cloudevents').startsWith(__dirname) }) };`,
    });
    fs.cpSync(path.dirname(require.resolve('cloudevents/package.json')), path.join(folder, 'node_modules', 'cloudevents'), { recursive: true });
    const proc = await runServing([folder], { env: { NODE_PATH: path.join(__dirname, '..', 'node_modules') } });
    t.after(() => proc.stop());
    assert.deepEqual((await request(proc.url, binary(order))).json, { data: { lunch: 'tacos' }, mine: true, copy: true });
  });
});

describe('funcrun entered as faas-js-runtime follows faas-js-runtime', () => {
  const ROOT = path.join(__dirname, '..');
  const made = [];
  after(() => made.forEach((app) => fs.rmSync(app, { recursive: true, force: true })));
  // A copy of the package as the one-line move installs it: node_modules/faas-js-runtime (its
  // package.json and lib/), in a folder inside the checkout so that its own dependencies resolve.
  function installedAs(name) {
    fs.mkdirSync(path.join(ROOT, '.tmp'), { recursive: true });
    const app = fs.mkdtempSync(path.join(ROOT, '.tmp', 'moved-'));
    made.push(app);
    const pkg = path.join(app, 'node_modules', name);
    fs.mkdirSync(path.join(pkg, 'lib'), { recursive: true });
    fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(pkg, 'package.json'));
    fs.mkdirSync(path.join(pkg, 'bin'));
    fs.copyFileSync(path.join(ROOT, 'bin', 'cli.js'), path.join(pkg, 'bin', 'cli.js'));
    fs.cpSync(path.join(ROOT, 'lib'), path.join(pkg, 'lib'), {
      recursive: true,
      filter: (from) => !from.includes(`${path.sep}.cache`) && !from.endsWith('.d.ts'),
    });
    fs.mkdirSync(path.join(app, 'node_modules', '.bin'));
    fs.symlinkSync(`../${name}/lib/serve.js`, path.join(app, 'node_modules', '.bin', 'faas-js-runtime'));
    fs.symlinkSync(`../${name}/lib/tools/cli.js`, path.join(app, 'node_modules', '.bin', 'funcrun'));
    // A CloudEvents function written for faas-js-runtime: the event is the second argument.
    fs.writeFileSync(
      path.join(app, 'index.js'),
      `module.exports = { handle: (context, event) => { context.log.info('handled'); return { type: event?.type ?? null, data: event?.data ?? null }; } };`,
    );
    return app;
  }
  let moved;
  const app = () => (moved ??= installedAs('faas-js-runtime'));

  /** Runs `script` (a path) with args in the moved app, killed when the test ends; waits for its port. */
  async function runApp(t, script, args, env = {}) {
    const port = await freePort();
    const proc = run([...args], { script, cwd: app(), env: { PORT: String(port), FUNC_HOST: '127.0.0.1', ...env } });
    t.after(() => proc.child.kill('SIGKILL'));
    await waitUntilListening(port, proc);
    return { ...proc, url: `http://127.0.0.1:${port}` };
  }

  const stopped = async (proc) => {
    proc.child.kill('SIGTERM');
    return proc.exited;
  };

  it("its faas-js-runtime command (npm start's): the whole event, faas-js-runtime's log level, one warning at start", async (t) => {
    const proc = await runApp(t, path.join(app(), 'node_modules', '.bin', 'faas-js-runtime'), ['./index.js']);
    assert.deepEqual((await request(proc.url, binary(order))).json, { type: 'order.placed', data: { lunch: 'tacos' } });
    await stopped(proc);
    const lines = proc.lines();
    const notices = lines.filter((l) => l.compat === 'faas-js-runtime');
    assert.equal(notices.length, 1, proc.out.stdout);
    assert.equal(notices[0].level, 40);
    assert.match(notices[0].msg, /^faas-js-runtime compatibility: .*FUNC_COMPAT=none for funcrun's own behaviour$/);
    // faas-js-runtime's default level is warn: the function's info line is dropped, as there.
    assert.ok(!lines.some((l) => l.msg === 'handled'), proc.out.stdout);
  });

  it('require("faas-js-runtime") in a test: start() follows faas-js-runtime too', async (t) => {
    const script = path.join(app(), 'start.js');
    // As a test file does: a server per test, here two.
    fs.writeFileSync(
      script,
      "const { start } = require('faas-js-runtime');\nstart(require('./index.js'), { logLevel: 'info' }).then(() => start(require('./index.js'), { logLevel: 'info', port: 0 }));",
    );
    const proc = await runApp(t, script, []);
    assert.deepEqual((await request(proc.url, binary(order))).json, { type: 'order.placed', data: { lunch: 'tacos' } });
    // With faas-js-runtime's access line, as fastify logs one at info.
    await proc.waitFor((l) => l.msg === 'request completed' && l.statusCode === 200, 'the access line');
    await proc.waitFor(() => proc.lines().filter((l) => l.msg.startsWith('listening')).length === 2, 'the second server');
    // Said once per process, not once per server.
    assert.equal(proc.lines().filter((l) => l.compat === 'faas-js-runtime').length, 1, proc.out.stdout);
  });

  it("faas-js-runtime's bin/cli.js, which Knative's templates run by path (npm run debug), serves it the same way", async (t) => {
    const proc = await runApp(t, path.join(app(), 'node_modules', 'faas-js-runtime', 'bin', 'cli.js'), ['./index.js']);
    assert.deepEqual((await request(proc.url, binary(order))).json, { type: 'order.placed', data: { lunch: 'tacos' } });
    assert.equal((await stopped(proc)).code, 0);
    assert.equal(proc.lines().filter((l) => l.compat === 'faas-js-runtime').length, 1, proc.out.stdout);
  });

  it('the funcrun command of the package installed as faas-js-runtime (the image) follows it as well', async (t) => {
    const proc = await runApp(t, path.join(app(), 'node_modules', '.bin', 'funcrun'), ['serve', '.']);
    assert.deepEqual((await request(proc.url, binary(order))).json, { type: 'order.placed', data: { lunch: 'tacos' } });
    await stopped(proc);
  });

  it("FUNC_COMPAT=none chooses funcrun's own behaviour: the data is the second argument, no warning", async (t) => {
    const proc = await runApp(t, path.join(app(), 'node_modules', '.bin', 'faas-js-runtime'), ['./index.js'], { FUNC_COMPAT: 'none' });
    assert.deepEqual((await request(proc.url, binary(order))).json, { type: null, data: null });
    await stopped(proc);
    assert.ok(!proc.lines().some((l) => l.compat !== undefined), proc.out.stdout);
    assert.ok(
      proc.lines().some((l) => l.msg === 'handled'),
      'the default level is info',
    );
  });

  it('installed as funcrun, only the faas-js-runtime command turns it on', async (t) => {
    const asFuncrun = installedAs('funcrun');
    const funcrun = await runApp(t, path.join(asFuncrun, 'node_modules', '.bin', 'funcrun'), ['serve', asFuncrun]);
    assert.deepEqual((await request(funcrun.url, binary(order))).json, { type: null, data: null });
    await stopped(funcrun);
    const faas = await runApp(t, path.join(asFuncrun, 'node_modules', '.bin', 'faas-js-runtime'), [path.join(asFuncrun, 'index.js')]);
    assert.deepEqual((await request(faas.url, binary(order))).json, { type: 'order.placed', data: { lunch: 'tacos' } });
    await stopped(faas);
  });
});
