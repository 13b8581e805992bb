'use strict';
// Tests hold sockets and memory: at most maxConcurrentTests run at once (429 RESOURCE_EXHAUSTED
// with Retry-After past it), and a test whose caller went away is stopped.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startService } = require('./service');

/** A peer that accepts connections and never answers. */
function stallingPeer() {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    // Reading (and dropping) what arrives is how the peer sees the other side close.
    socket.resume();
    socket.on('close', () => sockets.delete(socket));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: server.address().port, sockets, close: () => (sockets.forEach((s) => s.destroy()), new Promise((r) => server.close(r))) }),
    ),
  );
}

const docker = (port) => ({
  name: 'stall',
  type: 'docker',
  categories: ['REGISTRY'],
  docker: { endpoint: `http://127.0.0.1:${port}`, insecure: true, username: 'u', password: 'p' },
});

describe('concurrency', () => {
  it('past maxConcurrentTests a test is a 429 RESOURCE_EXHAUSTED with Retry-After; a caller that leaves frees its slot', async () => {
    const peer = await stallingPeer();
    const service = await startService({ maxConcurrentTests: 2, testTimeout: 20_000, limits: { connectTimeout: 20_000, responseTimeout: 20_000 } });
    const controllers = [new AbortController(), new AbortController()];
    try {
      const hanging = controllers.map((c) =>
        fetch(service.url + '/v1/imageintegrations/test', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(docker(peer.port)),
          signal: c.signal,
        }).catch(() => 'aborted'),
      );
      for (let i = 0; i < 100 && peer.sockets.size < 2; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(peer.sockets.size, 2, 'both tests are waiting on the peer');
      const refused = await service.test(docker(peer.port));
      assert.equal(refused.status, 429);
      assert.equal(refused.json.code, 8);
      assert.equal(refused.headers.get('retry-after'), '1');
      // The callers leave: their tests stop, and their connections to the peer close.
      for (const c of controllers) c.abort();
      await Promise.all(hanging);
      for (let i = 0; i < 100 && peer.sockets.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(peer.sockets.size, 0, 'the abandoned tests closed their connections');
      const again = service.test(docker(peer.port));
      for (let i = 0; i < 100 && peer.sockets.size < 1; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(peer.sockets.size, 1, 'a slot is free again');
      peer.sockets.forEach((s) => s.destroy());
      assert.equal((await again).status, 400);
    } finally {
      await service.close();
      await peer.close();
    }
  });
});
