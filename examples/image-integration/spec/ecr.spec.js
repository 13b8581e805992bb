'use strict';
// ECR: GetAuthorizationToken (SigV4) and STS AssumeRole against peers that follow AWS's APIs
// and check the signature, then the registry login against a real registry over TLS.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { signV4 } = require('../build/lib/sigv4.js');
const { startRegistry, startPeer } = require('./peers');
const { startService, assertNoSecret } = require('./service');

const KEYS = { AKIAREALKEY: 'real-secret-access-key-0123456789', ASIATEMPKEY: 'temporary-secret-key-abcdef' };
const SESSION = 'temporary-session-token-xyz';
const REGISTRY_PASSWORD = 'ecr-registry-password-from-token';

// Recomputes the signature of a request the way AWS does, with the secret it knows.
function verifySignature(req, body, service) {
  const auth = req.headers.authorization ?? '';
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return 'IncompleteSignatureException';
  const [, keyId, , region, signedService, signedHeaders] = m;
  if (!(keyId in KEYS)) return 'UnrecognizedClientException';
  if (signedService !== service) return 'InvalidSignatureException';
  if (keyId === 'ASIATEMPKEY' && req.headers['x-amz-security-token'] !== SESSION) return 'UnrecognizedClientException';
  const date = req.headers['x-amz-date'];
  const now = new Date(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`);
  const headers = {};
  for (const name of signedHeaders.split(';')) if (!['host', 'x-amz-date', 'x-amz-security-token'].includes(name)) headers[name] = req.headers[name];
  const expected = signV4({
    method: req.method,
    url: new URL(req.url, `http://${req.headers.host}`),
    headers,
    body,
    region,
    service,
    credentials: { accessKeyId: keyId, secretAccessKey: KEYS[keyId], sessionToken: req.headers['x-amz-security-token'] },
    now,
  });
  return expected.authorization === auth ? undefined : 'InvalidSignatureException';
}

describe('ECR', () => {
  let registry;
  let ecrApi;
  let sts;
  let service;
  const bodies = [];
  const stsCalls = [];
  before(async () => {
    registry = await startRegistry({ auth: 'htpasswd', tls: true, users: { AWS: REGISTRY_PASSWORD } });
    ecrApi = await startPeer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        bodies.push(body);
        const problem =
          req.headers['x-amz-target'] === 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken'
            ? verifySignature(req, body, 'ecr')
            : 'UnknownOperationException';
        if (problem) {
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
          return res.end(JSON.stringify({ __type: problem, message: `rejected: ${problem}` }));
        }
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(
          JSON.stringify({
            authorizationData: [
              {
                authorizationToken: Buffer.from(`AWS:${REGISTRY_PASSWORD}`).toString('base64'),
                expiresAt: Date.now() / 1000 + 3600,
                proxyEndpoint: registry.url,
              },
            ],
          }),
        );
      });
    });
    sts = await startPeer((req, res) => {
      stsCalls.push(new URL(req.url, 'http://x').searchParams);
      const problem = verifySignature(req, '', 'sts');
      const url = new URL(req.url, 'http://x');
      if (
        problem ||
        url.searchParams.get('Action') !== 'AssumeRole' ||
        url.searchParams.get('RoleArn') !== 'arn:aws:iam::123456789012:role/puller' ||
        url.searchParams.get('ExternalId') !== 'ext-42'
      ) {
        res.writeHead(403, { 'content-type': 'text/xml' });
        return res.end(
          `<ErrorResponse><Error><Type>Sender</Type><Code>${problem ?? 'AccessDenied'}</Code><Message>not allowed</Message></Error></ErrorResponse>`,
        );
      }
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(`<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>
        <AccessKeyId>ASIATEMPKEY</AccessKeyId><SecretAccessKey>${KEYS.ASIATEMPKEY}</SecretAccessKey><SessionToken>${SESSION}</SessionToken>
        <Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`);
    });
    service = await startService({
      limits: { ca: [registry.ca] },
      aws: { ecrEndpoint: ecrApi.url + '/', stsEndpoint: sts.url + '/', registryEndpoint: registry.url, allowIam: true, allowAssumeRole: true },
    });
  });
  after(async () => {
    await service.close();
    await Promise.all([registry.close(), ecrApi.close(), sts.close()]);
  });

  const ecr = (config) => ({ name: 'ecr', type: 'ecr', categories: ['REGISTRY'], ecr: { registryId: '123456789012', region: 'us-east-1', ...config } });

  it('access keys: a signed GetAuthorizationToken, then the registry login with the token', async () => {
    const res = await service.test(ecr({ accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY }));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(JSON.parse(bodies.at(-1)), { registryIds: ['123456789012'] });
  });

  it('a wrong secret key is rejected by AWS, with the reason and without the secret', async () => {
    const res = await service.test(ecr({ accessKeyId: 'AKIAREALKEY', secretAccessKey: 'not-the-secret-key-000' }));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^authentication: ECR GetAuthorizationToken answered HTTP 400 \(InvalidSignatureException: /);
    assertNoSecret(assert, res, service.log, ['not-the-secret-key-000', 'AKIAREALKEY']);
  });

  it('an unknown access key is rejected', async () => {
    const res = await service.test(ecr({ accessKeyId: 'AKIAUNKNOWN', secretAccessKey: 'whatever-secret' }));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /UnrecognizedClientException/);
  });

  it("assume role: the role named in the registry's account, with the external id; STS credentials (with a session token) sign the ECR call", async () => {
    const role = (assumeRoleId) =>
      ecr({ accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY, useAssumeRole: true, assumeRoleId, assumeRoleExternalId: 'ext-42' });
    const res = await service.test(role('puller'));
    assert.equal(res.status, 200, res.text);
    assert.equal(stsCalls.at(-1).get('RoleArn'), 'arn:aws:iam::123456789012:role/puller');
    assert.equal(stsCalls.at(-1).get('ExternalId'), 'ext-42');
    const denied = await service.test(role('other'));
    assert.equal(denied.status, 400);
    assert.match(denied.json.message, /^authentication: STS AssumeRole answered HTTP 403 \(AccessDenied: not allowed\)/);
    assertNoSecret(assert, denied, service.log, [KEYS.ASIATEMPKEY, SESSION, KEYS.AKIAREALKEY]);
  });

  it("endpoint is the ECR API's (a VPC endpoint): GetAuthorizationToken is signed for it and sent there; the registry tested is the account's, and the endpoint never gets its token", async () => {
    const vpce = await startPeer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const problem = verifySignature(req, body, 'ecr');
        res.writeHead(problem ? 400 : 200, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(
          JSON.stringify(
            problem ? { __type: problem } : { authorizationData: [{ authorizationToken: Buffer.from(`AWS:${REGISTRY_PASSWORD}`).toString('base64') }] },
          ),
        );
      });
    });
    try {
      const regional = bodies.length;
      const res = await service.test(ecr({ accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY, endpoint: vpce.url }));
      assert.equal(res.status, 200, res.text);
      assert.equal(bodies.length, regional, 'the default ECR API was not called');
      assert.deepEqual(
        vpce.received.map((r) => [r.method, r.headers['x-amz-target']]),
        [['POST', 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken']],
      );
      assert.ok(!vpce.received.some((r) => /^Basic /.test(r.headers.authorization ?? '')), 'no registry credentials went to the endpoint');
    } finally {
      await vpce.close();
    }
  });

  it('useAssumeRole with an endpoint is a 400 before any AWS call, as StackRox refuses it', async () => {
    const calls = stsCalls.length;
    const tokens = bodies.length;
    const res = await service.test(
      ecr({
        accessKeyId: 'AKIAREALKEY',
        secretAccessKey: KEYS.AKIAREALKEY,
        useAssumeRole: true,
        assumeRoleId: 'puller',
        endpoint: 'vpce-0a1b.api.ecr.us-east-1.vpce.amazonaws.com',
      }),
    );
    assert.equal(res.status, 400);
    assert.equal(res.json.details[0].fieldViolations.find((v) => v.field === 'ecr.endpoint').description, 'AssumeRole cannot be done with an endpoint defined');
    assert.equal(stsCalls.length, calls);
    assert.equal(bodies.length, tokens);
  });

  it('authorizationData logs in directly; an expired one is refused', async () => {
    const later = '2099-01-01T00:00:00Z';
    assert.equal((await service.test(ecr({ authorizationData: { username: 'AWS', password: REGISTRY_PASSWORD, expiresAt: later } }))).status, 200);
    const wrong = await service.test(ecr({ authorizationData: { username: 'AWS', password: 'stale-ecr-password', expiresAt: later } }));
    assert.equal(wrong.status, 400);
    assert.match(wrong.json.message, /rejected the credentials/);
    assertNoSecret(assert, wrong, service.log, ['stale-ecr-password']);
    const expired = await service.test(ecr({ authorizationData: { username: 'AWS', password: REGISTRY_PASSWORD, expiresAt: '2020-01-01T00:00:00Z' } }));
    assert.equal(expired.status, 400);
    assert.match(expired.json.message, /authorizationData expired at 2020-01-01T00:00:00Z/);
  });

  // ecr.go sanitizeConfiguration.
  it('without access keys, authorizationData needs expiresAt: a 400 before anything is contacted', async () => {
    const tokens = bodies.length;
    const res = await service.test(ecr({ authorizationData: { username: 'AWS', password: 'no-expiry-ecr-password' } }));
    assert.equal(res.status, 400);
    assert.deepEqual(res.json.details[0].fieldViolations, [
      { field: 'ecr.authorizationData.expiresAt', description: 'is required with authorizationData: when the token expires' },
    ]);
    assert.equal(bodies.length, tokens);
    assertNoSecret(assert, res, service.log, ['no-expiry-ecr-password']);
  });

  it('authorizationData is dropped when access keys are given: the keys get the token, the authorizationData is never sent', async () => {
    const tokens = bodies.length;
    const res = await service.test(
      ecr({
        accessKeyId: 'AKIAREALKEY',
        secretAccessKey: KEYS.AKIAREALKEY,
        authorizationData: { username: 'AWS', password: 'dropped-ecr-password', expiresAt: '2020-01-01T00:00:00Z' },
      }),
    );
    assert.equal(res.status, 200, res.text);
    assert.equal(bodies.length, tokens + 1, 'GetAuthorizationToken was called');
    // Not used, still a secret: masked in the log line of the request.
    assertNoSecret(assert, res, service.log, ['dropped-ecr-password']);
    const incomplete = await service.test(ecr({ accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY, authorizationData: { username: 'AWS' } }));
    assert.equal(incomplete.status, 200, incomplete.text);
  });

  it('an endpoint with a malformed % escape is a 400, never a 500, and no AWS call is made', async () => {
    const tokens = bodies.length;
    for (const endpoint of ['vpce.example.com/%zz', 'https://vpce.example.com/a%2', 'https://vpce%.example.com']) {
      const res = await service.test(ecr({ accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY, endpoint }));
      assert.equal(res.status, 400, `${endpoint}: ${res.text}`);
      assert.deepEqual(res.json.details[0].fieldViolations, [
        { field: 'ecr.endpoint', description: 'has a malformed percent-escape (a % must be followed by two hex digits)' },
      ]);
    }
    assert.equal(bodies.length, tokens);
    // The signer itself never throws on one (an operator's override could hold it).
    const headers = signV4({
      method: 'POST',
      url: new URL('https://vpce.example.com/%zz'),
      region: 'us-east-1',
      service: 'ecr',
      credentials: { accessKeyId: 'a', secretAccessKey: 's' },
    });
    assert.match(headers.authorization, /^AWS4-HMAC-SHA256 /);
  });

  it("useIam uses this service's own credentials, and says so when it has none", async () => {
    const withIam = await startService({
      limits: { ca: [registry.ca] },
      aws: {
        ecrEndpoint: ecrApi.url + '/',
        registryEndpoint: registry.url,
        ownCredentials: { accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY },
        allowIam: true,
      },
    });
    const elsewhere = require('node:http').createServer((req, res) => {
      elsewhere.seen = (elsewhere.seen ?? 0) + 1;
      res.end();
    });
    await new Promise((r) => elsewhere.listen(0, '127.0.0.1', r));
    try {
      assert.equal((await withIam.test(ecr({ useIam: true }))).status, 200);
      // The caller names another ECR API: nothing signed with the service's identity goes there.
      const redirected = await withIam.test(ecr({ useIam: true, endpoint: `https://127.0.0.1:${elsewhere.address().port}` }));
      assert.equal(redirected.status, 400);
      assert.match(redirected.json.message, /with useIam this service's own identity signs only for AWS's ECR API/);
      assert.equal(elsewhere.seen ?? 0, 0, 'the other endpoint received nothing');
    } finally {
      await withIam.close();
      elsewhere.close();
    }
    const res = await service.test(ecr({ useIam: true }));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /useIam needs AWS credentials of this service/);
  });

  it('useIam and useAssumeRole are off unless the operator turns them on', async () => {
    const plain = await startService({
      limits: { ca: [registry.ca] },
      aws: {
        ecrEndpoint: ecrApi.url + '/',
        stsEndpoint: sts.url + '/',
        registryEndpoint: registry.url,
        ownCredentials: { accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY },
      },
    });
    try {
      const iam = await plain.test(ecr({ useIam: true }));
      assert.equal(iam.status, 400);
      assert.match(iam.json.message, /IMAGE_INTEGRATION_ALLOW_ECR_IAM/);
      const role = await plain.test(
        ecr({ accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY, useAssumeRole: true, assumeRoleId: 'puller', assumeRoleExternalId: 'ext-42' }),
      );
      assert.equal(role.status, 400);
      assert.match(role.json.message, /IMAGE_INTEGRATION_ALLOW_ECR_ASSUME_ROLE/);
    } finally {
      await plain.close();
    }
  });

  it('the default AWS endpoints follow the region; overrides win', () => {
    const { awsEndpoint } = require('../build/lib/ecr.js');
    assert.equal(awsEndpoint('ecr', 'eu-west-3', {}).href, 'https://api.ecr.eu-west-3.amazonaws.com/');
    assert.equal(awsEndpoint('sts', 'eu-west-3', {}).href, 'https://sts.eu-west-3.amazonaws.com/');
    assert.equal(awsEndpoint('ecr', 'eu-west-3', { ecrEndpoint: 'https://vpce.example/' }).href, 'https://vpce.example/');
  });
});

/** An ECR test whose ECR API and STS are `answer` (a peer, both closed after the test): the service and its answer. */
async function againstAws(t, answer, ecr) {
  const api = await startPeer((req, res) => {
    req.resume();
    answer(req, res);
  });
  const service = await startService({ aws: { ecrEndpoint: `${api.url}/`, stsEndpoint: `${api.url}/`, allowAssumeRole: true } });
  t.after(async () => {
    await service.close();
    await api.close();
  });
  const res = await service.test({
    name: 'ecr',
    type: 'ecr',
    categories: ['REGISTRY'],
    ecr: { registryId: '123456789012', region: 'us-east-1', accessKeyId: 'AKIAREALKEY', ...ecr },
  });
  return { service, res };
}

describe("an AWS API's error is quoted as any peer text: masked, on one line, at most 160 characters", () => {
  const SECRET_KEY = 'the-secret-access-key-42';
  const long = `line one ${SECRET_KEY}\nline two\r\n${'A'.repeat(60_000)}`;
  const answers = {
    'the ECR API (JSON: __type and message)': [400, JSON.stringify({ __type: 'com.amazon.coral.service#UnrecognizedClientException', message: long })],
    'an XML error (Code and Message)': [403, `<ErrorResponse><Error><Code>InvalidClientTokenId</Code><Message>${long}</Message></Error></ErrorResponse>`],
  };
  for (const [what, [status, body]] of Object.entries(answers)) {
    it(what, async (t) => {
      const { service, res } = await againstAws(
        t,
        (req, res) => {
          res.writeHead(status);
          res.end(body);
        },
        { secretAccessKey: SECRET_KEY },
      );
      assert.equal(res.status, 400);
      const m = /^authentication: ECR GetAuthorizationToken answered HTTP \d+ \((.*)\)$/.exec(res.json.message);
      assert.ok(m, res.json.message);
      assert.match(m[1], /^(UnrecognizedClientException|InvalidClientTokenId): line one \*\*\*\*\*\* line two A+\.\.\.$/);
      assert.ok(m[1].length <= 163, `${m[1].length} characters quoted`);
      assertNoSecret(assert, res, service.log, [SECRET_KEY]);
      const failed = service.log.entries().find((line) => line.msg === 'image integration test failed');
      assert.equal(failed.reason, res.json.message);
    });
  }
});

describe('a SigV4 signature is replayable while fresh: an AWS endpoint that echoes the Authorization header gets it masked', () => {
  for (const [what, call, ecr] of [
    ['GetAuthorizationToken', 'ECR GetAuthorizationToken', {}],
    ['STS AssumeRole', 'STS AssumeRole', { useAssumeRole: true, assumeRoleId: 'puller' }],
  ]) {
    it(what, async (t) => {
      const signatures = [];
      const { service, res } = await againstAws(
        t,
        (req, res) => {
          const authorization = req.headers.authorization ?? '';
          signatures.push(/Signature=([0-9a-f]{64})/.exec(authorization)?.[1]);
          res.writeHead(403, { 'content-type': 'text/plain' });
          res.end(`denied: ${authorization}`);
        },
        { secretAccessKey: 'the-secret-access-key-42', ...ecr },
      );
      assert.equal(res.status, 400);
      assert.match(res.json.message, new RegExp(`^authentication: ${call} answered HTTP 403 \\(denied: AWS4-HMAC-SHA256 .*Signature=\\*{6}`));
      assert.equal(signatures.length, 1);
      assert.ok(signatures[0], 'the request was signed');
      assertNoSecret(assert, res, service.log, [signatures[0]]);
    });
  }
});

describe('what the ECR API and STS hand over is checked before it is used: a 400 naming the call, never a 500', () => {
  const ecr = (config) => ({ name: 'ecr', type: 'ecr', categories: ['REGISTRY'], ecr: { registryId: '123456789012', region: 'us-east-1', ...config } });
  const keys = { accessKeyId: 'AKIAREALKEY', secretAccessKey: KEYS.AKIAREALKEY };

  const tokens = { 'a number': 12345, 'an object': { a: 1 }, 'a list': [65, 58, 66], true: true };
  for (const [kind, token] of Object.entries(tokens)) {
    it(`an authorizationToken that is ${kind}`, async (t) => {
      const api = await startPeer((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify({ authorizationData: [{ authorizationToken: token }] }));
      });
      const service = await startService({ aws: { ecrEndpoint: `${api.url}/` } });
      t.after(async () => {
        await service.close();
        await api.close();
      });
      const res = await service.test(ecr(keys));
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.message, `unexpected answer: ECR GetAuthorizationToken returned an authorization token that is ${kind}, not a string`);
      assert.ok(!service.log.text().includes('failed unexpectedly'), service.log.text());
    });
  }

  it('STS credentials whose session token holds a line break', async (t) => {
    let ecrCalls = 0;
    const sts = await startPeer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(
        `<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIATEMPKEY</AccessKeyId><SecretAccessKey>${KEYS.ASIATEMPKEY}</SecretAccessKey><SessionToken>abc&#10;X-Injected: 1</SessionToken></Credentials></AssumeRoleResult></AssumeRoleResponse>`,
      );
    });
    const api = await startPeer((req, res) => {
      ecrCalls++;
      res.writeHead(500);
      res.end();
    });
    const service = await startService({ aws: { stsEndpoint: `${sts.url}/`, ecrEndpoint: `${api.url}/`, allowAssumeRole: true } });
    t.after(async () => {
      await service.close();
      await Promise.all([sts.close(), api.close()]);
    });
    const res = await service.test(ecr({ ...keys, useAssumeRole: true, assumeRoleId: 'puller' }));
    assert.equal(res.status, 400, res.text);
    assert.equal(
      res.json.message,
      'unexpected answer: STS AssumeRole returned an access key id or a session token that cannot be sent in a header (it holds a space, a control character or a character outside ASCII)',
    );
    assert.equal(ecrCalls, 0);
    assert.ok(!service.log.text().includes('failed unexpectedly'), service.log.text());
  });

  it("an integration's access key id with a line break or a character outside ASCII, before any call", async (t) => {
    let calls = 0;
    const api = await startPeer((req, res) => {
      calls++;
      res.writeHead(500);
      res.end();
    });
    const service = await startService({ aws: { ecrEndpoint: `${api.url}/` } });
    t.after(async () => {
      await service.close();
      await api.close();
    });
    for (const accessKeyId of ['AKIA\nX', 'AKIA\u2603']) {
      const res = await service.test(ecr({ ...keys, accessKeyId }));
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.message, /^authentication: the access key id cannot be sent in a header/);
    }
    assert.equal(calls, 0);
    assert.ok(!service.log.text().includes('failed unexpectedly'), service.log.text());
  });
});
