'use strict';
// The service as a whole: bounds, unexpected errors, its line at info for each test, and the
// environment read by index.js when it runs under `funcrun serve .` (`npm start`), proxy variables
// included (refused on every path, with a warning at start).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const net = require('node:net');
const { failure } = require('../build/lib/service.js');
const { Redactor } = require('../build/lib/secrets.js');
const { startRegistry, startSilent, startPeer, startGrpcScanner, certificate, scratch } = require('./peers');
const { startService } = require('./service');
const { run, runServing, request } = require('./helpers');

const FOLDER = path.join(__dirname, '..');

describe('bounds', () => {
  it('the whole test is bounded, whatever the per-request timeouts', async () => {
    const silent = await startSilent();
    const service = await startService({ testTimeout: 300, limits: { responseTimeout: 60_000 } });
    try {
      const res = await service.test({
        name: 'x',
        type: 'docker',
        categories: ['REGISTRY'],
        docker: { endpoint: `http://${silent.hostPort}`, insecure: true },
      });
      assert.equal(res.status, 400);
      assert.equal(res.json.message, 'the test did not finish within 0.3s');
    } finally {
      await service.close();
      await silent.close();
    }
  });
});

describe('routes', () => {
  it('POST /v1/imageintegrations/test and /test/updated are served; other methods answer 501, code 12, as grpc-gateway answers a method it has no route for', async () => {
    const service = await startService();
    try {
      const body = { name: 'c', type: 'clair', categories: ['SCANNER'], clair: { endpoint: '' } };
      const test = await service.test(body);
      assert.deepEqual(test.json.details[0].fieldViolations, [{ field: 'clair.endpoint', description: 'is required' }]);
      const updated = await request(service.url + '/v1/imageintegrations/test/updated', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ config: body, updatePassword: true }),
      });
      assert.deepEqual(updated.json.details[0].fieldViolations, [{ field: 'config.clair.endpoint', description: 'is required' }]);
      for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
        const other = await request(service.url + '/v1/imageintegrations/test/updated', { method });
        assert.equal(other.status, 501, method);
        assert.deepEqual(other.json, { code: 12, message: 'Method Not Allowed', details: [], error: 'Method Not Allowed' }, method);
        assert.equal(other.headers.get('allow'), null, 'grpc-gateway sends no Allow');
      }
      // grpc-gateway's patterns match no path with a trailing slash: a 404, code 5, and nothing tested.
      for (const path of ['/v1/imageintegrations/test/', '/v1/imageintegrations/test/updated/']) {
        const slashed = await request(service.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        assert.equal(slashed.status, 404, path);
        assert.equal(slashed.json.code, 5, path);
      }
      assert.equal(service.log.entries().filter((e) => e.msg === 'testing image integration').length, 2, 'only the two routes were tested');
    } finally {
      await service.close();
    }
  });
});

describe('unexpected errors', () => {
  it('are answered as a generic 500 and logged with every secret redacted', () => {
    const lines = [];
    const log = { error: (obj, msg) => lines.push(JSON.stringify({ ...obj, msg })) };
    const redactor = new Redactor(['hunter2-secret']);
    const thrown = new TypeError('cannot read hunter2-secret of undefined');
    const error = failure(thrown, redactor, log, new AbortController().signal, 1000);
    assert.equal(error.statusCode, 500);
    assert.equal(error.message, 'internal error');
    assert.equal(lines.length, 1);
    assert.ok(!lines[0].includes('hunter2-secret'));
    assert.match(lines[0], /cannot read \*{6} of undefined/);
  });
});

describe('one line at info for each test: its type, the hosts contacted, the outcome and the masked reason', () => {
  const PASSWORD = 'info-line-password-7';
  const docker = (endpoint) => ({
    name: 'r',
    type: 'docker',
    categories: ['REGISTRY'],
    docker: { endpoint, username: 'alice', password: PASSWORD, insecure: true },
  });
  const lastLine = (log, msg) => log.entries().findLast((e) => e.msg === msg);

  it('a failed test: "image integration test failed" at info, with the reason masked; a passed one: "passed"', async (t) => {
    let status = 401;
    const registry = await startPeer((req, res) => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status === 200 ? '{}' : `no such user: ${Buffer.from(req.headers.authorization.slice(6), 'base64')}`);
    });
    const service = await startService();
    t.after(async () => {
      await service.close();
      await registry.close();
    });
    const failed = await service.test(docker(registry.url));
    assert.equal(failed.status, 400);
    const line = lastLine(service.log, 'image integration test failed');
    assert.ok(line, service.log.text());
    assert.equal(line.level, 30);
    assert.deepEqual(
      { type: line.type, hosts: line.hosts, outcome: line.outcome, status: line.status, reason: line.reason },
      { type: 'docker', hosts: { 'docker.endpoint': registry.hostPort }, outcome: 'failed', status: 400, reason: failed.json.message },
    );
    assert.match(line.reason, /rejected the credentials \(HTTP 401\): no such user: \*{6}$/);
    assert.ok(!service.log.text().includes(PASSWORD));

    status = 200;
    assert.equal((await service.test(docker(registry.url))).status, 200);
    const passed = lastLine(service.log, 'image integration test passed');
    assert.equal(passed.level, 30);
    assert.deepEqual(
      { type: passed.type, hosts: passed.hosts, outcome: passed.outcome },
      { type: 'docker', hosts: { 'docker.endpoint': registry.hostPort }, outcome: 'passed' },
    );
  });

  it("the gRPC and TCP checks' hosts are named too (grpcEndpoint, scanner V4's indexer and matcher)", async (t) => {
    const service = await startService({ limits: { connectTimeout: 500 } });
    t.after(() => service.close());
    await service.test({ name: 'v4', type: 'scannerv4', categories: ['SCANNER'], scannerV4: { indexerEndpoint: '127.0.0.1:1', matcherEndpoint: '' } });
    const v4 = lastLine(service.log, 'image integration test failed');
    assert.deepEqual(v4.hosts, { 'scannerV4.indexerEndpoint': '127.0.0.1:1', 'scannerV4.matcherEndpoint': 'scanner-v4-matcher.stackrox.svc:8443' });
    await service.test({
      name: 'n',
      type: 'clairify',
      categories: ['NODE_SCANNER'],
      clairify: { endpoint: 'https://127.0.0.1:2', grpcEndpoint: '127.0.0.1:3' },
    });
    const node = lastLine(service.log, 'image integration test failed');
    assert.deepEqual(node.hosts, { 'clairify.endpoint': '127.0.0.1:2', 'clairify.grpcEndpoint': '127.0.0.1:3' });
  });

  it('a loopback endpoint refused by the default policy names the setting that allows it, in the answer and the log', async (t) => {
    const service = await startService({ limits: { allowPrivate: false } });
    t.after(() => service.close());
    const res = await service.test(docker('http://127.0.0.1:5000'));
    assert.equal(res.status, 400);
    assert.equal(
      res.json.message,
      'endpoint refused: 127.0.0.1 is a loopback address; loopback and unspecified addresses are contacted only with IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS=true',
    );
    assert.equal(lastLine(service.log, 'image integration test failed').reason, res.json.message);
  });
});

describe('served by funcrun serve, configured by the environment', () => {
  const PASSWORD = 'env-spec-password-1';
  const body = (endpoint) =>
    JSON.stringify({ name: 'r', type: 'docker', categories: ['REGISTRY'], docker: { endpoint, username: 'alice', password: PASSWORD, insecure: true } });
  const post = (url, data, headers = {}) =>
    request(url + '/v1/imageintegrations/test', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: data });

  it('refuses loopback by default; IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS=true allows it', async () => {
    const registry = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD } });
    const strict = await runServing([FOLDER]);
    const open = await runServing([FOLDER], { env: { IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS: 'true' } });
    try {
      const refused = await post(strict.url, body(registry.url));
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /loopback/);
      assert.equal((await post(open.url, body(registry.url))).status, 200);
      for (const proc of [strict, open]) assert.ok(!proc.out.stdout.includes(PASSWORD));
    } finally {
      for (const proc of [strict, open]) proc.child.kill('SIGTERM');
      await Promise.all([strict.exited, open.exited, registry.close()]);
    }
  });

  it('reads the timeouts, the API token and the CA file from the environment', async () => {
    const silent = await startSilent();
    const tls = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD }, tls: true });
    const caFile = path.join(scratch('funcrun-ca-'), 'ca.pem');
    fs.writeFileSync(caFile, tls.ca);
    const proc = await runServing([FOLDER], {
      env: {
        IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS: 'true',
        IMAGE_INTEGRATION_RESPONSE_TIMEOUT: '250ms',
        IMAGE_INTEGRATION_API_TOKEN: 'env-token',
        IMAGE_INTEGRATION_CA_FILE: caFile,
      },
    });
    try {
      assert.equal((await post(proc.url, body(`http://${silent.hostPort}`))).status, 401);
      const slow = await post(proc.url, body(`http://${silent.hostPort}`), { authorization: 'Bearer env-token' });
      assert.equal(slow.json.message, `no answer from ${silent.hostPort} within 250ms`);
      const verified = JSON.stringify({
        name: 'r',
        type: 'docker',
        categories: ['REGISTRY'],
        docker: { endpoint: tls.hostPort, username: 'alice', password: PASSWORD },
      });
      assert.equal((await post(proc.url, verified, { authorization: 'Bearer env-token' })).status, 200);
    } finally {
      proc.child.kill('SIGTERM');
      await Promise.all([proc.exited, silent.close(), tls.close()]);
    }
  });

  it('proxy variables are used by no path (HTTPS and HTTP registries, the gRPC Ping), and the start warns that they are set and not used', async () => {
    // A proxy that takes connections and records them; whatever reached it would fail its test.
    const connections = [];
    const proxy = net.createServer((socket) => {
      connections.push(socket.remoteAddress);
      socket.destroy();
    });
    await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
    const tls = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD }, tls: true });
    const plain = await startPeer((req, res) => res.end('{}'));
    const scannerTls = certificate(scratch('funcrun-proxy-grpc-'));
    const scanner = await startGrpcScanner({ tls: scannerTls, ping: true });
    const caFile = path.join(scratch('funcrun-ca-'), 'ca.pem');
    fs.writeFileSync(caFile, `${tls.ca}\n${scannerTls.certPem}`);
    const variables = { HTTPS_PROXY: proxyUrl, https_proxy: proxyUrl, HTTP_PROXY: proxyUrl, http_proxy: proxyUrl, ALL_PROXY: proxyUrl, grpc_proxy: proxyUrl };
    const proc = await runServing([FOLDER], {
      env: {
        ...variables,
        NODE_USE_ENV_PROXY: '1',
        NO_PROXY: '',
        no_proxy: '',
        no_grpc_proxy: '',
        IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS: 'true',
        IMAGE_INTEGRATION_CA_FILE: caFile,
      },
    });
    try {
      const verified = JSON.stringify({
        name: 'r',
        type: 'docker',
        categories: ['REGISTRY'],
        docker: { endpoint: tls.hostPort, username: 'alice', password: PASSWORD },
      });
      const https = await post(proc.url, verified);
      assert.equal(https.status, 200, https.text);
      const http = await post(proc.url, body(plain.url));
      assert.equal(http.status, 200, http.text);
      const ping = await post(
        proc.url,
        JSON.stringify({ name: 'n', type: 'clairify', categories: ['NODE_SCANNER'], clairify: { endpoint: plain.url, grpcEndpoint: scanner.hostPort } }),
      );
      assert.equal(ping.status, 200, ping.text);
      assert.equal(scanner.calls.length, 1);
      assert.deepEqual(connections, [], 'nothing went through the proxy');
      const warning = proc.out.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
        .find((e) => e.level === 40 && /not used/.test(e.msg));
      assert.ok(warning, proc.out.stdout);
      assert.match(warning.msg, /^HTTPS_PROXY, https_proxy, HTTP_PROXY, http_proxy, ALL_PROXY, grpc_proxy, NODE_USE_ENV_PROXY are set and not used: /);
    } finally {
      proc.child.kill('SIGTERM');
      await Promise.all([proc.exited, tls.close(), plain.close(), scanner.close(), new Promise((resolve) => proxy.close(resolve))]);
    }
  });

  it('an invalid setting stops the start with its name', async () => {
    const proc = run([FOLDER, '--port', '0'], { env: { IMAGE_INTEGRATION_CONNECT_TIMEOUT: 'soon' } });
    assert.equal((await proc.exited).code, 1);
    assert.match(proc.out.stderr, /IMAGE_INTEGRATION_CONNECT_TIMEOUT/);
  });
});
