'use strict';
// Every body is read as JSON, as grpc-gateway reads it whatever its media type (StackRox answers
// with a 400 what does not decode, never a 415): what is not JSON is a 400 that echoes nothing, and
// the service is no CloudEvent receiver, so a batch cannot run thousands of tests.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { request } = require('./helpers');
const { startService, assertNoSecret } = require('./service');
const { PATH } = require('../build/lib/service.js');

const SECRET = 'hunter2-xml-secret';

describe('JSON only', () => {
  let service;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  const post = (body, type, headers = {}) => request(service.url + PATH, { method: 'POST', headers: { 'content-type': type, ...headers }, body });

  it('malformed XML holding a secret: a 400 that echoes nothing', async () => {
    const answer = await post(`<docker><${SECRET}>x</wrong></docker>`, 'application/xml');
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 3);
    assertNoSecret(assert, answer, service.log, [SECRET]);
  });

  it('well-formed XML is read as JSON: a 400, not a 415 or a 500', async () => {
    const answer = await post(`<integration><password>${SECRET}</password></integration>`, 'application/xml');
    assert.equal(answer.status, 400);
    assert.match(answer.json.message, /invalid JSON/);
    assertNoSecret(assert, answer, service.log, [SECRET]);
  });

  it('a form body is read as JSON: a 400', async () => {
    const answer = await post(`name=x&password=${SECRET}`, 'application/x-www-form-urlencoded');
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 3);
    assertNoSecret(assert, answer, service.log, [SECRET]);
  });

  it('a CloudEvents batch of 2,000 events is one 400 at once, no test run', async () => {
    const events = Array.from({ length: 2000 }, (_, i) => ({
      specversion: '1.0',
      id: String(i),
      source: '/s',
      type: 't',
      data: { name: 'x', type: 'docker', categories: ['REGISTRY'], docker: { endpoint: 'registry.example', username: 'u', password: SECRET } },
    }));
    const started = performance.now();
    const answer = await post(JSON.stringify(events), 'application/cloudevents-batch+json');
    assert.equal(answer.status, 400);
    assert.equal(answer.json.message, 'invalid image integration: (body): must be a JSON object');
    assert.ok(performance.now() - started < 2000);
    assert.ok(!service.log.entries().some((e) => e.msg === 'testing image integration' && e.integration?.name === 'x'), 'no test was run');
    assertNoSecret(assert, answer, service.log, [SECRET]);
  });

  it('a binary CloudEvent is an ordinary request: its body is the ImageIntegration', async () => {
    const answer = await post('{}', 'application/json', { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't' });
    assert.equal(answer.status, 400);
    assert.match(answer.json.message, /^invalid image integration: name: is required/);
  });

  it('JSON sent as text/plain or without a type is still JSON', async () => {
    for (const type of ['text/plain', 'application/octet-stream']) {
      const answer = await post('{"name":"x"}', type);
      assert.equal(answer.status, 400, type);
      assert.match(answer.json.message, /invalid image integration|required/, type);
    }
  });
});

describe('the access token, checked before the body', () => {
  it('a request without the token is a 401 before its body is read; /metrics needs the token too', async () => {
    const service = await startService({ apiToken: 'the-right-token' });
    try {
      const big = JSON.stringify({ name: 'x'.repeat(2_000_000) });
      const started = performance.now();
      const refused = await request(service.url + PATH, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
      assert.equal(refused.status, 401, 'not 429: the token is checked first');
      assert.equal(refused.json.code, 16);
      assert.ok(performance.now() - started < 2000);
      assert.equal((await request(service.url + '/metrics')).status, 401);
      assert.equal((await request(service.url + '/metrics', { headers: { authorization: 'Bearer the-right-token' } })).status, 200);
      assert.equal((await request(service.url + '/health/liveness')).status, 200);
    } finally {
      await service.close();
    }
  });
});
