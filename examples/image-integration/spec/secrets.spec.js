'use strict';
// Secrets never leave, in any encoding: configurations sent as JSON strings, userinfo in endpoints
// in every form, registry error text echoing credentials in each encoding a peer may use, and
// masking value by value. Each case runs the service at trace level against real peers (Docker
// Distribution, misbehaving echo peers over HTTP and TLS), and searches every answer and the whole
// log for the secret in every form: raw, base64 (std and url) of user:password, percent-encoded
// (upper, lower case, `+`), JSON `\u` escapes, HTML references, upper and lower case, hex (of it and of
// user:password, either case), UTF-16 (LE, BE: as bytes, in hex, `\x`-escaped), and base64 wrapped over lines.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');
const { serve, request } = require('./helpers');
const { createService, PATH } = require('../build/lib/service.js');
const { maskSecrets, secretValues, Redactor, userinfoSpans, maskEndpoint } = require('../build/lib/secrets.js');
const { startRegistry, startPeer, certificate, scratch } = require('./peers');

// Space runs, '@', '/', '&', '<', '>', quotes, '+', '%' and a non-ASCII letter: every encoding differs.
const PASSWORD = 'S3cr3t p@ss/w0rd&<x>  "q"+%é-Zulu';
const USER = 'alice';

/** The service in this process at trace level; name resolution stays on loopback. */
async function startService(limits = {}) {
  const resolve = async (host) => {
    if (host === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
  const service = createService({
    limits: { connectTimeout: 2000, responseTimeout: 2000, maxBodyBytes: 64 * 1024, allowPrivate: true, resolve, ...limits },
    testTimeout: 10_000,
    aws: {},
  });
  const server = await serve(service, { logLevel: 'trace' });
  const test = (integration) =>
    request(server.url + PATH, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(integration) });
  return { ...server, test };
}

const percent = (text, lower = false) => {
  const encoded = encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return lower ? encoded.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()) : encoded;
};
const escapeAll = (text, upper = false) => {
  const escaped = [...text].map((c) => [...c].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')).join('');
  return (upper ? escaped.toUpperCase() : escaped).replace(/\\U/g, '\\u');
};
const goJson = (text) => JSON.stringify(text).slice(1, -1).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
const html = (text) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
    .replace(/@/g, '&#64;')
    .replace(/\//g, '&#x2F;');
const htmlAll = (text) => [...text].map((c) => `&#${c.codePointAt(0)};`).join('');
const hex = (text, encoding = 'utf8') => Buffer.from(text, encoding).toString('hex');
/** The UTF-16 bytes of `text`, little- or big-endian. */
const utf16 = (text, bigEndian = false) => (bigEndian ? Buffer.from(text, 'utf16le').swap16() : Buffer.from(text, 'utf16le'));
/** Bytes as Go's %q and Python's repr() print them: printable ASCII as it is, other bytes `\xHH`. */
const xEscaped = (bytes) =>
  [...bytes].map((b) => (b >= 0x20 && b < 0x7f && b !== 0x5c && b !== 0x22 ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('');
/** `text` cut into lines of `width` characters. */
const wrap = (text, width, eol) => text.match(new RegExp(`.{1,${width}}`, 'gs')).join(eol);
/** The part of the base64 of `bytes` that is the same wherever they sit in a longer text, at each of the three alignments. */
const base64Cores = (bytes) =>
  [0, 1, 2].map((r) => {
    const encoded = Buffer.concat([Buffer.alloc(r), bytes]).toString('base64');
    return encoded.slice(Math.ceil((8 * r) / 6), Math.floor((8 * (r + bytes.length)) / 6));
  });

/** Every form a secret may leave in. */
function forms(secret, user = USER) {
  const pair = `${user}:${secret}`;
  return [
    ...new Set([
      secret,
      secret.toUpperCase(),
      secret.toLowerCase(),
      Buffer.from(secret).toString('base64'),
      Buffer.from(secret).toString('base64url'),
      Buffer.from(pair).toString('base64'),
      Buffer.from(pair).toString('base64').replace(/=+$/, ''),
      Buffer.from(pair).toString('base64url'),
      percent(secret),
      percent(secret, true),
      percent(secret).replace(/%20/g, '+'),
      percent(secret, true).replace(/%20/g, '+'),
      JSON.stringify(secret).slice(1, -1),
      goJson(secret),
      escapeAll(secret),
      escapeAll(secret, true),
      html(secret),
      htmlAll(secret),
      hex(secret),
      hex(secret).toUpperCase(),
      hex(pair),
      hex(pair).toUpperCase(),
      utf16(secret).toString('latin1'),
      utf16(secret, true).toString('latin1'),
      utf16(secret).toString('hex'),
      utf16(secret, true).toString('hex').toUpperCase(),
      Buffer.from(secret).toString('latin1'),
    ]),
  ];
}

/** Forms that may be wrapped over lines or spaced: searched in each text with its white space taken out. */
function joinedForms(secret, user = USER) {
  const pair = Buffer.from(`${user}:${secret}`);
  const bytes = Buffer.from(secret);
  return [
    bytes.toString('base64'),
    pair.toString('base64'),
    ...base64Cores(bytes),
    ...base64Cores(pair),
    hex(secret),
    hex(`${user}:${secret}`),
    utf16(secret).toString('hex'),
    utf16(secret, true).toString('hex'),
  ];
}

/** Every string inside parsed JSON (the log's lines, an answer), so the logger's own escaping hides nothing. */
function strings(value, out = []) {
  if (typeof value === 'string') out.push(value);
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      strings(v, out);
    }
  return out;
}

/** Asserts that no form of `secret` is in the answer, in any log line, or in any string of either. */
function assertNoLeak(answer, log, secret, user) {
  const texts = [answer.text, log.text(), ...strings(answer.json), ...log.entries().flatMap((e) => strings(e))];
  for (const form of forms(secret, user)) {
    for (const text of texts) assert.ok(!text.includes(form), `a form of the secret (${JSON.stringify(form)}) left in: ${text.slice(0, 2000)}`);
  }
  // Wrapped or spaced: the same text without its white space (hex in either case).
  for (const text of texts) {
    const joined = text.replace(/\s+/g, '');
    for (const form of joinedForms(secret, user)) {
      const found = /^[0-9a-f]+$/.test(form) ? joined.toLowerCase().includes(form) : joined.includes(form);
      assert.ok(!found, `a wrapped form of the secret (${form}) left in: ${text.slice(0, 2000)}`);
    }
    // Its characters between NULs (UTF-16 read byte by byte): no run of 8 or more of them is left.
    const unspaced = text.replace(/\u0000/g, '');
    for (const part of secret.split(/[^\x20-\x7e]/))
      if (part.length >= 8) assert.ok(!unspaced.includes(part), `part of the secret (${part}) left in: ${text.slice(0, 2000)}`);
  }
}

/** What an echoing registry writes: the password and user:password in each encoding, with text between. */
function echoBody(password, user = USER) {
  return [
    'denied.', // the excerpt's first line
    ...forms(password, user).map((form, i) => `form ${i}: ${form}`),
    `url https://${user}:${password}@x and ${user}:${password}@host and //${user}:${password}@h`,
  ].join('\n        ');
}

const docker = (endpoint, extra = {}) => ({
  name: 'spec registry',
  type: 'docker',
  categories: ['REGISTRY'],
  docker: { endpoint, username: USER, password: PASSWORD, insecure: true, ...extra },
});

describe('secrets inside JSON-encoded strings (item 7)', () => {
  let registry;
  let service;
  before(async () => {
    registry = await startRegistry({ auth: 'htpasswd', users: { [USER]: 'the-right-one-123' } });
    service = await startService();
  });
  after(async () => {
    await service.close();
    await registry.close();
  });

  it('secretValues reads configurations sent as strings, bounded, and their secret-named fields', () => {
    const values = secretValues({
      name: JSON.stringify({ apiKey: 'k-in-name', nested: JSON.stringify({ token: 'deep-token' }) }),
      docker: JSON.stringify({ endpoint: 'e', username: 'u', password: 'pw-in-string', passwrd: 'typo-in-string' }),
      source: JSON.stringify({ clusterId: 'c', password: 'pw-in-source' }),
    });
    for (const value of ['k-in-name', 'deep-token', 'pw-in-string', 'typo-in-string', 'pw-in-source']) assert.ok(values.includes(value), value);
    assert.ok(!values.includes('e') && !values.includes('u') && !values.includes('c'), 'known non-secret fields are no secret');
    const masked = maskSecrets({ docker: JSON.stringify({ password: 'x' }), quay: { registryRobotCredentials: '{"password":"y"}' } });
    assert.deepEqual(masked, { docker: '******', quay: { registryRobotCredentials: '******' } });
    // Bounded: a string over 256 KiB is not parsed (and a big request is not parsed twice over).
    assert.ok(!secretValues({ name: JSON.stringify({ password: 'big-one', pad: 'x'.repeat(300 * 1024) }) }).includes('big-one'));
  });

  const cases = {
    docker: () => ({ ...docker(registry.url), docker: JSON.stringify({ endpoint: registry.url, username: USER, password: PASSWORD, insecure: true }) }),
    'quay.registryRobotCredentials': () => ({
      name: 'q',
      type: 'quay',
      categories: ['REGISTRY'],
      quay: { endpoint: registry.url, insecure: true, registryRobotCredentials: JSON.stringify({ username: 'org+bot', password: PASSWORD }) },
    }),
    'ecr.authorizationData': () => ({
      name: 'e',
      type: 'ecr',
      categories: ['REGISTRY'],
      ecr: {
        registryId: '123456789012',
        region: 'us-east-1',
        endpoint: registry.url,
        authorizationData: JSON.stringify({ username: 'AWS', password: PASSWORD }),
      },
    }),
    source: () => ({ ...docker(registry.url, { password: 'the-right-one-123' }), source: JSON.stringify({ clusterId: 'c', password: PASSWORD }) }),
    'name (the test fails at the registry)': () => ({
      ...docker(registry.url, { password: 'a-wrong-one-456' }),
      name: JSON.stringify({ password: PASSWORD, inner: JSON.stringify({ apiKey: PASSWORD }) }),
    }),
  };
  for (const [what, body] of Object.entries(cases)) {
    it(`${what} sent as a JSON string: the secret is masked in the answer and the trace log`, async () => {
      const res = await service.test(body());
      assert.ok(res.json !== undefined && typeof res.json === 'object', res.text);
      assertNoLeak(res, service.log, PASSWORD, what.startsWith('quay') ? 'org+bot' : what.startsWith('ecr') ? 'AWS' : USER);
      assert.ok(service.log.entries().some((e) => e.msg === 'testing image integration'));
    });
  }

  // Needs lib/service.ts to redact the name and type it logs when a test passes (see the report).
  it('name sent as a JSON string, on a test that passes: the secret is masked in the trace log', async () => {
    const res = await service.test({ ...docker(registry.url, { password: 'the-right-one-123' }), name: JSON.stringify({ password: PASSWORD }) });
    assert.equal(res.status, 200, res.text);
    assertNoLeak(res, service.log, PASSWORD);
  });
});

describe('userinfo in endpoints, in every form (item 8)', () => {
  let service;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  it('maskEndpoint and the redactor mask userinfo in every form, passwords with @, / and spaces whole', () => {
    for (const [endpoint, masked] of [
      ['https://u:p@ss/w rd@host/v2', 'https://******@host/v2'],
      ['u:p@ss@host:5000', '******@host:5000'],
      ['//u:p/w@host', '//******@host'],
      ['https:u:pw@host', '******@host'],
      ['host:5000', 'host:5000'],
      // A query or fragment, where tokens travel: refused as an endpoint, masked where it is logged.
      ['https://host/?access_token=tok', 'https://host/?******'],
      ['https://u:pw@host/x#tok', 'https://******@host/x#******'],
      ['host?', 'host?'],
    ])
      assert.equal(maskEndpoint(endpoint), masked, endpoint);
    const redactor = new Redactor();
    assert.equal(
      redactor.redact('see https://u:p@ss/w@host/x, u:pw@host and //u:x@h "https:u:pw@h" me@example.com'),
      'see https://******@host/x, ******@host and //******@h "******@h" me@example.com',
    );
    assert.deepEqual(userinfoSpans('@type x@y'), []);
    const linear = 'a:b@'.repeat(250_000);
    const started = performance.now();
    userinfoSpans(linear);
    new Redactor(['pw']).redact(`${'x://'.repeat(100_000)}${'a@'.repeat(100_000)}`);
    assert.ok(performance.now() - started < 1000, 'linear');
  });

  it('an endpoint with a token in its query or fragment: refused, and the token is in no answer or log line', async () => {
    const TOKEN = 'QueryTok-77665544';
    for (const endpoint of [`https://127.0.0.1/?access_token=${TOKEN}`, `https://127.0.0.1/#${TOKEN}`]) {
      const res = await service.test(docker(endpoint));
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.message, /must not have a query string or fragment/);
      assertNoLeak(res, service.log, TOKEN);
    }
  });

  for (const form of [
    `${USER}:${PASSWORD}@127.0.0.1:5000`,
    `//${USER}:${PASSWORD}@127.0.0.1:5000`,
    `https:${USER}:${PASSWORD}@127.0.0.1`,
    `https://${USER}:${PASSWORD}@127.0.0.1`,
    `http://${USER}:${PASSWORD}@127.0.0.1/v2`,
  ]) {
    it(`endpoint ${JSON.stringify(form.replace(PASSWORD, '<pw>'))}: refused, and the password is in no answer or log line`, async () => {
      const res = await service.test(docker(form, { username: undefined, password: undefined }));
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.code, 3);
      assertNoLeak(res, service.log, PASSWORD);
      const line = service.log.entries().findLast((e) => e.msg === 'testing image integration');
      assert.match(line.integration.docker.endpoint, /\*{6}@127\.0\.0\.1/);
    });
  }
});

describe('registry error text (item 9)', () => {
  let registry;
  let service;
  let echo;
  let goEcho;
  let tlsEcho;
  let tlsService;
  before(async () => {
    registry = await startRegistry({ auth: 'htpasswd', users: { [USER]: 'the-right-one-123' } });
    service = await startService();
    const credentials = (req) => {
      const decoded = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
      const colon = decoded.indexOf(':');
      return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
    };
    echo = await startPeer((req, res) => {
      const { user, password } = credentials(req);
      res.writeHead(401, { 'content-type': 'text/plain' });
      res.end(echoBody(password, user));
    });
    // Docker Distribution's error shape, written as Go writes JSON (<, > and & as \u003c \u003e \u0026).
    goEcho = await startPeer((req, res) => {
      const { user, password } = credentials(req);
      const message = `user ${user} password ${password} denied`;
      const errors = { errors: [{ code: 'DENIED', message, detail: { forms: forms(password, user) } }] };
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify(errors).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026'));
    });
    const tls = certificate(scratch('funcrun-secrets-tls-'));
    const server = https.createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
      const { user, password } = credentials(req);
      res.writeHead(500, { 'content-type': 'text/html' });
      res.end(`<html><body><p>${html(`error for ${user}:${password}`)}</p><pre>${echoBody(password, user)}</pre></body></html>`);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    tlsEcho = { hostPort: `127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))) };
    tlsService = await startService({ ca: [tls.certPem] });
  });
  after(async () => {
    await service.close();
    await tlsService.close();
    await registry.close();
    await echo.close();
    await goEcho.close();
    await tlsEcho.close();
  });

  it("Docker Distribution: a wrong password with spaces, @, / and & is answered with the registry's error code and message only", async () => {
    const res = await service.test(docker(registry.url));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^authentication: 127\.0\.0\.1:\d+ rejected the credentials \(HTTP 401\): UNAUTHORIZED: authentication required$/);
    assertNoLeak(res, service.log, PASSWORD);
  });

  it('an echoing registry: each encoding is masked, before the excerpt is put on one line and cut', async () => {
    const res = await service.test(docker(echo.url));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^authentication: 127\.0\.0\.1:\d+ rejected the credentials \(HTTP 401\): denied\. form 0: \*{6} form 1: \*{6}/);
    assert.ok(res.json.message.length < 300);
    assertNoLeak(res, service.log, PASSWORD);
  });

  it('every encoding is masked wherever the cut falls', async () => {
    for (let pad = 0; pad < 40; pad += 3) {
      const peer = await startPeer((req, res) => {
        const password = Buffer.from(req.headers.authorization.slice(6), 'base64')
          .toString()
          .slice(USER.length + 1);
        res.writeHead(401);
        res.end(`${'.'.repeat(120 + pad)}${echoBody(password)}`);
      });
      try {
        const res = await service.test(docker(peer.url));
        assert.equal(res.status, 400);
        assertNoLeak(res, service.log, PASSWORD);
      } finally {
        await peer.close();
      }
    }
  });

  it("Go-escaped JSON (\\u0026) of Docker Distribution's error shape: only code and message are quoted, masked", async () => {
    const res = await service.test(docker(goEcho.url));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /rejected the credentials \(HTTP 403\): DENIED: user alice password \*{6} denied$/);
    assertNoLeak(res, service.log, PASSWORD);
  });

  it('an HTML error page over TLS (verified with its CA): HTML references and every encoding masked', async () => {
    const res = await tlsService.test(docker(`https://${tlsEcho.hostPort}`, { insecure: false }));
    assert.equal(res.status, 400, res.text);
    assert.match(res.json.message, /^unexpected status: 127\.0\.0\.1:\d+ answered HTTP 500/);
    assertNoLeak(res, tlsService.log, PASSWORD);
  });

  it('a body cut at the cap in the middle of the password: its start is masked too', async () => {
    const small = await startService({ maxBodyBytes: 200 });
    const peer = await startPeer((req, res) => {
      res.writeHead(500);
      res.end(`${'.'.repeat(190)}${PASSWORD}`);
    });
    try {
      const res = await small.test(docker(peer.url));
      assert.equal(res.status, 400);
      assert.ok(!res.text.includes(PASSWORD.slice(0, 6)), res.text);
      assert.ok(!small.log.text().includes(PASSWORD.slice(0, 6)));
    } finally {
      await peer.close();
      await small.close();
    }
  });

  it('the redactor knows each encoding of a secret, in any case, in base64 at any alignment', () => {
    const redactor = new Redactor([PASSWORD, `${USER}:${PASSWORD}`]);
    for (const form of forms(PASSWORD)) {
      const out = redactor.redact(`before ${form} after`);
      assert.ok(out.startsWith('before ') && out.endsWith(' after') && out.includes('******'), `${form}: ${out}`);
      assert.ok(!out.includes(form), form);
    }
    for (const prefix of ['', 'x', 'xy', 'Authorization: Basic ']) {
      const blob = Buffer.from(`${prefix}${PASSWORD}!`).toString('base64');
      assert.ok(!redactor.redact(blob).includes(Buffer.from(PASSWORD).toString('base64').slice(4, 20)), prefix);
    }
  });
});

describe('a peer that quotes the secret back in hex, UTF-16 or wrapped base64: masked in the answer and the trace log (issue 40)', () => {
  let service;
  let peer;
  let quote;
  before(async () => {
    service = await startService();
    peer = await startPeer((req, res) => {
      const decoded = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
      const colon = decoded.indexOf(':');
      const { type = 'text/plain', body } = quote(decoded.slice(colon + 1), decoded.slice(0, colon));
      res.writeHead(401, { 'content-type': type });
      res.end(body);
    });
  });
  after(async () => {
    await service.close();
    await peer.close();
  });

  // A secret's base64 in a longer blob, wrapped: prefixes of 40 to 42 bytes put it across a line break at each alignment.
  const blob = (secret, pad, user) => Buffer.from(`${'p'.repeat(pad)}${user}:${secret}${'s'.repeat(20)}`);
  const ENCODINGS = {
    'hex, lower case': [(pw) => `denied: ${hex(pw)}`],
    'hex, upper case': [(pw) => `denied: ${hex(pw).toUpperCase()}`],
    'hex of user:password': [(pw, user) => `bad credentials ${hex(`${user}:${pw}`)}`],
    'hex of user:password, upper case': [(pw, user) => `bad credentials ${hex(`${user}:${pw}`).toUpperCase()}`],
    'hex spaced by bytes, as a dump prints it': [(pw) => `got ${hex(pw).match(/../g).join(' ')}`],
    'UTF-16LE: the whole answer in UTF-16, read byte by byte': [(pw) => ({ body: Buffer.from(`denied: ${pw}`, 'utf16le') })],
    'UTF-16BE: the whole answer in UTF-16, read byte by byte': [(pw) => ({ body: utf16(`denied: ${pw}`, true) })],
    'UTF-16LE bytes in a JSON string (\\u0000 escapes)': [
      (pw) => ({ type: 'application/json', body: JSON.stringify({ trace: utf16(pw).toString('latin1') }) }),
    ],
    "UTF-16LE bytes as a registry's structured error message": [
      (pw) => ({ type: 'application/json', body: JSON.stringify({ errors: [{ code: 'DENIED', message: `for ${utf16(pw, true).toString('latin1')}` }] }) }),
    ],
    'UTF-16 code units in hex, little-endian': [(pw) => `units ${utf16(pw).toString('hex')}`],
    'UTF-16 code units in hex, big-endian, upper case': [(pw) => `units ${utf16(pw, true).toString('hex').toUpperCase()}`],
    "UTF-16LE bytes \\x-escaped (Go's %q)": [(pw) => `bytes "${xEscaped(utf16(pw))}"`],
    "UTF-8 bytes \\x-escaped (Python's repr)": [(pw) => `b'${xEscaped(Buffer.from(pw))}'`],
    'base64 in a blob wrapped at 76 columns with CRLF (MIME)': [40, 41, 42].map(
      (pad) => (pw, user) => `denied:\r\n${wrap(blob(pw, pad, user).toString('base64'), 76, '\r\n')}`,
    ),
    'base64 in a blob wrapped at 64 columns with LF (PEM)': [40, 41, 42].map(
      (pad) => (pw, user) => `-----BEGIN DATA-----\n${wrap(blob(pw, pad, user).toString('base64'), 64, '\n')}\n-----END DATA-----`,
    ),
    'base64 of user:password wrapped at 20 columns': [(pw, user) => `basic ${wrap(Buffer.from(`${user}:${pw}`).toString('base64'), 20, '\n')}`],
  };
  for (const [what, variants] of Object.entries(ENCODINGS)) {
    it(`${what}: the excerpt shows the mask, never the secret`, async () => {
      for (const variant of variants) {
        quote = (pw, user) => {
          const made = variant(pw, user);
          return typeof made === 'string' ? { body: made } : made;
        };
        const res = await service.test(docker(peer.url));
        assert.equal(res.status, 400, res.text);
        assert.match(res.json.message, /^authentication: 127\.0\.0\.1:\d+ rejected the credentials \(HTTP 401\): .*\*{6}/);
        assertNoLeak(res, service.log, PASSWORD);
      }
    });
  }

  it('the redactor finds each of these forms in a text, and leaves the text around them', () => {
    const redactor = new Redactor([PASSWORD, `${USER}:${PASSWORD}`]);
    const pair = `${USER}:${PASSWORD}`;
    for (const form of [
      hex(PASSWORD),
      hex(pair).toUpperCase(),
      utf16(PASSWORD).toString('latin1'),
      utf16(PASSWORD, true).toString('latin1'),
      utf16(PASSWORD).toString('hex'),
      utf16(PASSWORD, true).toString('hex').toUpperCase(),
      xEscaped(utf16(PASSWORD)),
      xEscaped(Buffer.from(PASSWORD)),
      Buffer.from(PASSWORD).toString('latin1'),
      wrap(Buffer.from(pair).toString('base64'), 7, '\r\n'),
      hex(PASSWORD).match(/../g).join(' '),
    ]) {
      const out = redactor.redact(`before ${form} after`);
      assert.equal(out, 'before ****** after', JSON.stringify(form));
    }
  });

  it('a short secret (under 4 characters) in hex or UTF-16 is masked only where it stands alone', () => {
    const redactor = new Redactor(['12']);
    assert.equal(redactor.redact('port 31320 and 3132 and 3132333435'), 'port 31320 and ****** and 3132333435');
    assert.equal(redactor.redact('ids 1\u00002\u0000 x'), 'ids ****** x');
  });
});

describe('a peer that rewrites the secret: case mapped, normalized, spaced, split or escaped otherwise, masked in the answer and the trace log (issue 40, second round)', () => {
  let service;
  let peer;
  let echo;
  before(async () => {
    service = await startService();
    peer = await startPeer((req, res) => {
      const decoded = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
      const { type = 'text/plain', body } = echo(decoded.slice(decoded.indexOf(':') + 1));
      res.writeHead(401, { 'content-type': type });
      res.end(body);
    });
  });
  after(async () => {
    await service.close();
    await peer.close();
  });

  const bytes = (pw) => [...Buffer.from(pw)];
  const half = (pw) => [pw.slice(0, Math.floor(pw.length / 2)), pw.slice(Math.floor(pw.length / 2))];
  const percent = (text) =>
    bytes(text)
      .map((b) => `%${b.toString(16).padStart(2, '0')}`)
      .join('');
  const references = (text) => [...text].map((c) => `&#${c.charCodeAt(0)};`).join('');
  const structured = (errors) => ({ type: 'application/json', body: JSON.stringify({ errors }) });
  const FORMS = {
    'upper cased with full case mapping (straße to STRASSE)': ['straße-Geheimnis', (pw) => `denied: ${pw.toUpperCase()}`, 'STRASSE-GEHEIMNIS'],
    'decomposed (NFD)': ['Pässwört-Geheim9', (pw) => `denied: ${pw.normalize('NFD')}`, 'Pa\u0308sswo\u0308rt'.normalize('NFD')],
    'in fullwidth letters': ['Sekr3tPassw0rd-XyZ', (pw) => `denied: ${[...pw].map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)).join('')}`, 'Ｓｅｋｒ'],
    'with zero-width spaces between its letters': ['Sekr3tPassw0rd-XyZ', (pw) => `denied: ${[...pw].join('\u200b')}`, 'r\u200b3\u200bt'],
    'with soft hyphens between its letters': ['Sekr3tPassw0rd-XyZ', (pw) => `denied: ${[...pw].join('\u00ad')}`, 'r\u00ad3\u00adt'],
    'split over two lines': ['Sekr3tPassw0rd-XyZ', (pw) => `denied: ${half(pw).join('\n')}`, 'Sekr3tPas'],
    'hex spaced by colons': [
      'Sekr3tPassw0rd-XyZ',
      (pw) =>
        `denied: ${bytes(pw)
          .map((b) => b.toString(16).padStart(2, '0'))
          .join(':')}`,
      '53:65:6b',
    ],
    'hex spaced by dashes': [
      'Sekr3tPassw0rd-XyZ',
      (pw) =>
        `denied: ${bytes(pw)
          .map((b) => b.toString(16).padStart(2, '0'))
          .join('-')}`,
      '53-65-6b',
    ],
    'hex as 0x53,0x65': [
      'Sekr3tPassw0rd-XyZ',
      (pw) =>
        `denied: ${bytes(pw)
          .map((b) => `0x${b.toString(16).padStart(2, '0')}`)
          .join(',')}`,
      '0x53,0x65',
    ],
    'octal escapes (C)': [
      'Sekr3tPassw0rd-XyZ',
      (pw) =>
        `denied: ${bytes(pw)
          .map((b) => `\\${b.toString(8).padStart(3, '0')}`)
          .join('')}`,
      '\\123\\145',
    ],
    '\\u{...} escapes (ECMAScript, Rust)': [
      'Sekr3tPassw0rd-XyZ',
      (pw) => `denied: ${[...pw].map((c) => `\\u{${c.charCodeAt(0).toString(16)}}`).join('')}`,
      '\\u{53}',
    ],
    "Python's repr() of a text with both quotes (\\')": ['Both\'"Passw0rd-1234', (pw) => `denied: '${pw.replace(/'/g, "\\'")}'`, 'Passw0rd-1234'],
    "PHP's addslashes()": ['Both\'"Pa\\ssw0rd-1234', (pw) => `denied: ${pw.replace(/['"\\]/g, (c) => `\\${c}`)}`, 'ssw0rd-1234'],
    "SQL's quotes written twice": ['Both\'"Passw0rd-1234', (pw) => `denied: '${pw.replace(/'/g, "''")}'`, 'Passw0rd-1234'],
    "CSV's quotes written twice": ['Both\'"Passw0rd-1234', (pw) => `denied,"${pw.replace(/"/g, '""')}"`, 'Passw0rd-1234'],
    "the shell's quoting ('\\'')": ['Both\'"Passw0rd-1234', (pw) => `denied: '${pw.replace(/'/g, "'\\''")}'`, 'Passw0rd-1234'],
    "SQL's quotes written twice, in a JSON string": [
      "It's''Passw0rd-1234",
      (pw) => ({ type: 'application/json', body: JSON.stringify({ errors: [{ code: 'DENIED', message: `'${pw.replace(/'/g, "''")}'` }] }) }),
      'Passw0rd-1234',
    ],
    "split over an error's code and message": ['Sekr3tPassw0rd-XyZ', (pw) => structured([{ code: half(pw)[0], message: half(pw)[1] }]), 'Sekr3tPas'],
    'split over the messages of two errors': [
      'Sekr3tPassw0rd-XyZ',
      (pw) =>
        structured([
          { code: 'A', message: half(pw)[0] },
          { code: 'B', message: half(pw)[1] },
        ]),
      'Sekr3tPas',
    ],
    "percent-encoded and split over an error's code and message": [
      'Sekr3tPassw0rd-XyZ',
      (pw) => structured([{ code: percent(half(pw)[0]), message: percent(half(pw)[1]) }]),
      '%53%65%6b%72',
    ],
    'in HTML references, split over the messages of two errors': [
      'Sekr3tPassw0rd-XyZ',
      (pw) =>
        structured([
          { code: 'A', message: references(half(pw)[0]) },
          { code: 'B', message: references(half(pw)[1]) },
        ]),
      '&#83;&#101;&#107;',
    ],
  };
  for (const [what, [password, rewrite, shown]] of Object.entries(FORMS)) {
    it(`${what}: the excerpt shows the mask, never the secret`, async () => {
      echo = (pw) => {
        const made = rewrite(pw);
        return typeof made === 'string' ? { body: made } : made;
      };
      const res = await service.test(docker(peer.url, { password }));
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.message, /^authentication: 127\.0\.0\.1:\d+ rejected the credentials \(HTTP 401\): .*\*{6}/);
      for (const text of [res.text, service.log.text()]) assert.ok(!text.includes(shown), `${JSON.stringify(shown)} left in ${text.slice(-1500)}`);
      assertNoLeak(res, service.log, password);
    });
  }

  it('a secret that is a host name, in punycode (as a URL parser writes a host): a redirect to it names the mask', async () => {
    echo = () => ({ body: '' });
    const redirecting = await startPeer((req, res) => {
      res.writeHead(302, { location: 'https://pässwört-geheim9.evil.test/x' });
      res.end();
    });
    try {
      const res = await service.test(docker(redirecting.url, { password: 'Pässwört-Geheim9' }));
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.message, /redirected to another origin \(https:\/\/\*{6}\.evil\.test\)/);
      assert.ok(!res.text.includes('xn--psswrt-geheim9'));
    } finally {
      await redirecting.close();
    }
  });
});

describe('masking value by value (item 10)', () => {
  let registry;
  let service;
  before(async () => {
    registry = await startRegistry({ auth: 'htpasswd', users: { [USER]: 'the-right-one-123' } });
    service = await startService();
  });
  after(async () => {
    await service.close();
    await registry.close();
  });

  it('redactValue masks inside strings and keeps the JSON around them', () => {
    const redactor = new Redactor(['field', '"', 'e', '1']);
    assert.deepEqual(redactor.redactValue([{ field: 'docker.pasword', description: 'unknown field "x"', n: 1, ok: true, none: null }]), [
      { field: 'docker.pasword', description: 'unknown ****** "x"', n: 1, ok: true, none: null },
    ]);
  });

  it('a secret of one to three characters is masked where it stands alone, never inside a word (_catalog stays _catalog)', () => {
    const redactor = new Redactor(['ca', 'a', 'x1']);
    assert.equal(redactor.redact('GET /v2/_catalog: 401'), 'GET /v2/_catalog: 401');
    assert.equal(redactor.redact('basic auth for alice failed'), 'basic auth for alice failed');
    assert.equal(redactor.redact('password "ca" refused'), 'password "******" refused');
    assert.equal(redactor.redact('ca'), '******');
    assert.equal(redactor.redact('user=x1&pass=ca'), 'user=******&pass=******');
    assert.equal(redactor.redact('{"password":"a"}'), '{"password":"******"}');
    // Its encodings too: base64 of "ca" is Y2E=, percent and JSON escapes decode to it.
    assert.equal(redactor.redact('token Y2E= sent'), 'token ****** sent');
    assert.equal(redactor.redact('p=%63%61;'), 'p=******;');
  });

  for (const secret of ['e', 'a', '"', '1', 'code', 'message', 'undefined', ':', '{', '\\']) {
    it(`a short or common password (${JSON.stringify(secret)}) leaves the answer and the log whole`, async () => {
      for (const body of [docker(registry.url, { password: secret }), { ...docker(registry.url, { password: secret }), name: '' }]) {
        const res = await service.test(body);
        assert.equal(res.status, 400, res.text);
        assert.equal(typeof res.json, 'object', res.text);
        assert.equal(res.json.code, 3);
        assert.equal(typeof res.json.message, 'string');
        assert.equal(res.json.error, res.json.message);
        assert.ok(Array.isArray(res.json.details));
        for (const v of res.json.details[0]?.fieldViolations ?? []) assert.ok(typeof v.field === 'string' && typeof v.description === 'string', res.text);
        if (secret !== 'undefined') assert.doesNotMatch(res.text, /undefined/);
        const line = service.log.entries().findLast((e) => e.msg === 'testing image integration');
        assert.equal(line.integration.docker.password, '******');
      }
    });
  }

  it('a Google service account pasted as an object is reported at google.serviceAccount, and masked', async () => {
    const key = {
      type: 'service_account',
      private_key_id: 'f00dfeedc0ffee0123456789',
      private_key: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCSecretKeyLine\n-----END PRIVATE KEY-----\n',
      client_email: 'x@y.iam.gserviceaccount.com',
    };
    const res = await service.test({ name: 'g', type: 'google', categories: ['REGISTRY'], google: { endpoint: registry.hostPort, serviceAccount: key } });
    assert.equal(res.status, 400, res.text);
    const violation = res.json.details[0].fieldViolations.find((v) => v.field === 'google.serviceAccount');
    assert.ok(violation, res.text);
    assert.equal(typeof violation.description, 'string');
    assert.doesNotMatch(res.json.message, /undefined/);
    for (const secret of ['f00dfeedc0ffee0123456789', 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCSecretKeyLine']) assertNoLeak(res, service.log, secret);
  });
});
