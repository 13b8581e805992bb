'use strict';
// Secrets and access: masking derived from the schema, redaction of every form a secret takes,
// and the optional bearer token.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { secretPaths } = require('../build/lib/schema.js');
const { maskSecrets, secretValues, Redactor } = require('../build/lib/secrets.js');
const { startService } = require('./service');

describe('secrets from the schema', () => {
  it('the secret fields are exactly the ones the schema marks', () => {
    assert.deepEqual(
      secretPaths()
        .map((p) => p.join('.'))
        .sort(),
      [
        'azure.password',
        'docker.password',
        'ecr.accessKeyId',
        'ecr.authorizationData.password',
        'ecr.secretAccessKey',
        'google.serviceAccount',
        'ibm.apiKey',
        'quay.oauthToken',
        'quay.registryRobotCredentials.password',
      ],
    );
  });

  it('maskSecrets replaces each secret (and unknown) field and leaves the rest', () => {
    const body = {
      name: 'n',
      ecr: { registryId: '1', accessKeyId: 'AKIA', secretAccessKey: 'sk', authorizationData: { username: 'AWS', password: 'pw' } },
      quay: { endpoint: 'q', oauthToken: 'tok', registryRobotCredentials: { username: 'bot', password: 'rp' } },
      docker: { endpoint: 'd', passwrd: 'typo' },
    };
    assert.deepEqual(maskSecrets(body), {
      name: 'n',
      ecr: { registryId: '1', accessKeyId: '******', secretAccessKey: '******', authorizationData: { username: 'AWS', password: '******' } },
      quay: { endpoint: 'q', oauthToken: '******', registryRobotCredentials: { username: 'bot', password: '******' } },
      docker: { endpoint: 'd', passwrd: '******' },
    });
    assert.deepEqual(secretValues(body).sort(), ['AKIA', 'pw', 'rp', 'sk', 'tok', 'typo']);
    assert.equal(body.ecr.secretAccessKey, 'sk', 'the request itself is untouched');
  });

  it('the redactor knows the forms a secret travels in', () => {
    const secret = 'p@ss w/rd"\n';
    const redactor = new Redactor([secret]);
    for (const form of [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1), Buffer.from(secret).toString('base64')]) {
      assert.equal(redactor.redact(`before ${form} after`), 'before ****** after', form);
    }
    assert.equal(redactor.redact('see https://user:anything@host/path'), 'see https://******@host/path');
    const nested = redactor.redactValue({ a: [`x${secret}`] });
    assert.deepEqual(nested, { a: ['x******'] });
  });
});

describe('access control with IMAGE_INTEGRATION_API_TOKEN', () => {
  let service;
  const token = 'api-token-4f9a1c7e';
  const body = { name: 'x', type: 'clair', categories: ['SCANNER'], clair: { endpoint: 'clair.example.com' } };
  before(async () => {
    service = await startService({ apiToken: token });
  });
  after(() => service.close());

  it('no Authorization header: 401, code 16, with a Bearer challenge', async () => {
    const res = await service.test(body);
    assert.equal(res.status, 401);
    assert.equal(res.json.code, 16);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
  });

  it('a wrong token, or another scheme: 401, code 16', async () => {
    for (const authorization of ['Bearer wrong-token', `Basic ${Buffer.from(`x:${token}`).toString('base64')}`, `Bearer ${token}x`, 'Bearer ']) {
      const res = await service.test(body, { authorization });
      assert.equal(res.status, 401, authorization);
      assert.equal(res.json.code, 16);
      assert.ok(!res.text.includes(token));
    }
  });

  it('the right token gets through to validation and the test', async () => {
    const res = await service.test({ ...body, name: '' }, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 400);
    assert.match(res.json.message, /name: is required/);
  });

  it('without a token the service warns at start', async () => {
    const open = await startService();
    await open.close();
    const warning = open.log.entries().find((e) => e.level === 40 && /IMAGE_INTEGRATION_API_TOKEN is not set/.test(e.msg));
    assert.ok(warning);
    assert.ok(!service.log.entries().some((e) => /IMAGE_INTEGRATION_API_TOKEN is not set/.test(e.msg)));
  });
});
