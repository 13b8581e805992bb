'use strict';
// The service as a whole: bounds, unexpected errors, and the environment read by index.js
// when it runs under `funcrun serve .` (`npm start`).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const { failure } = require('../build/lib/service.js');
const { Redactor } = require('../build/lib/secrets.js');
const { startRegistry, startSilent, scratch } = require('./peers');
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

  it('an invalid setting stops the start with its name', async () => {
    const proc = run([FOLDER, '--port', '0'], { env: { IMAGE_INTEGRATION_CONNECT_TIMEOUT: 'soon' } });
    assert.equal((await proc.exited).code, 1);
    assert.match(proc.out.stderr, /IMAGE_INTEGRATION_CONNECT_TIMEOUT/);
  });
});
