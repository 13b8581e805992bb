'use strict';
// What bench/run.js and bench/instructions.js share: the request bodies, the servers' ports, the peers.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

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

/**
 * The Hono rows: one Hono app (bench/function-hono) served by funcrun and by @hono/node-server,
 * measured against each other (bench/run.js's load, bench/instructions.js's counts).
 */
const honoWorkloads = [
  { name: 'hono-get', label: 'Hono: JSON GET with a path parameter', path: '/items/42', method: 'GET', headers: {}, target: 1, hono: true },
  {
    name: 'hono-post',
    label: 'Hono: JSON POST echoed',
    path: '/echo',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: order,
    target: 1,
    hono: true,
  },
];
/**
 * funcrun's setting in the Hono rows: the light global Request and Response that @hono/node-server
 * installs by default (its overrideGlobalObjects), which funcrun leaves off unless asked (docs/fetch.md).
 */
const honoFuncrunEnv = { FUNC_LIGHT_WEB_GLOBALS: 'on' };

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

/** The peers (faas-js-runtime, Google's Functions Framework, @hono/node-server) installed once into a scratch folder: its path. */
function installPeers() {
  const dir = path.join(os.tmpdir(), 'funcrun-bench-peers');
  fs.mkdirSync(dir, { recursive: true });
  if (
    !fs.existsSync(path.join(dir, 'node_modules', 'faas-js-runtime')) ||
    !fs.existsSync(path.join(dir, 'node_modules', '@google-cloud', 'functions-framework')) ||
    !fs.existsSync(path.join(dir, 'node_modules', '@hono', 'node-server'))
  ) {
    fs.writeFileSync(path.join(dir, 'package.json'), '{"private":true}');
    process.stderr.write(`installing faas-js-runtime, @google-cloud/functions-framework and @hono/node-server into ${dir}\n`);
    const peers = ['faas-js-runtime@4.0.1', '@google-cloud/functions-framework@^3', '@hono/node-server@^2'];
    execFileSync('npm', ['install', '--no-audit', '--no-fund', ...peers], { cwd: dir, stdio: 'ignore' });
  }
  return dir;
}

module.exports = { order, ce, structuredEvent, batchWorkload, honoWorkloads, honoFuncrunEnv, freePort, untilUp, installPeers };
