'use strict';
// Run by unreachable.spec.js inside a network namespace that holds only loopback (and, for the
// IPv4-only cases, no IPv6 at all): one SCENARIO, whose endpoint names resolve (through a DNS
// server on 127.0.0.1 started here) to addresses the kernel refuses to connect to at once. It
// tests the endpoint, then a healthy registry peer on loopback, and prints both answers as JSON.
// Also proves the namespace: a connection to an outside address must fail at once.
const net = require('node:net');
const path = require('node:path');
const { startDns } = require('./network-dns');
const { startPeer } = require('./peers');
const { startService } = require('./service');
const { runServing, request } = require('./helpers');

const FOLDER = path.join(__dirname, '..');

function outsideReachable() {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '192.0.2.1', port: 80, timeout: 2000 });
    socket.on('connect', () => (socket.destroy(), resolve('connected')));
    socket.on('timeout', () => (socket.destroy(), resolve('timeout')));
    socket.on('error', (err) => resolve(err.code));
  });
}

const docker = (endpoint, extra = {}) => ({
  name: 'unreachable',
  type: 'docker',
  categories: ['REGISTRY'],
  docker: { endpoint, username: 'alice', password: 'unreachable-pw-1', insecure: true, ...extra },
});

const nodeScanner = (grpcEndpoint) => ({
  name: 'unreachable',
  type: 'clairify',
  categories: ['NODE_SCANNER'],
  clairify: { endpoint: 'https://127.0.0.1:1', grpcEndpoint },
});

/** What each scenario resolves, and the integration it tests first. */
const SCENARIOS = {
  'https-multicast-v4': { dns: { 'multi.spec.test': { A: ['224.0.0.1'] } }, body: () => docker('https://multi.spec.test') },
  'https-multicast-v6': { dns: { 'multi.spec.test': { AAAA: ['ff02::1'] } }, body: () => docker('https://multi.spec.test') },
  'http-multicast-v4': { dns: { 'multi.spec.test': { A: ['224.0.0.1'] } }, body: () => docker('http://multi.spec.test') },
  'ipv6-only-name': { dns: { 'six.spec.test': { AAAA: ['2001:db8::10'] } }, body: () => docker('https://six.spec.test') },
  'dual-stack-v4-refused': {
    dns: { 'dual.spec.test': { A: ['127.0.0.1'], AAAA: ['2001:db8::10'] } },
    body: ({ closed }) => docker(`https://dual.spec.test:${closed}`),
  },
  'token-realm-multicast': {
    dns: { 'realm.spec.test': { A: ['224.0.0.1'] } },
    body: ({ realm }) => docker(realm.url),
  },
  'grpc-multicast': { dns: { 'scanner.spec.test': { A: ['224.0.0.1'] } }, body: () => nodeScanner('scanner.spec.test:8443') },
  'grpc-ipv6-only-name': { dns: { 'scanner.spec.test': { AAAA: ['2001:db8::10'] } }, body: () => nodeScanner('scanner.spec.test:8443') },
};

(async () => {
  const isolation = await outsideReachable();
  const scenario = SCENARIOS[process.env.SCENARIO];
  const dns = await startDns(scenario.dns);
  // A healthy registry: the second request, answered when the service is still serving.
  const healthy = await startPeer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  // A registry that sends its clients for a token to a realm that resolves to a multicast address.
  const realm = await startPeer((req, res) => {
    res.writeHead(401, { 'www-authenticate': 'Bearer realm="https://realm.spec.test/token",service="spec"' });
    res.end();
  });
  const closed = await new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  const body = scenario.body({ realm, closed });
  const answers = [];
  let exit;
  if (process.env.SERVED === 'process') {
    // As deployed: `funcrun serve .`, configured by the environment.
    const proc = await runServing([FOLDER], {
      env: { IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS: 'true', IMAGE_INTEGRATION_DNS_SERVERS: dns.server, IMAGE_INTEGRATION_CONNECT_TIMEOUT: '1s' },
    });
    const post = (integration) =>
      request(`${proc.url}/v1/imageintegrations/test`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(integration) });
    for (const integration of [body, docker(healthy.url)]) {
      const res = await post(integration).catch((err) => ({ status: 0, json: { message: String(err.cause?.code ?? err.message) } }));
      answers.push({ status: res.status, message: res.json?.message });
    }
    exit = proc.child.exitCode;
    proc.child.kill('SIGTERM');
    await proc.exited;
    if (/uncaught exception/i.test(proc.out.stdout + proc.out.stderr)) exit = 'uncaught exception logged';
  } else {
    const service = await startService({ limits: { dnsServers: [dns.server], connectTimeout: 1000, responseTimeout: 1000 } });
    for (const integration of [body, docker(healthy.url)]) {
      const res = await service.test(integration);
      answers.push({ status: res.status, message: res.json?.message });
    }
    await service.close();
  }
  await Promise.all([dns.close(), healthy.close(), realm.close()]);
  process.stdout.write(JSON.stringify({ isolation, answers, exit, queried: dns.queries.map((q) => q.name) }));
})().catch((err) => {
  process.stderr.write(String(err?.stack ?? err));
  process.exit(1);
});
