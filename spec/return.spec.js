'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { serve, request } = require('./helpers');

/** Serves a function returning `value` (or `value` itself, a function) for the test `t`, and requests it once. */
async function returning(t, value, init) {
  const fn = typeof value === 'function' ? value : () => value;
  const { url } = await serve(t, fn);
  return request(url, init);
}

describe('return rules', () => {
  it('nothing returned gives 204 with no body', async (t) => {
    const res = await returning(t, undefined);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
  });

  it('a string gives 200 text/plain', async (t) => {
    const res = await returning(t, 'hello');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(res.text, 'hello');
  });

  for (const value of [42, 0, true, false]) {
    it(`a ${typeof value} returned directly (${value}) gives 204 with an empty body`, async (t) => {
      const res = await returning(t, value);
      assert.equal(res.status, 204);
      assert.equal(res.text, '');
    });
  }

  it('a Buffer gives 200 application/octet-stream with the exact bytes', async (t) => {
    const bytes = Buffer.from([0, 1, 2, 255, 254]);
    const { url } = await serve(t, () => bytes);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
  });

  // Bytes in any view, and the web's body objects, are sent as the data they hold, never as `{}` or
  // a typed array's indexes as JSON (faas-js-runtime, whose labels the compatibility mode keeps).
  const half = new Float64Array([1.5]);
  const BODIES = [
    ['an ArrayBuffer', () => new Uint8Array([104, 105]).buffer, 'hi', 'application/octet-stream'],
    ['a Float64Array', () => half, Buffer.from(half.buffer), 'application/octet-stream'],
    ['a DataView over part of its buffer', () => new DataView(new Uint8Array([0, 104, 105, 0]).buffer, 1, 2), 'hi', 'application/octet-stream'],
    ['a Blob', () => new Blob(['hi'], { type: 'text/plain' }), 'hi', 'text/plain'],
    ['URLSearchParams', () => new URLSearchParams({ a: '1', b: 'x y' }), 'a=1&b=x+y', 'application/x-www-form-urlencoded;charset=UTF-8'],
  ];
  for (const compat of [false, true]) {
    for (const [what, make, sent, type] of BODIES) {
      for (const shape of ['returned', 'as the body of { statusCode, body }']) {
        it(`${what} ${shape} is sent as its bytes${compat ? ' (faas-js-runtime compatibility)' : ''}`, async (t) => {
          const { url } = await serve(
            t,
            () => (shape === 'returned' ? make() : { statusCode: 201, body: make() }),
            compat ? { compat: 'faas-js-runtime' } : {},
          );
          const res = await fetch(url);
          assert.equal(res.status, shape === 'returned' ? 200 : 201);
          assert.deepEqual(Buffer.from(await res.arrayBuffer()), Buffer.from(sent));
          // faas-js-runtime labels bytes, and any body of { statusCode, body }, with its default type.
          const labelledJson = compat && (type === 'application/octet-stream' || shape !== 'returned');
          assert.equal(res.headers.get('content-type'), labelledJson ? 'application/json; charset=utf-8' : type);
        });
      }
    }
  }

  it('FormData is sent as the platform writes it: multipart/form-data with its boundary', async (t) => {
    const { url } = await serve(t, () => {
      const form = new FormData();
      form.append('a', '1');
      return form;
    });
    const res = await fetch(url);
    assert.match(res.headers.get('content-type'), /^multipart\/form-data; boundary=/);
    assert.equal((await res.formData()).get('a'), '1');
  });

  it('an object or array without body, headers or statusCode gives 200 JSON', async (t) => {
    const object = await returning(t, { a: 1, nested: { b: [1, 2] } });
    assert.equal(object.status, 200);
    assert.equal(object.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(object.json, { a: 1, nested: { b: [1, 2] } });
    const array = await returning(t, [1, 'two']);
    assert.deepEqual(array.json, [1, 'two']);
  });

  it('statusCode, headers and body are sent as given', async (t) => {
    const res = await returning(t, { statusCode: 201, headers: { 'X-Thing': 'yes' }, body: { id: 7 } });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-thing'), 'yes');
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(res.json, { id: 7 });
  });

  it('headers without a body give 204 and the headers', async (t) => {
    const res = await returning(t, { headers: { 'x-only': 'header' } });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('x-only'), 'header');
    assert.equal(res.text, '');
  });

  it('a number or boolean body is sent as its text', async (t) => {
    const number = await returning(t, { body: 42 });
    assert.equal(number.status, 200);
    assert.equal(number.text, '42');
    const boolean = await returning(t, { body: false });
    assert.equal(boolean.text, 'false');
  });

  it("a user's content-type wins over the one the body would get", async (t) => {
    const res = await returning(t, { headers: { 'Content-Type': 'application/vnd.thing+json' }, body: { a: 1 } });
    assert.equal(res.headers.get('content-type'), 'application/vnd.thing+json');
    assert.deepEqual(res.json, { a: 1 });
  });

  it('statusCode without headers or body gives that status with the object as JSON, as faas-js-runtime does', async (t) => {
    const res = await returning(t, { statusCode: 451, statusMessage: 'Unavailable For Legal Reasons' });
    assert.equal(res.status, 451);
    assert.match(res.headers.get('content-type'), /^application\/json/);
    assert.deepEqual(res.json, { statusCode: 451, statusMessage: 'Unavailable For Legal Reasons' });
    const empty = await returning(t, { statusCode: 202, headers: { 'x-a': 'b' } });
    assert.equal(empty.status, 202);
    assert.equal(empty.text, '');
  });

  it('a promise is awaited', async (t) => {
    const res = await returning(t, async () => 'later');
    assert.equal(res.text, 'later');
  });

  it('a thenable is awaited, a function with a then method as much as an object, as await does', async (t) => {
    const object = { then: (resolve) => resolve('from an object') };
    assert.equal((await returning(t, () => object)).text, 'from an object');
    const callable = Object.assign(() => 'not this', { then: (resolve) => resolve('from a function') });
    assert.equal((await returning(t, () => callable)).text, 'from a function');
  });

  it("a value is answered after the function's own microtasks, as faas-js-runtime, which awaits it, does", async (t) => {
    const res = await returning(t, () => {
      const value = { step: 'returned' };
      queueMicrotask(() => (value.step = 'settled'));
      return value;
    });
    assert.deepEqual(res.json, { step: 'settled' });
  });

  it('HEAD gets the headers of GET and no body', async (t) => {
    const res = await returning(t, 'a body of some length', { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), '21');
    assert.equal(res.text, '');
  });

  it('an invalid statusCode is a 500 that names nothing internal', async (t) => {
    const res = await returning(t, { statusCode: 'teapot', body: 'x' });
    assert.equal(res.status, 500);
    assert.deepEqual(res.json, { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
  });

  it('a readable stream is streamed as application/octet-stream', async (t) => {
    const { Readable } = require('node:stream');
    const res = await returning(t, () => Readable.from([Buffer.from('chunk one, '), Buffer.from('chunk two')]));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.equal(res.text, 'chunk one, chunk two');
  });

  it('an XML Document (such as the one an XML request arrives as) is sent as application/xml', async (t) => {
    const res = await returning(
      t,
      (ctx, doc) => {
        doc.documentElement.setAttribute('seen', 'yes');
        return doc;
      },
      { method: 'POST', headers: { 'content-type': 'application/xml' }, body: '<order id="1"/>' },
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
    assert.match(res.text, /<order id="1" seen="yes"\/>/);
  });

  it('null gives 204 like nothing', async (t) => {
    assert.equal((await returning(t, null)).status, 204);
  });

  it('a value JSON cannot hold is a 500, and the next request is served', async (t) => {
    const circular = {};
    circular.self = circular;
    const { url } = await serve(t, (ctx) => (ctx.query.ok ? 'ok' : circular));
    assert.equal((await request(url)).status, 500);
    assert.equal((await request(url + '/?ok=1')).text, 'ok');
  });
});

describe('a structured response whose body is a web ReadableStream', () => {
  const encoder = new TextEncoder();
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  /** A stream that gives `first`, then `last` once `opened` resolves; its cancel() resolves `cancelled`. */
  function twoChunks(first, last, opened, cancelled = () => {}) {
    return new ReadableStream({
      async start(controller) {
        controller.enqueue(encoder.encode(first));
        await opened;
        controller.enqueue(encoder.encode(last));
        controller.close();
      },
      cancel: cancelled,
    });
  }

  it('streams with the status and headers given: its first chunk arrives while the stream is still open', async (t) => {
    let open;
    const opened = new Promise((resolve) => (open = resolve));
    const { url } = await serve(t, () => ({ statusCode: 201, headers: { 'x-kind': 'web' }, body: twoChunks('first;', 'last', opened) }));
    const res = await fetch(url);
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-kind'), 'web');
    assert.equal(res.headers.get('content-type'), 'application/octet-stream', 'the type a returned web stream gets');
    const reader = res.body.getReader();
    const first = await Promise.race([reader.read(), sleep(2000).then(() => ({ value: encoder.encode('no chunk while the stream was open') }))]);
    assert.equal(new TextDecoder().decode(first.value), 'first;');
    open();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    assert.equal(rest, 'last');
  });

  it('a content-type given wins; faas-js-runtime compatibility labels it JSON, as its other bodies', async (t) => {
    const body = () => twoChunks('a', 'b', Promise.resolve());
    const typed = await returning(t, () => ({ headers: { 'content-type': 'text/event-stream' }, body: body() }));
    assert.equal(typed.status, 200);
    assert.equal(typed.headers.get('content-type'), 'text/event-stream');
    assert.equal(typed.text, 'ab');
    const { url } = await serve(t, () => ({ statusCode: 202, body: body() }), { compat: 'faas-js-runtime' });
    const compat = await request(url);
    assert.equal(compat.status, 202);
    assert.equal(compat.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(compat.text, 'ab');
  });

  it('a 205 or 204 sends no content, and HEAD is answered without waiting: the stream is cancelled unread', async (t) => {
    let cancels = 0;
    const never = new Promise(() => {});
    const { url } = await serve(t, (ctx) => ({ statusCode: Number(ctx.query.status ?? 200), body: twoChunks('x', 'y', never, () => cancels++) }), {
      timeout: 5000,
    });
    for (const status of [205, 204]) {
      const res = await request(`${url}/?status=${status}`);
      assert.equal(res.status, status);
      assert.equal(res.text, '');
      if (status === 205) assert.equal(res.headers.get('content-length'), '0');
    }
    const started = Date.now();
    const head = await request(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.ok(Date.now() - started < 2000, 'not held until the stream ends or the timeout');
    for (let i = 0; i < 50 && cancels < 3; i++) await sleep(20);
    assert.equal(cancels, 3);
  });

  it('a Response as the body is a 500 (return the Response itself), and its body is cancelled', async (t) => {
    let cancelled = false;
    const { url, log } = await serve(t, () => ({
      statusCode: 201,
      body: new Response(
        new ReadableStream({
          pull() {
            return new Promise(() => {});
          },
          cancel() {
            cancelled = true;
          },
        }),
      ),
    }));
    const res = await request(url);
    assert.equal(res.status, 500);
    assert.deepEqual(res.json, { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
    assert.ok(
      log.entries().some((e) => /return the Response itself/.test(e.err?.message ?? '')),
      'the reason is logged',
    );
    for (let i = 0; i < 50 && !cancelled; i++) await sleep(20);
    assert.ok(cancelled, 'its body cancelled');
  });
});
