'use strict';
// Run by policy.spec.js inside a network namespace that holds only loopback: tests each endpoint
// in ENDPOINTS against the service and prints the answers as JSON. Also proves the namespace: a
// connection to an outside address must fail at once, never leave the machine.
const net = require('node:net');
const { startService } = require('./service');

function outsideReachable() {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '192.0.2.1', port: 80, timeout: 2000 });
    socket.on('connect', () => (socket.destroy(), resolve('connected')));
    socket.on('timeout', () => (socket.destroy(), resolve('timeout')));
    socket.on('error', (err) => resolve(err.code));
  });
}

(async () => {
  const isolation = await outsideReachable();
  const service = await startService({ limits: { allowPrivate: process.env.ALLOW_PRIVATE === 'true', connectTimeout: 1000, responseTimeout: 1000 } });
  const answers = {};
  for (const endpoint of JSON.parse(process.env.ENDPOINTS)) {
    const body =
      process.env.KIND === 'node-scanner'
        ? { name: 'policy', type: 'clairify', categories: ['NODE_SCANNER'], clairify: { endpoint: 'https://127.0.0.1:1', grpcEndpoint: endpoint } }
        : { name: 'policy', type: 'docker', categories: ['REGISTRY'], docker: { endpoint, username: 'user', password: 'secret-pw' } };
    const res = await service.test(body);
    answers[endpoint] = { status: res.status, message: res.json?.message };
  }
  await service.close();
  process.stdout.write(JSON.stringify({ isolation, answers }));
})().catch((err) => {
  process.stderr.write(String(err?.stack ?? err));
  process.exit(1);
});
