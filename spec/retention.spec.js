'use strict';
// What a request leaves behind once it is answered. A connection kept alive must not hold its last
// request: with many connections open, those requests survive the young generation's collections,
// V8 grows it, and the process's memory with it (issue 15's RSS after load).
const { it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const v8 = require('node:v8');
const vm = require('node:vm');
const { serve } = require('./helpers');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
v8.setFlagsFromString('--no-expose-gc');

/** Sends `raw` on `socket` and resolves with what arrives until `until` matches it. */
const exchange = (socket, raw, until) =>
  new Promise((resolve) => {
    let text = '';
    const onData = (chunk) => {
      text += chunk;
      if (until.test(text)) {
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData);
    socket.write(raw);
  });

for (const [what, headers, body] of [
  ['a JSON request', 'content-type: application/json\r\n', '{"a":1}'],
  ['a binary CloudEvent', 'content-type: application/json\r\nce-id: 1\r\nce-source: /s\r\nce-type: t\r\nce-specversion: 1.0\r\n', '{"a":1}'],
]) {
  it(`holds nothing of ${what} once it is answered, while its connection stays open`, async () => {
    const seen = [];
    const { url, close } = await serve({
      handle(context, data) {
        seen.push(new WeakRef(context.req), new WeakRef(context));
        return { ok: data.a };
      },
    });
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    try {
      const request = `POST /x HTTP/1.1\r\nhost: x\r\n${headers}content-length: ${body.length}\r\n\r\n${body}`;
      for (let i = 0; i < 2; i++) assert.match(await exchange(socket, request, /\r\n\r\n\{"ok":1\}$/), /^HTTP\/1\.1 200/);
      // Past the answer's own callbacks ('finish', the socket's write), then collected.
      await new Promise((resolve) => setTimeout(resolve, 50));
      gc();
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      assert.equal(seen.length, 4);
      assert.deepEqual(seen.map((ref) => ref.deref() === undefined), [true, true, true, true], 'requests and contexts still reachable');
    } finally {
      socket.destroy();
      await close();
    }
  });
}
