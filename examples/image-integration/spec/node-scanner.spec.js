'use strict';
// Clairify as NODE_SCANNER, tested as StackRox tests it (clairify.go TestNodeScanner): a gRPC Ping
// over TLS on grpcEndpoint, here to a gRPC server (@grpc/grpc-js) on 127.0.0.1 serving the
// scanner's scannerV1.PingService. A peer that is no scanner fails the test.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');
const grpc = require('@grpc/grpc-js');
const { certificate, scratch, startPeer } = require('./peers');
const { startService } = require('./service');

const tls = certificate(scratch('funcrun-node-scanner-'));
const credentials = () => grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(tls.keyPem), cert_chain: Buffer.from(tls.certPem) }], false);
// PongMessage { string status = 1; } with status "OK".
const PONG = Buffer.from([0x0a, 0x02, 0x4f, 0x4b]);
const PING_SERVICE = {
  Ping: {
    path: '/scannerV1.PingService/Ping',
    requestStream: false,
    responseStream: false,
    requestSerialize: (b) => b,
    requestDeserialize: (b) => b,
    responseSerialize: (b) => b,
    responseDeserialize: (b) => b,
  },
};

/** A gRPC server on 127.0.0.1 over TLS; with `ping`, it serves the scanner's PingService. */
async function grpcServer({ ping }) {
  const server = new grpc.Server();
  const calls = [];
  if (ping) {
    server.addService(PING_SERVICE, {
      Ping: (call, callback) => {
        calls.push(call.metadata.getMap());
        callback(null, PONG);
      },
    });
  }
  const port = await new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials(), (err, p) => (err ? reject(err) : resolve(p))));
  return { hostPort: `127.0.0.1:${port}`, calls, close: () => new Promise((resolve) => server.tryShutdown(() => resolve())) };
}

describe('clairify as NODE_SCANNER: a gRPC Ping on grpcEndpoint', () => {
  let scanner;
  let stranger;
  let clairifyHttp;
  let service;
  before(async () => {
    scanner = await grpcServer({ ping: true });
    stranger = await grpcServer({ ping: false });
    clairifyHttp = await startPeer((req, res) => {
      res.writeHead(req.url === '/scanner/ping' ? 200 : 404);
      res.end('{}');
    });
    service = await startService({ limits: { ca: [tls.certPem] } });
  });
  after(async () => {
    await service.close();
    await Promise.all([scanner.close(), stranger.close(), clairifyHttp.close()]);
  });

  const clairify = (categories, grpcEndpoint) => ({ name: 'scanner', type: 'clairify', categories, clairify: { endpoint: clairifyHttp.url, grpcEndpoint } });

  it('a scanner answers the Ping over verified TLS: the test passes', async () => {
    const res = await service.test(clairify(['NODE_SCANNER'], scanner.hostPort));
    assert.equal(res.status, 200, res.text);
    assert.equal(scanner.calls.length, 1);
  });

  it('SCANNER and NODE_SCANNER together: the HTTP ping and the gRPC Ping, each once', async () => {
    const http = clairifyHttp.received.length;
    const grpcCalls = scanner.calls.length;
    assert.equal((await service.test(clairify(['SCANNER', 'NODE_SCANNER'], scanner.hostPort))).status, 200);
    assert.equal(clairifyHttp.received.length, http + 1);
    assert.equal(scanner.calls.length, grpcCalls + 1);
  });

  it('a gRPC server that is no scanner fails the test', async () => {
    const res = await service.test(clairify(['NODE_SCANNER'], stranger.hostPort));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, `node scanner: ${stranger.hostPort} is no scanner: it does not serve scannerV1.PingService/Ping`);
  });

  it('an HTTPS server that speaks no gRPC fails the test', async (t) => {
    const server = https.createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => res.end('hello'));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const res = await service.test(clairify(['NODE_SCANNER'], `127.0.0.1:${server.address().port}`));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^node scanner: gRPC Ping to 127\.0\.0\.1:\d+ failed \([A-Z_]+\): \S/);
    assert.doesNotMatch(res.json.message, /\n|Resolution note/);
  });

  it('a scanner whose certificate this service does not trust fails the test', async () => {
    const untrusting = await startService();
    try {
      const res = await untrusting.test(clairify(['NODE_SCANNER'], scanner.hostPort));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^node scanner: gRPC Ping to 127\.0\.0\.1:\d+ failed \(UNAVAILABLE\)/);
    } finally {
      await untrusting.close();
    }
  });

  it('a grpcEndpoint that is no host:port is a 400 before any call', async () => {
    const res = await service.test(clairify(['NODE_SCANNER'], 'ftp://scanner'));
    assert.equal(res.status, 400);
    assert.deepEqual(
      res.json.details[0].fieldViolations.map((v) => v.field),
      ['clairify.grpcEndpoint'],
    );
  });
});
