'use strict';
// What bench/run.js and bench/instructions.js share: the request bodies, and the servers' ports.
const net = require('node:net');

const order = JSON.stringify({ customerId: 1, productId: 2, name: 'a bench order' });
const ce = { 'ce-id': 'b-1', 'ce-source': '/bench', 'ce-type': 'dev.bench.order', 'ce-specversion': '1.0' };
// A structured event, the `i`th of a sender's, carrying the order; and a batch of ten of them.
const structuredEvent = (i) => ({
  id: `b-${i}`,
  source: '/bench',
  type: 'dev.bench.order',
  specversion: '1.0',
  datacontenttype: 'application/json',
  data: JSON.parse(order),
});
const batch = JSON.stringify(Array.from({ length: 10 }, (_, i) => structuredEvent(i)));
/** The batch workload, as the load runs and the instruction counts both send it. */
const batchWorkload = {
  name: 'batch-event',
  label: 'CloudEvents batch of 10',
  path: '/event',
  method: 'POST',
  headers: { 'content-type': 'application/cloudevents-batch+json' },
  body: batch,
};

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once `port` accepts connections; rejects if `child` exits first. */
async function untilUp(port, child, every = 5) {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`a server exited (${child.exitCode})`);
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, every));
  }
}

module.exports = { order, ce, structuredEvent, batchWorkload, freePort, untilUp };
