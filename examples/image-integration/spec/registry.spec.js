'use strict';
// Registry checks against a real Docker Distribution registry (htpasswd, token and TLS) and
// against peers that misbehave.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const { execFileSync } = require('node:child_process');
const { startRegistry, startPeer, startSilent, freePort, certificate, scratch } = require('./peers');
const { startService, assertNoSecret } = require('./service');

const PASSWORD = 'Corr3ct-H0rse-Battery';
const WRONG = 'Wr0ng-Passw0rd-Staple';

const docker = (endpoint, extra = {}) => ({
  name: 'spec registry',
  type: 'docker',
  categories: ['REGISTRY'],
  docker: { endpoint, username: 'alice', password: PASSWORD, insecure: true, ...extra },
});

describe('docker registry with htpasswd (Basic) auth', () => {
  let registry;
  let service;
  before(async () => {
    registry = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD } });
    service = await startService();
  });
  after(async () => {
    await service.close();
    await registry.close();
  });

  it('right credentials pass: 200 {}', async () => {
    const res = await service.test(docker(registry.url));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {});
  });

  it('a wrong password fails with an authentication message, and the secret never leaves', async () => {
    const res = await service.test(docker(registry.url, { password: WRONG }));
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 3);
    assert.match(res.json.message, /^authentication: 127\.0\.0\.1:\d+ rejected the credentials \(HTTP 401\)/);
    assert.equal(res.json.error, res.json.message);
    assert.deepEqual(res.json.details, []);
    assertNoSecret(assert, res, service.log, [WRONG, Buffer.from(`alice:${WRONG}`).toString('base64')]);
  });

  it('a wrong user fails the same way', async () => {
    const res = await service.test(docker(registry.url, { username: 'mallory' }));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^authentication: .* rejected the credentials/);
    assertNoSecret(assert, res, service.log, [PASSWORD]);
  });

  it('no credentials: the registry requires them', async () => {
    const res = await service.test(docker(registry.url, { username: undefined, password: undefined }));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^authentication: .* requires credentials/);
  });

  it('an http:// endpoint is used as typed, with or without insecure, as StackRox uses it: the credentials are checked', async () => {
    assert.equal((await service.test(docker(registry.url, { insecure: false }))).status, 200);
    const wrong = await service.test(docker(registry.url, { insecure: false, password: WRONG }));
    assert.equal(wrong.status, 400);
    assert.match(wrong.json.message, /rejected the credentials/);
    // Without a scheme it is https: a plain HTTP registry does not answer in TLS.
    const tls = await service.test(docker(registry.hostPort, { insecure: true }));
    assert.equal(tls.status, 400);
    assert.match(tls.json.message, /did not answer in TLS; for a plain HTTP endpoint write http:\/\//);
  });

  it('the request is logged with its secrets masked', async () => {
    await service.test(docker(registry.url));
    const line = service.log.entries().find((e) => e.msg === 'testing image integration');
    assert.equal(line.integration.docker.password, '******');
    assert.equal(line.integration.docker.username, 'alice');
    assertNoSecret(assert, { text: '' }, service.log, [PASSWORD]);
  });
});

describe('docker registry with token auth', () => {
  let registry;
  let service;
  before(async () => {
    // Over TLS: the token server is another origin, where credentials go over https only.
    registry = await startRegistry({
      tls: true,
      auth: 'token',
      users: { alice: PASSWORD, iamapikey: 'ibm-api-key-0123', $oauthtoken: 'quay-oauth-token', 'org+robot': 'robot-token-xyz', _json_key: '' },
    });
    service = await startService();
  });
  after(async () => {
    await service.close();
    await registry.close();
  });

  it('right credentials pass through the Bearer challenge and the token server', async () => {
    const res = await service.test(docker(registry.url));
    assert.equal(res.status, 200, res.text);
    const tokenRequest = registry.tokenServer.requests.at(-1);
    assert.match(tokenRequest.url, /service=spec-registry/);
    assert.equal(tokenRequest.authorization, `Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}`);
  });

  it('a wrong password is rejected by the token server', async () => {
    const res = await service.test(docker(registry.url, { password: WRONG }));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^authentication: the token service at 127\.0\.0\.1:\d+ rejected the credentials \(HTTP 401\)/);
    assertNoSecret(assert, res, service.log, [WRONG]);
  });

  it('quay: robot credentials are really checked; $oauthtoken is used without them', async () => {
    // A robot account is for the registry alone (quay.go validate()); an OAuth token for both.
    const quay = (config) => ({
      name: 'quay',
      type: 'quay',
      categories: config.oauthToken ? ['REGISTRY', 'SCANNER'] : ['REGISTRY'],
      quay: { endpoint: registry.url, insecure: true, ...config },
    });
    assert.equal((await service.test(quay({ registryRobotCredentials: { username: 'org+robot', password: 'robot-token-xyz' } }))).status, 200);
    const wrongRobot = await service.test(quay({ registryRobotCredentials: { username: 'org+robot', password: 'not-the-token' } }));
    assert.equal(wrongRobot.status, 400);
    assert.match(wrongRobot.json.message, /rejected the credentials/);
    assert.equal((await service.test(quay({ oauthToken: 'quay-oauth-token' }))).status, 200);
    const wrongToken = await service.test(quay({ oauthToken: 'stale-oauth-token' }));
    assert.equal(wrongToken.status, 400);
    assertNoSecret(assert, wrongToken, service.log, ['not-the-token', 'stale-oauth-token']);
  });
});

describe('registries without an insecure flag (google, ibm, azure), over verified TLS', () => {
  const account = JSON.stringify({
    type: 'service_account',
    project_id: 'spec',
    private_key_id: 'abcdef0123456789abcdef0123456789abcdef01',
    private_key: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7spec0key0line\n-----END PRIVATE KEY-----\n',
    client_email: 'puller@spec.iam.gserviceaccount.com',
  });
  const changed = account.replace('spec0key0line', 'spec0key0LINE');
  let registry;
  let service;
  before(async () => {
    registry = await startRegistry({
      auth: 'token',
      tls: true,
      users: { _json_key: account, iamapikey: 'ibm-api-key-0123', alice: PASSWORD, '': 'acr-refresh-token-0123' },
    });
    // The spec's certificate is trusted the way IMAGE_INTEGRATION_CA_FILE makes one trusted.
    service = await startService({ limits: { ca: [registry.ca] } });
  });
  after(async () => {
    await service.close();
    await registry.close();
  });

  it('google logs in as _json_key with the whole service account; a changed key fails', async () => {
    const google = (serviceAccount, type = 'google') => ({
      name: 'gcr',
      type,
      categories: ['REGISTRY'],
      google: { endpoint: registry.hostPort, serviceAccount },
    });
    assert.equal((await service.test(google(account))).status, 200);
    assert.equal((await service.test(google(account, 'artifactregistry'))).status, 200);
    const wrong = await service.test(google(changed));
    assert.equal(wrong.status, 400);
    assert.match(wrong.json.message, /rejected the credentials/);
    assertNoSecret(assert, wrong, service.log, [account, changed, 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7spec0key0LINE']);
  });

  it('ibm logs in as iamapikey with the API key', async () => {
    const ibm = (apiKey) => ({ name: 'icr', type: 'ibm', categories: ['REGISTRY'], ibm: { endpoint: registry.hostPort, apiKey } });
    assert.equal((await service.test(ibm('ibm-api-key-0123'))).status, 200);
    const wrong = await service.test(ibm('ibm-api-key-9999'));
    assert.equal(wrong.status, 400);
    assertNoSecret(assert, wrong, service.log, ['ibm-api-key-9999']);
  });

  it('azure logs in with username and password, with its own config or the older docker one', async () => {
    const viaAzure = { name: 'acr', type: 'azure', categories: ['REGISTRY'], azure: { endpoint: registry.hostPort, username: 'alice', password: PASSWORD } };
    assert.equal((await service.test(viaAzure)).status, 200);
    const viaDocker = { name: 'acr', type: 'azure', categories: ['REGISTRY'], docker: { endpoint: registry.hostPort, username: 'alice', password: PASSWORD } };
    assert.equal((await service.test(viaDocker)).status, 200);
    const wrong = await service.test({ ...viaAzure, azure: { ...viaAzure.azure, password: WRONG } });
    assert.equal(wrong.status, 400);
  });

  it('azure without a user name sends the token as the password, with an empty user name, as StackRox does', async () => {
    const acr = (password) => ({ name: 'acr', type: 'azure', categories: ['REGISTRY'], azure: { endpoint: registry.hostPort, password } });
    const seen = registry.tokenServer.requests.length;
    assert.equal((await service.test(acr('acr-refresh-token-0123'))).status, 200);
    const sent = registry.tokenServer.requests
      .slice(seen)
      .map((r) => r.authorization)
      .filter(Boolean);
    assert.ok(sent.includes(`Basic ${Buffer.from(':acr-refresh-token-0123').toString('base64')}`), sent.join(' '));
    const wrong = await service.test(acr('acr-refresh-token-9999'));
    assert.equal(wrong.status, 400);
    assertNoSecret(assert, wrong, service.log, ['acr-refresh-token-9999']);
  });

  it('wifEnabled cannot be tested here, and says so', async () => {
    const res = await service.test({ name: 'acr', type: 'azure', categories: ['REGISTRY'], azure: { endpoint: registry.hostPort, wifEnabled: true } });
    assert.equal(res.status, 400);
    assert.match(res.json.message, /workload identity/);
  });

  it('without the trusted certificate the same registry fails TLS verification', async () => {
    const untrusting = await startService();
    try {
      const res = await untrusting.test({
        name: 'icr',
        type: 'ibm',
        categories: ['REGISTRY'],
        ibm: { endpoint: registry.hostPort, apiKey: 'ibm-api-key-0123' },
      });
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^TLS: /);
    } finally {
      await untrusting.close();
    }
  });
});

describe('docker registry over TLS with a self-signed certificate', () => {
  let registry;
  let service;
  before(async () => {
    registry = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD }, tls: true });
    service = await startService();
  });
  after(async () => {
    await service.close();
    await registry.close();
  });

  it('without insecure, TLS verification fails with its own message', async () => {
    for (const endpoint of [registry.hostPort, registry.url]) {
      const res = await service.test(docker(endpoint, { insecure: false }));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^TLS: the certificate of 127\.0\.0\.1:\d+ failed verification: self-signed certificate/);
    }
  });

  it('with insecure, verification is skipped and the credentials are checked', async () => {
    assert.equal((await service.test(docker(registry.hostPort))).status, 200);
    const wrong = await service.test(docker(registry.hostPort, { password: WRONG }));
    assert.equal(wrong.status, 400);
    assert.match(wrong.json.message, /rejected the credentials/);
  });

  it('http:// to a TLS port fails as a connection closed by the peer', async () => {
    const res = await service.test(docker(`http://${registry.hostPort}`));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /127\.0\.0\.1:\d+/);
  });

  it('a certificate whose names do not match: its names are quoted as any peer text, on one line, at most 160 characters', async (t) => {
    const folder = scratch('funcrun-many-names-');
    const names = Array.from({ length: 300 }, (_, i) => `DNS:name-${i}.other.example`).join(',');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${folder}/key.pem`,
        '-out',
        `${folder}/cert.pem`,
        '-days',
        '2',
        '-subj',
        '/CN=other.example',
        '-addext',
        `subjectAltName=${names}`,
      ],
      { stdio: 'ignore' },
    );
    const cert = fs.readFileSync(`${folder}/cert.pem`, 'utf8');
    const server = https.createServer({ key: fs.readFileSync(`${folder}/key.pem`), cert }, (req, res) => res.end('{}'));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const trusting = await startService({ limits: { ca: [cert] } });
    t.after(async () => {
      await trusting.close();
      await new Promise((resolve) => server.close(resolve));
    });
    const res = await trusting.test(docker(`localhost:${server.address().port}`, { insecure: false }));
    assert.equal(res.status, 400);
    const m = /^TLS: the certificate of localhost:\d+ failed verification: (.*) \(ERR_TLS_CERT_ALTNAME_INVALID\); set insecure: true/.exec(res.json.message);
    assert.ok(m, res.json.message);
    assert.match(
      m[1],
      /^Hostname\/IP does not match certificate's altnames: Host: localhost\. is not in the cert's altnames: DNS:name-0\.other\.example, .*\.\.\.$/,
    );
    assert.ok(m[1].length <= 163, `${m[1].length} characters quoted`);
  });

  it('https to a plain HTTP port says it does not speak TLS', async () => {
    const plain = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD } });
    try {
      const res = await service.test(docker(plain.hostPort, { insecure: false }));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^TLS: 127\.0\.0\.1:\d+ did not answer in TLS/);
    } finally {
      await plain.close();
    }
  });
});

describe('network failures, each with its own message', () => {
  let service;
  before(async () => {
    // Name resolution stays on this machine: unknown names fail the way getaddrinfo fails them.
    const resolve = async (host) => {
      if (host === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    };
    service = await startService({ limits: { connectTimeout: 500, responseTimeout: 500, resolve } });
  });
  after(() => service.close());

  it('an unknown host', async () => {
    const res = await service.test(docker('http://registry.funcrun-spec.invalid'));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, "connect: cannot resolve host 'registry.funcrun-spec.invalid' (ENOTFOUND)");
  });

  it('a closed port', async () => {
    const port = await freePort();
    const res = await service.test(docker(`http://127.0.0.1:${port}`));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, `connect: 127.0.0.1:${port} refused the connection (nothing listens there)`);
  });

  it('a peer that accepts and never answers', async () => {
    const silent = await startSilent();
    try {
      const res = await service.test(docker(`http://${silent.hostPort}`));
      assert.equal(res.status, 400);
      assert.equal(res.json.message, `no answer from ${silent.hostPort} within 500ms`);
    } finally {
      await silent.close();
    }
  });

  it('a peer that sends an endless body is cut at the cap', async () => {
    const endless = await startPeer((req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      const write = () => {
        while (res.write('x'.repeat(16 * 1024))) if (res.destroyed) return;
        res.once('drain', write);
      };
      res.on('error', () => undefined);
      write();
    });
    try {
      const res = await service.test(docker(endless.url));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^unexpected status: 127\.0\.0\.1:\d+ answered HTTP 500 to GET \/v2\/: x{160}\.\.\.$/);
    } finally {
      await endless.close();
    }
  });

  it('a registry that echoes the credentials back has them masked', async () => {
    const echo = await startPeer((req, res) => {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="echo"', 'content-type': 'text/plain' });
      const auth = req.headers.authorization ?? '';
      res.end(`denied ${auth} user=alice pass=${Buffer.from(auth.slice(6), 'base64').toString().split(':')[1]} url=https://alice:${PASSWORD}@x`);
    });
    try {
      const res = await service.test(docker(echo.url));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /denied Basic \*{6} user=alice pass=\*{6} url=https:\/\/\*{6}@x/);
      assertNoSecret(assert, res, service.log, [PASSWORD, Buffer.from(`alice:${PASSWORD}`).toString('base64')]);
    } finally {
      await echo.close();
    }
  });

  it('a redirect to another host is not followed, and the credentials never reach it', async () => {
    const other = await startPeer((req, res) => res.end('{}'));
    const redirecting = await startPeer((req, res) => {
      res.writeHead(302, { location: `http://localhost:${other.port}/v2/` });
      res.end();
    });
    try {
      const res = await service.test(docker(redirecting.url));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /redirected to another origin \(http:\/\/localhost:\d+\); not followed/);
      assert.equal(other.received.length, 0);
    } finally {
      await other.close();
      await redirecting.close();
    }
  });

  it('a redirect on the same host is followed', async () => {
    const peer = await startPeer((req, res) => {
      if (req.url === '/v2/') {
        res.writeHead(307, { location: '/moved/v2/' });
        return res.end();
      }
      res.writeHead(req.headers.authorization ? 200 : 401, { 'content-type': 'application/json' });
      res.end('{}');
    });
    try {
      assert.equal((await service.test(docker(peer.url))).status, 200);
      assert.equal(peer.received[1].url, '/moved/v2/');
    } finally {
      await peer.close();
    }
  });

  // stackrox/docker-registry-client follows any redirect (Go's http.Client) and takes a token from
  // any realm; here an upgrade to https on the same host, and a realm on the registry's own origin.
  describe('http to https on the same host, and token realms', () => {
    /** An HTTPS peer with a self-signed certificate for 127.0.0.1 (the specs send insecure: true). */
    async function startTlsPeer(handler) {
      const { keyPem, certPem } = certificate(scratch('funcrun-tls-peer-'));
      const received = [];
      const server = https.createServer({ key: keyPem, cert: certPem }, (req, res) => {
        received.push({ url: req.url, headers: req.headers });
        handler(req, res);
      });
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address();
      return { url: `https://127.0.0.1:${port}`, port, received, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))) };
    }
    const anonymous = (endpoint) => docker(endpoint, { username: '', password: '' });

    it('an http to https redirect on the same host is followed when no credentials are sent', async () => {
      const secure = await startTlsPeer((req, res) => res.end('{}'));
      const plain = await startPeer((req, res) => {
        res.writeHead(301, { location: `${secure.url}${req.url}` });
        res.end();
      });
      try {
        const res = await service.test(anonymous(plain.url));
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(
          secure.received.map((r) => [r.url, r.headers.authorization]),
          [['/v2/', undefined]],
        );
      } finally {
        await Promise.all([secure.close(), plain.close()]);
      }
    });

    it('with credentials the same redirect is not followed: they go to the origin named, over the scheme typed', async () => {
      const secure = await startTlsPeer((req, res) => res.end('{}'));
      const plain = await startPeer((req, res) => {
        res.writeHead(301, { location: `${secure.url}${req.url}` });
        res.end();
      });
      try {
        const res = await service.test(docker(plain.url));
        assert.equal(res.status, 400);
        assert.match(res.json.message, /redirected to another origin \(https:\/\/127\.0\.0\.1:\d+\); not followed/);
        assert.equal(secure.received.length, 0);
      } finally {
        await Promise.all([secure.close(), plain.close()]);
      }
    });

    it('https to http, and http to https on another host, are not followed even without credentials', async () => {
      const plainTarget = await startPeer((req, res) => res.end('{}'));
      const secure = await startTlsPeer((req, res) => {
        res.writeHead(302, { location: `${plainTarget.url}/v2/` });
        res.end();
      });
      const plain = await startPeer((req, res) => {
        res.writeHead(302, { location: `https://localhost:${secure.port}/v2/` });
        res.end();
      });
      try {
        const down = await service.test(anonymous(secure.url));
        assert.equal(down.status, 400);
        assert.match(down.json.message, /redirected to another origin \(http:\/\/127\.0\.0\.1:\d+\)/);
        const elsewhere = await service.test(anonymous(plain.url));
        assert.equal(elsewhere.status, 400);
        assert.match(elsewhere.json.message, /redirected to another origin \(https:\/\/localhost:\d+\)/);
        assert.equal(plainTarget.received.length, 0);
        assert.equal(secure.received.length, 1, 'only the redirecting request');
      } finally {
        await Promise.all([secure.close(), plain.close(), plainTarget.close()]);
      }
    });

    /** A registry on plain http whose token service is at `realm(url)`; it accepts the token `issued`. */
    async function startTokenRegistry(realm, challenges = (bearer) => bearer) {
      const peer = await startPeer((req, res) => {
        if (req.url.startsWith('/token')) {
          const ok = req.headers.authorization === `Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}`;
          res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
          return res.end(JSON.stringify(ok ? { token: 'issued-token' } : { details: 'denied' }));
        }
        if (req.headers.authorization === 'Bearer issued-token') return res.end('{}');
        const bearer = `Bearer realm="${realm(peer.url)}",service="spec"`;
        res.writeHead(401, { 'www-authenticate': challenges(bearer), 'content-type': 'application/json' });
        res.end('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}');
      });
      return peer;
    }

    it("a plain-http token realm on the registry's own origin is accepted, with and without insecure", async () => {
      const registry = await startTokenRegistry((url) => `${url}/token`);
      try {
        for (const insecure of [true, false]) {
          const res = await service.test(docker(registry.url, { insecure }));
          assert.equal(res.status, 200, res.text);
        }
        assert.ok(registry.received.some((r) => r.url === '/token?service=spec' && r.headers.authorization?.startsWith('Basic ')));
      } finally {
        await registry.close();
      }
    });

    it('a registry that sends a Basic challenge beside its Bearer one, in either order, gets the token flow (as parseOauthHeader picks Bearer)', async () => {
      const BASIC = 'Basic realm="basic-realm"';
      for (const challenges of [(bearer) => [BASIC, bearer], (bearer) => [bearer, BASIC], (bearer) => [BASIC, 'Custom x=1', bearer]]) {
        const registry = await startTokenRegistry((url) => `${url}/token`, challenges);
        try {
          const res = await service.test(docker(registry.url));
          assert.equal(res.status, 200, res.text);
          assert.ok(registry.received.some((r) => r.url === '/token?service=spec'));
        } finally {
          await registry.close();
        }
      }
    });

    it('a plain-http token realm on another origin never gets credentials, even with insecure; an anonymous token may come from it with insecure', async () => {
      const tokens = await startPeer((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ token: 'issued-token' }));
      });
      const registry = await startTokenRegistry(() => `${tokens.url}/token`);
      try {
        const res = await service.test(docker(registry.url));
        assert.equal(res.status, 400);
        assert.match(res.json.message, /^authentication: 127\.0\.0\.1:\d+ named a token service over http:\/\/ at 127\.0\.0\.1:\d+, not its own origin/);
        assert.equal(tokens.received.length, 0, 'the credentials went nowhere');
        const open = await service.test(anonymous(registry.url));
        assert.equal(open.status, 200, open.text);
        assert.equal(tokens.received.length, 1);
        assert.equal(tokens.received[0].headers.authorization, undefined);
      } finally {
        await Promise.all([registry.close(), tokens.close()]);
      }
    });

    it('a token realm without a host (data:) is refused in words that name its scheme alone', async () => {
      const registry = await startTokenRegistry(() => 'data:text/plain,hi');
      try {
        const res = await service.test(docker(registry.url));
        assert.equal(res.status, 400);
        assert.match(
          res.json.message,
          /^authentication: 127\.0\.0\.1:\d+ named a token service over data:, a URL without a host; credentials go only over https/,
        );
      } finally {
        await registry.close();
      }
    });
  });

  it('artifactory and nexus are checked on /v2/_catalog, where anonymous pings do not pass', async () => {
    const peer = await startPeer((req, res) => {
      const ok = req.url === '/v2/' || req.headers.authorization === `Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}`;
      res.writeHead(ok ? 200 : 401, { 'www-authenticate': 'Basic realm="repo"' });
      res.end('{}');
    });
    try {
      for (const type of ['artifactory', 'nexus']) {
        const wrong = await service.test({ ...docker(peer.url, { password: WRONG }), type });
        assert.equal(wrong.status, 400, type);
        assert.equal(peer.received.at(-1).url, '/v2/_catalog');
        assert.equal((await service.test({ ...docker(peer.url), type })).status, 200);
      }
    } finally {
      await peer.close();
    }
  });
});

describe('endpoint policy', () => {
  let service;
  let registry;
  before(async () => {
    service = await startService({ limits: { allowPrivate: false } });
    registry = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD } });
  });
  after(async () => {
    await service.close();
    await registry.close();
  });

  // By the name localhost before it is resolved, as StackRox's validateIntegration refuses it (pkg/endpoints
  // validate()); other names that resolve to loopback: network.spec.js.
  it('loopback is refused by default, by address and by the name localhost', async () => {
    for (const [endpoint, pattern] of [
      [registry.url, /^endpoint refused: 127\.0\.0\.1 is a loopback address/],
      [`http://localhost:${registry.port}`, /^endpoint refused: localhost is a loopback name/],
      ['http://[::1]:5000', /^endpoint refused: ::1 is a loopback address/],
    ]) {
      const res = await service.test(docker(endpoint));
      assert.equal(res.status, 400, endpoint);
      assert.match(res.json.message, pattern);
    }
  });

  it('the unspecified address and IPv4-mapped loopback are refused (metadata addresses: policy.spec.js, in a network namespace)', async () => {
    for (const [endpoint, pattern] of [
      ['http://0.0.0.0:5000', /0\.0\.0\.0 is the unspecified address/],
      ['http://[::ffff:127.0.0.1]:5000', /127\.0\.0\.1 is a loopback address/],
    ]) {
      const res = await service.test(docker(endpoint));
      assert.equal(res.status, 400, endpoint);
      assert.match(res.json.message, pattern);
    }
  });
});

describe("a token service's token is checked before it is sent: one that cannot be a header value is a 400 naming the token service, never a 500", () => {
  const tokens = {
    'a line break': 'abc\ndef',
    'CR LF and a header after it': 'abc\r\nX-Injected: 1',
    'a NUL': 'abc\u0000',
    'a character outside ASCII (U+2603)': 'abc\u2603',
    'a space': 'abc def',
  };
  for (const [what, token] of Object.entries(tokens)) {
    it(what, async (t) => {
      let bearer = 0;
      const peer = await startPeer((req, res) => {
        if (req.url.startsWith('/token')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ token }));
        }
        if ((req.headers.authorization ?? '').startsWith('Bearer')) bearer++;
        res.writeHead(401, { 'www-authenticate': `Bearer realm="http://${req.headers.host}/token",service="registry"` });
        res.end();
      });
      const service = await startService();
      t.after(async () => {
        await service.close();
        await peer.close();
      });
      const res = await service.test(docker(peer.url));
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.code, 3);
      assert.equal(
        res.json.message,
        `authentication: the token service at ${peer.hostPort} answered with a token that cannot be sent in a header (it holds a space, a control character or a character outside ASCII)`,
      );
      assert.equal(bearer, 0, 'the token was never sent');
      assert.ok(!service.log.text().includes('failed unexpectedly'), service.log.text());
    });
  }
});
