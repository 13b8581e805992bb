'use strict';
// A `handle` function that returns a web-standard answer: a Response is sent as it says (status,
// headers, each Set-Cookie apart), and its body, or a returned web ReadableStream, streams as it
// is produced, as a fetch handler's does.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { serve, request } = require('./helpers');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const encoder = new TextEncoder();

function gate() {
  let open;
  const opened = new Promise((resolve) => (open = resolve));
  return { opened, open };
}

/** Reads the first chunk of a streamed answer, then lets the function finish its stream, then reads the rest. */
async function firstThenRest(url, last) {
  const res = await fetch(url);
  const reader = res.body.getReader();
  const first = await Promise.race([reader.read(), sleep(2000).then(() => ({ value: encoder.encode('no chunk while the stream was open') }))]);
  last.open();
  let rest = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
  return { res, first: new TextDecoder().decode(first.value), rest };
}

describe('a handle function returning web answers', () => {
  it('a Response is sent with its status, headers, each Set-Cookie apart, and body', async (t) => {
    const server = await serve(t, () => {
      const headers = new Headers({ 'content-type': 'application/json', 'x-kind': 'web' });
      headers.append('set-cookie', 'a=1');
      headers.append('set-cookie', 'b=2');
      return new Response('{"made":true}', { status: 201, headers });
    });
    const res = await new Promise((resolve, reject) => http.get(server.url, resolve).on('error', reject));
    let text = '';
    for await (const chunk of res) text += chunk;
    assert.equal(res.statusCode, 201);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(res.headers['x-kind'], 'web');
    assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
    assert.deepEqual(JSON.parse(text), { made: true });
  });

  it("a Response's stream body streams: its first chunk arrives while the stream is still open", async (t) => {
    const last = gate();
    const server = await serve(t, async () => {
      const body = new ReadableStream({
        async start(controller) {
          controller.enqueue(encoder.encode('first;'));
          await last.opened;
          controller.enqueue(encoder.encode('last'));
          controller.close();
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    });
    const { res, first, rest } = await firstThenRest(server.url, last);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(first, 'first;');
    assert.equal(rest, 'last');
  });

  it('a returned web ReadableStream streams too, as bytes', async (t) => {
    const last = gate();
    const server = await serve(t, () => {
      return new ReadableStream({
        async start(controller) {
          controller.enqueue(encoder.encode('one;'));
          await last.opened;
          controller.enqueue('two');
          controller.close();
        },
      });
    });
    const { res, first, rest } = await firstThenRest(server.url, last);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.equal(first, 'one;');
    assert.equal(rest, 'two');
  });

  it('a Response to HEAD sends no body; a null body is empty', async (t) => {
    const server = await serve(t, (context) => (context.path === '/none' ? new Response(null, { status: 200 }) : new Response('hello')));
    const head = await request(server.url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    const none = await request(`${server.url}/none`);
    assert.equal(none.status, 200);
    assert.equal(none.text, '');
    assert.equal(none.headers.get('content-length'), '0');
  });

  it('a stream that fails before its first chunk is a JSON 500', async (t) => {
    const server = await serve(
      t,
      () =>
        new ReadableStream({
          pull() {
            throw new Error('broken source');
          },
        }),
    );
    const res = await request(server.url);
    assert.equal(res.status, 500);
    assert.equal(res.json.statusCode, 500);
    assert.ok(!res.text.includes('broken source'));
  });
});

describe('a handle function returning web answers: its stream runs in its invocation', () => {
  it("a Response body's pull() logs with the request's reqId", async (t) => {
    const { log } = require('../lib/index.js');
    const server = await serve(
      t,
      () =>
        new Response(
          new ReadableStream(
            {
              pull(controller) {
                log.info('pulled');
                controller.enqueue(encoder.encode('x'));
                controller.close();
              },
            },
            // Pulled only when read: as the answer is sent, after the function returned.
            { highWaterMark: 0 },
          ),
        ),
      { logLevel: 'info' },
    );
    const res = await request(server.url);
    assert.equal(res.text, 'x');
    const line = server.log.entries().find((l) => l.msg === 'pulled');
    assert.equal(typeof line.reqId, 'number');
  });
});
