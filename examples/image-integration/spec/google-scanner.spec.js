'use strict';
// Google as SCANNER, tested as StackRox tests it (pkg/scanners/google): the project is required and
// workload identity refused before any call; the service account's token, got from a token
// endpoint that verifies the signed JWT as Google's does, lists one note of the project in
// Container Analysis. The registry is not what is tested.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { startPeer } = require('./peers');
const { startService, assertNoSecret } = require('./service');

const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const KEY_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' });
const EMAIL = 'scanner@spec-project.iam.gserviceaccount.com';
const ACCESS_TOKEN = 'ya29.spec-access-token-0123456789';
const account = (extra = {}) =>
  JSON.stringify({ type: 'service_account', project_id: 'spec-project', private_key_id: 'k1', private_key: KEY_PEM, client_email: EMAIL, ...extra });

/** Why a JWT bearer assertion is refused, as Google's token endpoint checks it; undefined when it is good. */
function refused(assertion, audience) {
  const [header, claims, signature] = String(assertion).split('.');
  if (!crypto.verify('RSA-SHA256', Buffer.from(`${header}.${claims}`), publicKey, Buffer.from(signature ?? '', 'base64url')))
    return 'invalid_grant: Invalid JWT Signature.';
  const c = JSON.parse(Buffer.from(claims, 'base64url').toString());
  const now = Date.now() / 1000;
  if (c.iss !== EMAIL || c.aud !== audience || !String(c.scope).includes('cloud-platform') || c.exp < now || c.iat > now + 60)
    return 'invalid_grant: bad claims';
  return undefined;
}

describe('Google as SCANNER: Container Analysis for the project', () => {
  let tokens;
  let analysis;
  let service;
  before(async () => {
    tokens = await startPeer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const why =
          form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer'
            ? refused(form.get('assertion'), `${tokens.url}/token`)
            : 'unsupported_grant_type';
        res.writeHead(why ? 400 : 200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(why ? { error: why.split(':')[0], error_description: why } : { access_token: ACCESS_TOKEN, token_type: 'Bearer', expires_in: 3599 }),
        );
      });
    });
    analysis = await startPeer((req, res) => {
      const url = new URL(req.url, 'http://x');
      if (req.headers.authorization !== `Bearer ${ACCESS_TOKEN}`) {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end('{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}');
      }
      if (url.pathname !== '/v1beta1/projects/spec-project/notes' || url.searchParams.get('pageSize') !== '1') {
        res.writeHead(403, { 'content-type': 'application/json' });
        return res.end('{"error":{"code":403,"message":"Permission denied on resource project.","status":"PERMISSION_DENIED"}}');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"notes":[]}');
    });
    service = await startService({ google: { tokenEndpoint: `${tokens.url}/token`, containerAnalysisEndpoint: `${analysis.url}/` } });
  });
  after(async () => {
    await service.close();
    await Promise.all([tokens.close(), analysis.close()]);
  });

  const scanner = (google) => ({
    name: 'gcr',
    type: 'google',
    categories: ['SCANNER'],
    google: { endpoint: 'gcr.io', serviceAccount: account(), project: 'spec-project', ...google },
  });

  it("lists the project's notes with the service account's token; the registry is not contacted", async () => {
    const res = await service.test(scanner());
    assert.equal(res.status, 200, res.text);
    assert.equal(analysis.received.length, 1);
    assertNoSecret(assert, res, service.log, [ACCESS_TOKEN, KEY_PEM.split('\n')[1]]);
  });

  it("a project it may not read fails the test, with Google's reason and no token", async () => {
    const res = await service.test(scanner({ project: 'other-project' }));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^authentication: Container Analysis answered HTTP 403 listing the notes of project other-project: .*Permission denied/);
    assertNoSecret(assert, res, service.log, [ACCESS_TOKEN]);
  });

  it('a key the token endpoint does not accept fails at the token, and the signed assertion appears nowhere', async () => {
    const other = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    const res = await service.test(scanner({ serviceAccount: account({ private_key: other }) }));
    assert.equal(res.status, 400);
    assert.match(
      res.json.message,
      /^authentication: Google's token endpoint refused the service account scanner@spec-project\.iam\.gserviceaccount\.com \(HTTP 400\)/,
    );
    assert.ok(!/eyJ[\w-]+\.eyJ/.test(res.text + service.log.text()), 'no JWT in the answer or the log');
  });

  it("the key's own token_uri is never used: the assertion goes to the operator's token endpoint only", async () => {
    const trap = await startPeer((req, res) => res.end('{}'));
    try {
      const res = await service.test(scanner({ serviceAccount: account({ token_uri: `${trap.url}/token` }) }));
      assert.equal(res.status, 200, res.text);
      assert.equal(trap.received.length, 0);
    } finally {
      await trap.close();
    }
  });

  it('the project is required and workload identity refused, before any call', async () => {
    const calls = tokens.received.length;
    const fields = async (google) => (await service.test(scanner(google))).json.details[0].fieldViolations.map((v) => v.field).sort();
    assert.deepEqual(await fields({ project: '' }), ['google.project']);
    assert.deepEqual(await fields({ wifEnabled: true, serviceAccount: '' }), ['google.wifEnabled']);
    assert.equal(tokens.received.length, calls);
  });
});

describe("Google's access token is checked before it is sent", () => {
  it('one with a line break is a 400 naming the token endpoint, never a 500, and is never sent', async (t) => {
    const tokens = await startPeer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 'ya29.abc\r\nX-Injected: 1', token_type: 'Bearer' }));
    });
    const analysis = await startPeer((req, res) => res.end('{"notes":[]}'));
    const service = await startService({ google: { tokenEndpoint: `${tokens.url}/token`, containerAnalysisEndpoint: `${analysis.url}/` } });
    t.after(async () => {
      await service.close();
      await Promise.all([tokens.close(), analysis.close()]);
    });
    const res = await service.test({
      name: 'g',
      type: 'google',
      categories: ['SCANNER'],
      google: { endpoint: 'gcr.io', project: 'spec-project', serviceAccount: account() },
    });
    assert.equal(res.status, 400, res.text);
    assert.equal(
      res.json.message,
      "authentication: Google's token endpoint answered with an access token that cannot be sent in a header (it holds a space, a control character or a character outside ASCII)",
    );
    assert.equal(analysis.received.length, 0);
    assert.ok(!service.log.text().includes('failed unexpectedly'), service.log.text());
  });
});
