'use strict';
// The invocation's scope (log/scope.ts): inScope() enters it and, where it is built on
// AsyncContextFrame, does not leave it. That holds only because node sets the frame back when the
// task that entered it ends: these specs fail if a request could begin in an earlier one's scope.
const { it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { InvocationRecord, currentInvocation, inScope, invocationScope, useScope } = require('../../lib/log/scope.js');

// Entering stays entered only where the scope is AsyncContextFrame's (Node 24); run() elsewhere.
const STAYS = !('_enable' in require('node:async_hooks').AsyncLocalStorage.prototype);

/** A server whose listener notes what scope each request began in, then enters one of its own. */
async function serverEntering(t) {
  useScope();
  const seen = [];
  const records = [];
  const server = http.createServer((req, res) => {
    const before = currentInvocation();
    const record = new InvocationRecord({}, undefined, records.length + 1, undefined);
    records.push(record);
    const inside = inScope(invocationScope(), record, () => currentInvocation());
    seen.push({ before, inside: inside === record, after: currentInvocation() === record });
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  return { port: server.address().port, seen, records };
}

/** Writes `text` on a new connection and waits for `answers` answers. */
async function exchange(port, text, answers) {
  const socket = net.connect(port, '127.0.0.1');
  let got = '';
  socket.setEncoding('latin1').on('data', (chunk) => (got += chunk));
  socket.write(text);
  while (got.split('HTTP/1.1 200').length - 1 < answers) await once(socket, 'data');
  socket.destroy();
}

it('a request pipelined behind another, in the same packet, begins outside the scope the first entered', async (t) => {
  const { port, seen } = await serverEntering(t);
  await exchange(port, 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n', 3);
  assert.equal(seen.length, 3);
  assert.deepEqual(
    seen.map((s) => [s.before, s.inside, s.after]),
    seen.map(() => [undefined, true, STAYS]),
  );
});

it('a later request on the connection begins outside any scope, while what an invocation started keeps its own', async (t) => {
  const { port, seen, records } = await serverEntering(t);
  const socket = net.connect(port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\n');
  await once(socket, 'data');
  const later = await new Promise((resolve) => inScope(invocationScope(), records[0], () => setTimeout(() => resolve(currentInvocation()), 1)));
  assert.equal(later, records[0]);
  socket.write('GET /b HTTP/1.1\r\nHost: x\r\n\r\n');
  await once(socket, 'data');
  assert.equal(seen.length, 2);
  assert.equal(seen[1].before, undefined);
});
