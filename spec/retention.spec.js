'use strict';
// What a request leaves behind once it is answered. A connection kept alive must not hold its last
// request: with many connections open, those requests survive the young generation's collections,
// V8 grows it, and the process's memory with it.
const { it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const v8 = require('node:v8');
const vm = require('node:vm');
const path = require('node:path');
const { serve, project, runServing } = require('./helpers');

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
  it(`holds nothing of ${what} once it is answered, while its connection stays open`, async (t) => {
    const seen = [];
    const { url } = await serve(t, {
      handle(context, data) {
        seen.push(new WeakRef(context.req), new WeakRef(context));
        return { ok: data.a };
      },
    });
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    t.after(() => socket.destroy());
    const request = `POST /x HTTP/1.1\r\nhost: x\r\n${headers}content-length: ${body.length}\r\n\r\n${body}`;
    for (let i = 0; i < 2; i++) assert.match(await exchange(socket, request, /\r\n\r\n\{"ok":1\}$/), /^HTTP\/1\.1 200/);
    // Past the answer's own callbacks ('finish', the socket's write), then collected.
    await new Promise((resolve) => setTimeout(resolve, 50));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.equal(seen.length, 4);
    assert.deepEqual(
      seen.map((ref) => ref.deref() === undefined),
      [true, true, true, true],
      'requests and contexts still reachable',
    );
  });
}

// What an invocation starts may outlive it: a timer, an AbortSignal.timeout, a pooled socket, a
// pending promise. Each captures the async context it was made in; none may keep the request.
const http = require('node:http');
const { log } = require('../lib/index.js');

const BODY = 'x'.repeat(64 * 1024);
const started = {
  'a timer': () => setTimeout(() => {}, 60_000).unref(),
  'an AbortSignal.timeout': () => AbortSignal.timeout(60_000),
  'a promise the module keeps': (() => {
    const kept = [];
    return () => kept.push(new Promise(() => {}).then(() => {}));
  })(),
};
for (const [what, start] of Object.entries(started)) {
  it(`holds nothing of a request once it is answered while ${what} it started is pending`, async (t) => {
    const seen = [];
    const { url } = await serve(t, {
      handle(context, data) {
        // Reading `log` turns the invocation scope on where it is not always on (Node 22).
        log.debug('started');
        start();
        seen.push(new WeakRef(context.req), new WeakRef(context));
        return { size: data.length };
      },
    });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: BODY });
      assert.deepEqual(await res.json(), { size: BODY.length });
    }
    await collected(seen);
  });
}

it('holds nothing of a request once it is answered while a fetch it started waits on a pooled socket', async (t) => {
  const peerUrl = await silentPeer(t);
  const seen = [];
  const { url } = await serve(t, {
    handle(context, data) {
      log.debug('calling the peer');
      fetch(peerUrl, { signal: AbortSignal.timeout(60_000) }).catch(() => {});
      seen.push(new WeakRef(context.req), new WeakRef(context));
      return { size: data.length };
    },
  });
  for (let i = 0; i < 3; i++) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: BODY });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  }
  await collected(seen);
});

/** A peer that never answers: a fetch to it and its timeout stay pending. Resolves with its URL. */
async function silentPeer(t) {
  const peer = http.createServer(() => {});
  await new Promise((resolve) => peer.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    peer.closeAllConnections();
    peer.close();
  });
  return `http://127.0.0.1:${peer.address().port}/`;
}

/** Resolves once every WeakRef in `refs` is cleared by a full collection; fails when one is not. */
async function collected(refs) {
  for (let round = 0; round < 5; round++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    gc();
    if (refs.every((ref) => ref.deref() === undefined)) return;
  }
  assert.deepEqual(
    refs.map((ref) => ref.deref() === undefined),
    refs.map(() => true),
    'requests or contexts still reachable',
  );
}

it('a soak of 300 requests of 256 KiB, each leaving a timer and a fetch with a 60 s timeout pending, holds none of them', async (t) => {
  const peerUrl = await silentPeer(t);
  const dir = project({
    'index.js': `
const { log } = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'index.js'))});
module.exports = (context, data) => {
  // Memory after a full collection: what is still held, not what is waiting to be collected.
  if (context.query.measure) { gc(); const { heapUsed, external } = process.memoryUsage(); return { held: heapUsed + external }; }
  log.debug('calling the peer');
  setTimeout(() => {}, 60_000);
  fetch('${peerUrl}', { signal: AbortSignal.timeout(60_000) }).catch(() => {});
  return { size: data.length };
};
`,
  });
  const proc = await runServing([dir], { execArgv: ['--expose-gc'] });
  t.after(() => proc.child.kill('SIGKILL'));
  const held = async () => (await (await fetch(`${proc.url}/?measure=1`)).json()).held / 2 ** 20;
  const body = 'x'.repeat(256 * 1024);
  const send = async () => {
    const res = await fetch(proc.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
    assert.deepEqual(await res.json(), { size: body.length });
  };
  for (let i = 0; i < 20; i++) await send();
  const before = await held();
  for (let round = 0; round < 35; round++) await Promise.all(Array.from({ length: 8 }, send));
  const growth = (await held()) - before;
  // 280 bodies of 256 KiB are 70 MB, and a request held keeps its body more than once. What is
  // held (280 pending fetches and their sockets) is a few tens of KiB each.
  assert.ok(growth < 30, `${growth.toFixed(1)} MB still held after 280 requests`);
});
