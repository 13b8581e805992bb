'use strict';
// Time linear in the request: each function that scans client-sized text, on about 1 MB built to
// make a backtracking regular expression (or one scan per secret) slow; the rewrites agree with the
// regular expressions they replace; and the service, in its own process, answers ~600 KB of such
// input while its liveness probe stays prompt.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { maskUserinfo, Redactor } = require('../build/lib/secrets.js');
const { createValidator } = require('../build/lib/validate.js');
const { parseEndpoint, refusedAddress } = require('../build/lib/endpoint.js');
const { parseChallenge } = require('../build/lib/registry.js');
const { startService } = require('./service');
const { runServing, request, livenessWhile } = require('./helpers');

const MB = 1 << 20;
const FOLDER = path.join(__dirname, '..');

/** Calls `fn`, asserts it returned within `limit` ms, and returns its result. */
function quick(fn, limit = 1000) {
  const started = performance.now();
  const result = fn();
  const took = performance.now() - started;
  assert.ok(took < limit, `took ${Math.round(took)} ms`);
  return result;
}

// Seeded (mulberry32), so a failing case comes back the same on the next run.
function generator(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` texts of up to `max` pieces drawn from `pieces`. */
function texts(seed, pieces, count, max) {
  const next = generator(seed);
  return Array.from({ length: count }, () => {
    let text = '';
    for (let n = Math.floor(next() * (max + 1)); n > 0; n--) text += pieces[Math.floor(next() * pieces.length)];
    return text;
  });
}

// The regular expressions these functions replaced, as the reference for what they answer.
const OLD_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;
const OLD_PARAMS = /(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g;
function oldChallenge(header) {
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (m === null) return undefined;
  const params = {};
  for (const p of m[2].matchAll(OLD_PARAMS)) params[p[1].toLowerCase()] = (p[2] ?? p[3]).replace(/\\(.)/g, '$1');
  return { scheme: m[1].toLowerCase(), params };
}

describe('linear time on 1 MB of hostile text (each was tens of seconds or more)', () => {
  it('maskUserinfo: a long word, a long scheme before a userinfo without @, and many URLs', () => {
    const word = 'a'.repeat(MB);
    assert.equal(
      quick(() => maskUserinfo(word)),
      word,
    );
    const noAt = `${'a'.repeat(MB / 2)}://${'b'.repeat(MB / 2)}`;
    assert.equal(
      quick(() => maskUserinfo(noAt)),
      noAt,
    );
    const many = 'x://u@'.repeat(MB / 6);
    assert.equal(
      quick(() => maskUserinfo(many)),
      'x://******@'.repeat(MB / 6),
    );
  });

  it('Redactor: 5,000 secrets over 1 MB of text (one scan, not one per secret)', () => {
    const secrets = Array.from({ length: 5000 }, (_, i) => `secret-${i}-value`);
    const text = Array.from({ length: 60_000 }, (_, i) => (i % 10 === 0 ? `${secrets[i % 5000]}; ` : `field-${i}; `))
      .join('')
      .slice(0, MB);
    const redactor = new Redactor(secrets);
    const out = quick(() => redactor.redact(text));
    assert.ok(!/secret-\d+-value/.test(out));
    assert.ok(out.startsWith('******; field-1; '));
  });

  it('parseEndpoint: a path of a million slashes that does not end in one', () => {
    const url = quick(() => parseEndpoint(`registry.example.com${'/'.repeat(MB)}v2`, { insecure: false }));
    assert.equal(url.pathname, `${'/'.repeat(MB)}v2`);
    assert.equal(quick(() => parseEndpoint(`registry.example.com/v2${'/'.repeat(MB)}`, { insecure: false })).pathname, '/v2');
  });

  it('refusedAddress: an IPv6 address with a 1 MB zone', () => {
    assert.equal(
      quick(() => refusedAddress(`fe80::1%${'1.'.repeat(MB / 2)}`)),
      `fe80::1%${'1.'.repeat(MB / 2)} is a link-local address`,
    );
    assert.equal(refusedAddress('::ffff:127.0.0.1'), '127.0.0.1 is a loopback address');
  });

  it('parseChallenge: a WWW-Authenticate header of one long word with no =', () => {
    assert.deepEqual(
      quick(() => parseChallenge(`Bearer ${'a'.repeat(MB)}`)),
      { scheme: 'bearer', params: {} },
    );
    assert.deepEqual(
      quick(() => parseChallenge(`Bearer ${'a'.repeat(MB)} realm="https://auth"`)),
      { scheme: 'bearer', params: { realm: 'https://auth' } },
    );
  });
});

describe('the rewrites answer as the regular expressions did', () => {
  it('maskUserinfo masks what /([a-z][a-z0-9+.-]*:\\/\\/)[^\\s/@]*@/gi masked, on 20,000 texts', () => {
    const pieces = ['a', 'Z', '1', '+', '.', '-', ':', '/', '@', ' ', '\n', '\u00a0', '\u2028', '\ufeff', 'é', '_', '://', 'https://'];
    for (const text of texts(1, pieces, 20_000, 14)) assert.equal(maskUserinfo(text), text.replace(OLD_USERINFO, '$1******@'), JSON.stringify(text));
    assert.equal(maskUserinfo('see https://user:pw@host/a and 1+git+ssh://me@h, ://x@y'), 'see https://******@host/a and 1+git+ssh://******@h, ://x@y');
  });

  it('parseChallenge reads what the old parameter regex read, on 20,000 headers', () => {
    const pieces = ['a', 'B', '_', '1', '=', '"', '\\', ',', ' ', '\t', '\n', 'é', 'realm', '="', 'x='];
    for (const header of texts(2, pieces, 20_000, 12)) assert.deepEqual(parseChallenge(header), oldChallenge(header), JSON.stringify(header));
  });

  it('the Redactor masks separate secrets as splitting on each did; overlapping ones become one mask', () => {
    const redactor = new Redactor(['hunter2', 'token-abc']);
    assert.equal(redactor.redact('a hunter2 b hunter2token-abc c'), 'a ****** b ************ c');
    // Splitting on the longer secret first left the end of the shorter one showing ("...******y").
    assert.equal(new Redactor(['abcd', 'cdxy']).redact('[abcdxy]'), '[******]');
  });

  it('an empty private_key is no secret (it used to put ****** between every two characters)', () => {
    const redactor = new Redactor([JSON.stringify({ client_email: 'x@y', private_key: '' })]);
    assert.equal(redactor.redact('plain text'), 'plain text');
  });

  it('a secret with a lone surrogate is still redacted (it used to throw: a 500)', () => {
    assert.equal(new Redactor(['pw\ud800']).redact('x pw\ud800 y'), 'x ****** y');
  });

  it("'Bearer' and only spaces is answered 401 as missing credentials", async () => {
    const service = await startService({ apiToken: 'api-token-1' });
    try {
      const res = await service.test({}, { authorization: `Bearer${' '.repeat(8000)}` });
      assert.equal(res.status, 401);
      assert.equal(res.json.code, 16);
      assert.match(res.json.message, /^missing credentials/);
      assert.equal((await service.test({}, { authorization: 'Bearer  api-token-1' })).status, 400);
    } finally {
      await service.close();
    }
  });
});

describe('the service stays live while it answers ~600 KB of hostile input', () => {
  const SIZE = 600_000;
  const hostile = {
    'a 600 KB username (logged, so scanned for URL userinfo)': {
      name: 'x',
      type: 'docker',
      categories: ['REGISTRY'],
      docker: { endpoint: 'registry.example.com', username: 'a'.repeat(SIZE) },
    },
    'a 600 KB scheme and userinfo without @': {
      name: `${'a'.repeat(SIZE / 2)}://${'b'.repeat(SIZE / 2)}`,
      type: 'docker',
      categories: ['REGISTRY'],
      docker: { endpoint: 'registry.example.com', username: 'u' },
    },
    'an endpoint of 600 KB of slashes': { type: 'docker', categories: ['REGISTRY'], docker: { endpoint: `registry.example.com${'/'.repeat(SIZE)}v2` } },
  };

  for (const [what, body] of Object.entries(hostile)) {
    it(`${what}: answered 400, and every liveness probe meanwhile within 1 s`, { timeout: 30_000 }, async () => {
      // Its own process: in this one, a blocked event loop would hold back the probes it measures too.
      const proc = await runServing([FOLDER]);
      try {
        const answer = request(`${proc.url}/v1/imageintegrations/test`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const { probes, value: res } = await livenessWhile(proc.url, answer);
        assert.equal(res.status, 400);
        assert.ok(Math.max(...probes) < 1000, `liveness took ${probes.join(', ')} ms`);
      } finally {
        proc.child.kill();
        await proc.exited;
      }
    });
  }
});

/** The CPU time process `pid` has used, in ms (Linux: utime + stime, in clock ticks of 10 ms). */
function cpuTime(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The peak resident set size of process `pid`, in bytes (Linux: VmHWM). */
function peakRss(pid) {
  return Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
}

describe('values of ignored fields are masked within bounds: a request of 1 MB of them costs milliseconds, not seconds and a gigabyte', () => {
  const MILLION = 1_000_000;
  let long = '';
  for (let i = 0; long.length < MILLION; i++) long += `${i.toString(36)}-`;
  long = long.slice(0, MILLION);
  // A loopback endpoint is refused before any lookup: the cost measured is the service's own.
  const docker = { endpoint: 'https://127.0.0.1:1', username: 'robot', password: 'a-declared-secret' };
  const hostile = {
    'an ignored field of 1,000,000 characters (docker.note)': { name: 'x', type: 'docker', categories: ['REGISTRY'], docker: { ...docker, note: long } },
    'clusters, a field the UI sends, holding one string of 1,000,000 characters': {
      name: 'x',
      type: 'docker',
      categories: ['REGISTRY'],
      docker,
      clusters: [long],
    },
  };

  for (const [what, body] of Object.entries(hostile)) {
    it(`${what}: answered 400 in under 1 s of CPU time, every liveness probe meanwhile within 1 s, peak RSS under 300 MB`, { timeout: 60_000 }, async (t) => {
      const proc = await runServing([FOLDER]);
      t.after(async () => {
        proc.child.kill();
        await proc.exited;
      });
      // Warmed up first (its code compiled), so what is measured is the hostile request.
      assert.equal(
        (
          await request(`${proc.url}/v1/imageintegrations/test`, {
            method: 'POST',
            body: JSON.stringify({ name: 'x', type: 'docker', categories: ['REGISTRY'], docker }),
          })
        ).status,
        400,
      );
      const cpu = cpuTime(proc.child.pid);
      const answer = request(`${proc.url}/v1/imageintegrations/test`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const { probes, value: res } = await livenessWhile(proc.url, answer);
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.message, /^endpoint refused: 127\.0\.0\.1 is a loopback address/);
      assert.ok(Math.max(...probes) < 1000, `liveness took ${probes.join(', ')} ms`);
      const used = cpuTime(proc.child.pid) - cpu;
      assert.ok(used < 1000, `the request took ${used} ms of CPU time`);
      const peak = peakRss(proc.child.pid);
      assert.ok(peak < 300 * MB, `peak RSS ${Math.round(peak / MB)} MB`);
    });
  }

  it('of 130,000 four-character ignored values, the first 16,384 are looked at (choosing among them all took 100 ms a request)', () => {
    const values = Array.from({ length: 130_000 }, (_, i) => i.toString(36).padStart(4, '0'));
    const { request } = createValidator()(undefined, { text: JSON.stringify({ name: 'x', type: 'docker', extra: values }) });
    assert.equal(request.ignoredStrings.length, 16_384);
    assert.deepEqual(request.ignoredStrings.slice(-2), values.slice(16_382, 16_384));
  });

  it('past the bound, the shortest values are the ones masked: a mistyped password beside 5,000 longer ignored values given before it', async (t) => {
    const service = await startService();
    t.after(() => service.close());
    const others = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`f${i}`, `an-ignored-value-longer-than-the-password-${i}`]));
    const res = await service.test({
      name: 'hunter2-mistyped',
      type: 'docker',
      categories: ['REGISTRY'],
      docker: { ...docker, ...others, pasword: 'hunter2-mistyped' },
    });
    assert.equal(res.status, 400, res.text);
    const logged = service.log.entries().find((line) => line.msg === 'testing image integration');
    assert.equal(logged.integration.name, '******');
    assert.ok(!service.log.text().includes('hunter2-mistyped'));
  });
});

describe('a secret longer than what is left of a form budget does not use it up', () => {
  it('a 20,000-character value first: a short secret after it is still known in hex and UTF-16', () => {
    const redactor = new Redactor(['x'.repeat(20_000), 'short-secret-1']);
    const hex = Buffer.from('short-secret-1').toString('hex');
    assert.equal(redactor.redact(`denied: ${hex}`), 'denied: ******');
    assert.equal(redactor.redact(`denied: ${Buffer.from('short-secret-1', 'utf16le').toString('hex')}`), 'denied: ******');
  });
});

describe('secrets that grow when rewritten cost a test what others do (NFKC writes U+FDFA as 18 characters: 64 KiB of it made 1.2 million characters of matcher per form)', () => {
  const K = 1024;
  const account = JSON.stringify({ type: 'service_account', private_key: '\ufdfa'.repeat(64 * K - 60) });

  it('a service account of 64 KiB of U+FDFA: added at once, its forms and matchers made in turns of under 400 ms each (it was 0.5 s to add and a turn of 0.6 s), and a form within four times its secret still known', async () => {
    const started = performance.now();
    const redactor = new Redactor([account, '\ufdfa-Sekr3t-Passw0rd']);
    const added = performance.now() - started;
    assert.ok(added < 100, `adding took ${Math.round(added)} ms`);
    // The turns the event loop takes while the matchers are built: each gap between two setImmediate ticks.
    const gaps = [];
    let last = performance.now();
    let ticking = true;
    const tick = () => {
      const now = performance.now();
      gaps.push(now - last);
      last = now;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    await redactor.ready();
    await new Promise((resolve) => setImmediate(resolve));
    ticking = false;
    assert.ok(Math.max(...gaps) < 400, `turns of ${gaps.map(Math.round).join(', ')} ms`);
    // NFKC writes the short secret in 34 characters, within four times its 17: known in that form too.
    assert.equal(redactor.redact(`denied: ${'\ufdfa-Sekr3t-Passw0rd'.normalize('NFKC')}`), 'denied: ******');
    assert.equal(redactor.redact(`denied: ${account}`), 'denied: ******');
  });

  const bodies = {
    'a Google registry with a service account of 64 KiB of U+FDFA': {
      name: 'g',
      type: 'google',
      categories: ['REGISTRY'],
      google: { endpoint: 'https://127.0.0.1:1', project: 'p', serviceAccount: account },
    },
    'the same service account in an invalid request (no category, no endpoint)': { name: 'g', type: 'google', google: { serviceAccount: account } },
  };
  for (const [what, body] of Object.entries(bodies)) {
    it(
      `${what}: 12 tests at once, each a 400, in under 4 s of CPU time (it was 12 s), every liveness probe meanwhile within 1 s (it was 5.5 s), peak RSS under 400 MB`,
      { timeout: 60_000 },
      async (t) => {
        const proc = await runServing([FOLDER]);
        t.after(async () => {
          proc.child.kill();
          await proc.exited;
        });
        const text = JSON.stringify(body);
        const test = () => request(`${proc.url}/v1/imageintegrations/test`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
        assert.equal((await test()).status, 400); // warmed up: its code compiled
        const cpu = cpuTime(proc.child.pid);
        const { probes, value: answers } = await livenessWhile(proc.url, Promise.all(Array.from({ length: 12 }, test)));
        for (const res of answers) assert.equal(res.status, 400, res.text);
        assert.ok(Math.max(...probes) < 1000, `liveness took ${probes.join(', ')} ms`);
        const used = cpuTime(proc.child.pid) - cpu;
        assert.ok(used < 4000, `the 12 tests took ${used} ms of CPU time`);
        const peak = peakRss(proc.child.pid);
        assert.ok(peak < 400 * MB, `peak RSS ${Math.round(peak / MB)} MB`);
      },
    );
  }

  it(
    '32 tests against a token service answering a token of 64 KiB of U+FDFA, which no header can carry: each a 400 that says so, without the token, in under 2.5 s of CPU time (it was 3.4 s)',
    { timeout: 60_000 },
    async (t) => {
      const token = '\ufdfa'.repeat(21_840);
      // A registry that sends its clients for a token to its own origin, over plain http (allowed there).
      const server = http.createServer((req, res) => {
        if (req.url.startsWith('/token')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ token }));
          return;
        }
        res.writeHead(401, { 'www-authenticate': `Bearer realm="http://127.0.0.1:${server.address().port}/token",service="spec"` });
        res.end();
      });
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const proc = await runServing([FOLDER], { env: { IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS: 'true' } });
      t.after(async () => {
        proc.child.kill();
        await proc.exited;
        await new Promise((resolve) => server.close(resolve));
      });
      const text = JSON.stringify({
        name: 'x',
        type: 'docker',
        categories: ['REGISTRY'],
        docker: { endpoint: `http://127.0.0.1:${server.address().port}`, username: 'robot', password: 'An0rdinary-Passw0rd' },
      });
      const test = () => request(`${proc.url}/v1/imageintegrations/test`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
      assert.equal((await test()).status, 400); // warmed up: its code compiled
      const cpu = cpuTime(proc.child.pid);
      for (const res of await Promise.all(Array.from({ length: 32 }, test))) {
        assert.equal(res.status, 400, res.text);
        assert.match(res.json.message, /^authentication: the token service at 127\.0\.0\.1:\d+ answered with a token that cannot be sent in a header/);
        assert.ok(!res.text.includes('\ufdfa'));
      }
      const used = cpuTime(proc.child.pid) - cpu;
      assert.ok(used < 2500, `the 32 tests took ${used} ms of CPU time`);
    },
  );
});
