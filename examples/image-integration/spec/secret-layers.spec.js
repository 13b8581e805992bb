'use strict';
// Secrets behind stacked encodings, the service's own AWS identity, ignored field names, and
// guessed secrets too short to mask without garbling the service's own messages.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { Redactor } = require('../build/lib/secrets.js');
const { startService, assertNoSecret } = require('./service');

const PASSWORD = 'S3cr3t p@ss/w0rd';

describe('secrets behind stacked encodings', () => {
  const once = encodeURIComponent(PASSWORD);
  const jsonEscaped = JSON.stringify(PASSWORD).slice(1, -1).replace(/@/g, '\\u0040').replace(/\//g, '\\u002f');
  for (const [name, text] of [
    ['percent-encoded twice (a redirect URL inside a URL)', `next=${encodeURIComponent(`https://r/?p=${once}`)}`],
    ['Go JSON escapes, then percent-encoded', `q=${encodeURIComponent(jsonEscaped)}`],
    ['percent-encoded, then HTML entities', once.replace(/%/g, '&#37;')],
    ['HTML entities, then percent-encoded', encodeURIComponent(PASSWORD.replace(/@/g, '&#64;'))],
  ]) {
    it(`${name}: masked`, () => {
      const masked = new Redactor([PASSWORD]).redact(`error: ${text} end`);
      assert.match(masked, /\*\*\*\*\*\*/, masked);
      for (const piece of ['S3cr3t', 'w0rd']) assert.ok(!masked.includes(piece), masked);
    });
  }
});

describe('what the service itself must not show', () => {
  it("the service's own AWS credentials (useIam) are masked when a peer echoes them", async () => {
    const ecr = http.createServer((req, res) => {
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify({ __type: 'InvalidSignatureException', message: `echo: ${req.headers.authorization} ${req.headers['x-amz-security-token']}` }));
    });
    await new Promise((r) => ecr.listen(0, '127.0.0.1', r));
    const own = { accessKeyId: 'AKIAOWNSERVICEKEY01', secretAccessKey: 'own-secret-key-value', sessionToken: 'OwnSessionTokenFQoGZXIvYXdzEJr' };
    const service = await startService({ aws: { ecrEndpoint: `http://127.0.0.1:${ecr.address().port}/`, ownCredentials: own, allowIam: true } });
    try {
      const answer = await service.test({
        name: 'ecr',
        type: 'ecr',
        categories: ['REGISTRY'],
        ecr: { registryId: '123456789012', region: 'us-east-1', useIam: true },
      });
      assert.equal(answer.status, 400);
      assertNoSecret(assert, answer, service.log, [own.accessKeyId, own.sessionToken, own.secretAccessKey]);
    } finally {
      await service.close();
      ecr.close();
    }
  });

  it('an ignored field named like the password is logged masked', async () => {
    const service = await startService();
    try {
      const answer = await service.test({
        name: 'x',
        type: 'docker',
        categories: ['REGISTRY'],
        docker: { endpoint: 'http://127.0.0.1:9', insecure: true, username: 'u', password: 'Sekr1tZZZ', Sekr1tZZZ: 1 },
      });
      assertNoSecret(assert, answer, service.log, ['Sekr1tZZZ']);
    } finally {
      await service.close();
    }
  });

  it("one-letter values of ignored fields do not garble the service's messages", async () => {
    const service = await startService();
    try {
      const answer = await service.test({
        config: { name: 'a', type: 'docker', categories: ['REGISTRY'], docker: { endpoint: 'registry.example', username: 'e', password: 'p' } },
        updatePassword: true,
      });
      assert.equal(answer.status, 400);
      assert.match(answer.json.message, /\/v1\/imageintegrations\/test\/updated/);
      assert.doesNotMatch(answer.json.message, /\*\*\*\*\*\*/);
    } finally {
      await service.close();
    }
  });

  it("a service account's one-letter private_key or private_key_id is masked only where it stands alone", async () => {
    const service = await startService();
    try {
      for (const serviceAccount of ['{"client_email":"a@b.c","private_key":"k","private_key_id":"1"}', '{"client_email":"a@b.c","private_key":"c"}']) {
        const answer = await service.test({
          name: 'g',
          type: 'artifactregistry',
          categories: ['SCANNER'],
          google: { endpoint: 'x', project: 'p', serviceAccount },
        });
        assert.equal(answer.status, 400);
        assert.equal(answer.json.message, "invalid image integration: categories[0]: a 'artifactregistry' integration cannot be SCANNER; it can be REGISTRY");
      }
    } finally {
      await service.close();
    }
  });
});
