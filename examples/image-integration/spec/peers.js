'use strict';
// Real peers for the image integration specs: Docker Distribution registries (the Debian
// package `docker-registry`) with htpasswd, token or TLS auth, a token server issuing RS256
// JWTs the registry verifies, small HTTP peers that follow the scanners' and AWS's APIs, and a
// gRPC server serving the scanner's PingService.
const { spawn, execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const { freePort, waitUntilListening } = require('./helpers');

const REGISTRY = process.env.DOCKER_REGISTRY_BIN || 'docker-registry';

function scratch(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A self-signed certificate for 127.0.0.1 and localhost, made with openssl. */
function certificate(folder) {
  const key = path.join(folder, 'key.pem');
  const cert = path.join(folder, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  return { key, cert, keyPem: fs.readFileSync(key, 'utf8'), certPem: fs.readFileSync(cert, 'utf8') };
}

/** An htpasswd file (bcrypt) for { user: password }. */
function htpasswd(folder, users) {
  const file = path.join(folder, 'htpasswd');
  const lines = Object.entries(users).map(([user, password]) => execFileSync('htpasswd', ['-Bbn', user, password], { encoding: 'utf8' }).trim());
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

function close(server) {
  server.closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * A token server as Docker's token authentication specifies: Basic credentials in, a JWT signed
 * with `signer` (RS256, its certificate in `x5c`) out. `users` maps user to password, compared whole.
 */
async function startTokenServer({ users, signer, service, issuer, tls }) {
  const requests = [];
  const create = tls ? (handler) => require('node:https').createServer({ key: tls.keyPem, cert: tls.certPem }, handler) : http.createServer;
  const server = create((req, res) => {
    const url = new URL(req.url, 'http://x');
    requests.push({ url: req.url, authorization: req.headers.authorization });
    const [user, password] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
      .toString()
      .split(/:(.*)/s);
    if (!(user in users) || users[user] !== password) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ details: 'incorrect username or password' }));
    }
    const now = Math.floor(Date.now() / 1000);
    const scope = url.searchParams.get('scope');
    const access = scope ? [{ type: scope.split(':')[0], name: scope.split(':')[1], actions: scope.split(':')[2].split(',') }] : [];
    const der = new crypto.X509Certificate(signer.certPem).raw.toString('base64');
    const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${b64({ typ: 'JWT', alg: 'RS256', x5c: [der] })}.${b64({
      iss: issuer,
      sub: user,
      aud: url.searchParams.get('service') ?? service,
      exp: now + 300,
      nbf: now - 10,
      iat: now,
      jti: crypto.randomUUID(),
      access,
    })}`;
    const signature = crypto.sign('RSA-SHA256', Buffer.from(unsigned), signer.keyPem).toString('base64url');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ token: `${unsigned}.${signature}` }));
  });
  const port = await listen(server);
  return { url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}/token`, requests, close: () => close(server) };
}

/**
 * A Docker Distribution registry on 127.0.0.1. `auth`: 'htpasswd' (users) or 'token' (users, via
 * a token server started here), or 'none'; `tls`: serve HTTPS with a self-signed certificate.
 */
async function startRegistry({ auth = 'htpasswd', users = {}, tls = false } = {}) {
  const folder = scratch('funcrun-registry-');
  const port = await freePort();
  const lines = [
    'version: 0.1',
    'log:',
    '  level: error',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${path.join(folder, 'data')}`,
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '  secret: spec-secret',
  ];
  let tlsFiles;
  if (tls) {
    tlsFiles = certificate(folder);
    lines.push('  tls:', `    certificate: ${tlsFiles.cert}`, `    key: ${tlsFiles.key}`);
  }
  let tokenServer;
  if (auth === 'htpasswd') {
    lines.push('auth:', '  htpasswd:', '    realm: spec-realm', `    path: ${htpasswd(folder, users)}`);
  } else if (auth === 'token') {
    const signer = certificate(scratch('funcrun-token-'));
    tokenServer = await startTokenServer({ users, signer, service: 'spec-registry', issuer: 'spec-issuer', tls: tlsFiles });
    lines.push(
      'auth:',
      '  token:',
      `    realm: ${tokenServer.url}`,
      '    service: spec-registry',
      '    issuer: spec-issuer',
      `    rootcertbundle: ${signer.cert}`,
    );
  }
  const config = path.join(folder, 'config.yml');
  fs.writeFileSync(config, lines.join('\n') + '\n');
  const child = spawn(REGISTRY, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stderr.on('data', (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const scheme = tls ? 'https' : 'http';
  await waitUntilListening(port, { child, out });
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    /** The registry's certificate (PEM), when it serves TLS. */
    ca: tlsFiles?.certPem,
    hostPort: `127.0.0.1:${port}`,
    port,
    tokenServer,
    async close() {
      child.kill('SIGTERM');
      await exited;
      await tokenServer?.close();
    },
  };
}

/** An HTTP peer answering with `handler(req, res)`; it records what it received. */
async function startPeer(handler) {
  const received = [];
  const server = http.createServer((req, res) => {
    received.push({ method: req.method, url: req.url, headers: req.headers });
    handler(req, res);
  });
  const port = await listen(server);
  return { url: `http://127.0.0.1:${port}`, hostPort: `127.0.0.1:${port}`, port, received, close: () => close(server) };
}

/** A TCP server that accepts connections and never answers. */
async function startSilent() {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  const port = await listen(server);
  return {
    hostPort: `127.0.0.1:${port}`,
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// PongMessage { string status = 1; } with status "OK" (stackrox/scanner proto/scanner/api/v1/ping_service.proto).
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

/**
 * A gRPC server (@grpc/grpc-js) over TLS (`tls`, from certificate()) on 127.0.0.1 or `host`; with
 * `ping`, it serves the scanner's scannerV1.PingService, answering `answer()` (PONG by default) as
 * the message's bytes, and records each call's metadata.
 */
async function startGrpcScanner({ tls, ping, answer = () => PONG, host = '127.0.0.1' }) {
  const grpc = require('@grpc/grpc-js');
  const server = new grpc.Server();
  const calls = [];
  if (ping) {
    server.addService(PING_SERVICE, {
      Ping: (call, callback) => {
        calls.push(call.metadata.getMap());
        callback(null, answer());
      },
    });
  }
  const credentials = grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(tls.keyPem), cert_chain: Buffer.from(tls.certPem) }], false);
  const bind = host.includes(':') ? `[${host}]:0` : `${host}:0`;
  const port = await new Promise((resolve, reject) => server.bindAsync(bind, credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return { hostPort: `127.0.0.1:${port}`, port, calls, close: () => new Promise((resolve) => server.tryShutdown(() => resolve())) };
}

module.exports = { startRegistry, startPeer, startSilent, startTokenServer, startGrpcScanner, PONG, certificate, freePort, scratch };
