'use strict';
// Name resolution and connecting: a bounded resolver (c-ares, a timeout, the test's signal, at
// most 8 lookups in flight) against a DNS server on 127.0.0.1 that this spec starts; each resolved
// address tried in order; a body that stalls told apart from no answer. Everything stays on loopback.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { startRegistry, startPeer, startSilent, freePort } = require('./peers');
const { startService } = require('./service');
const { startDns } = require('./network-dns');

const PASSWORD = 'Corr3ct-H0rse-Battery';

const docker = (endpoint) => ({
  name: 'spec registry',
  type: 'docker',
  categories: ['REGISTRY'],
  docker: { endpoint, username: 'alice', password: PASSWORD, insecure: true },
});

const v4 = (indexer, matcher) => ({
  name: 'v4',
  type: 'scannerv4',
  categories: ['SCANNER'],
  scannerV4: { indexerEndpoint: indexer, matcherEndpoint: matcher },
});

const timed = async (promise) => {
  const start = Date.now();
  const value = await promise;
  return { value, ms: Date.now() - start };
};

const until = async (condition, what, ms = 5000) => {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe("scanner V4 without endpoints: StackRox's in-cluster defaults are contacted", () => {
  it('scanner-v4-indexer.stackrox.svc:8443 and the matcher are resolved (here by a loopback DNS that knows neither)', async (t) => {
    const dns = await startDns({});
    const service = await startService({ limits: { dnsServers: [dns.server], resolveTimeout: 2000, connectTimeout: 1000 } });
    t.after(async () => {
      await service.close();
      await dns.close();
    });
    const res = await service.test({ name: 'v4', type: 'scannerv4', categories: ['SCANNER'], scannerV4: { indexerEndpoint: '', matcherEndpoint: '' } });
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^scanner V4 indexer: .*scanner-v4-indexer\.stackrox\.svc/);
    assert.ok(
      dns.queries.some((q) => q.name === 'scanner-v4-indexer.stackrox.svc'),
      JSON.stringify(dns.queries),
    );
  });
});

describe('name resolution is bounded', () => {
  let dns;
  let registry;
  let service;
  before(async () => {
    const table = {
      'registry.spec.test': { A: ['127.0.0.1'] },
      'no-aaaa.spec.test': { A: ['127.0.0.1'], AAAA: 'hang' },
      'no-a.spec.test': { A: 'hang', AAAA: ['::1'] },
    };
    for (let i = 0; i < 12; i++) table[`hang${i}.spec.test`] = 'hang';
    dns = await startDns(table);
    registry = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD } });
    service = await startService({
      testTimeout: 10_000,
      limits: { dnsServers: [dns.server], resolveTimeout: 3000, connectTimeout: 2000, responseTimeout: 2000 },
    });
  });
  after(async () => {
    await service.close();
    await registry.close();
    await dns.close();
  });

  it('a name from the configured DNS server resolves and the registry is reached', async () => {
    const res = await service.test(docker(`http://registry.spec.test:${registry.port}`));
    assert.equal(res.status, 200, res.text);
    assert.ok(dns.queries.some((q) => q.name === 'registry.spec.test' && q.type === 'A'));
  });

  it('a short name is tried with the search domains first, as getaddrinfo does (a Kubernetes service name)', async () => {
    const withSearch = await startService({
      testTimeout: 10_000,
      limits: {
        dnsServers: [dns.server],
        search: { search: ['other.test', 'spec.test'], ndots: 5 },
        resolveTimeout: 3000,
        connectTimeout: 2000,
        responseTimeout: 2000,
      },
    });
    try {
      const before = dns.queries.length;
      const res = await withSearch.test(docker(`http://registry:${registry.port}`));
      assert.equal(res.status, 200, res.text);
      const asked = dns.queries
        .slice(before)
        .filter((q) => q.type === 'A')
        .map((q) => q.name);
      assert.ok(asked.indexOf('registry.other.test') < asked.indexOf('registry.spec.test'), asked.join(' '));
      // A name ending in a dot is only itself.
      const dotted = await withSearch.test(docker(`http://registry.:${registry.port}`));
      assert.equal(dotted.status, 400);
    } finally {
      await withSearch.close();
    }
  });

  it('a DNS server that drops AAAA questions: the A answer that came is used when the resolution bound is reached, and the registry is reached', async () => {
    const res = await service.test(docker(`http://no-aaaa.spec.test:${registry.port}`));
    assert.equal(res.status, 200, res.text);
    assert.ok(dns.queries.some((q) => q.name === 'no-aaaa.spec.test' && q.type === 'AAAA'));
  });

  it('a DNS server that drops A questions: the AAAA answer is used the same way', async (t) => {
    const six = http.createServer((req, res) => res.end('{}'));
    await new Promise((resolve) => six.listen(0, '::1', resolve));
    t.after(() => new Promise((resolve) => six.close(resolve)));
    const res = await service.test({
      name: 'clair',
      type: 'clair',
      categories: ['SCANNER'],
      clair: { endpoint: `http://no-a.spec.test:${six.address().port}` },
    });
    assert.equal(res.status, 200, res.text);
    assert.ok(dns.queries.some((q) => q.name === 'no-a.spec.test' && q.type === 'A'));
  });

  it('a name unknown to the DNS server: cannot resolve host (ENOTFOUND)', async () => {
    const res = await service.test(docker('http://missing.spec.test:5000'));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, "connect: cannot resolve host 'missing.spec.test' (ENOTFOUND)");
  });

  it('a name whose DNS server never answers fails with "name resolution timed out" within its bound', async () => {
    const { value: res, ms } = await timed(service.test(docker('http://hang0.spec.test:5000')));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, "connect: cannot resolve host 'hang0.spec.test': name resolution timed out after 3s");
    assert.ok(ms >= 2900 && ms < 4500, `answered after ${ms}ms`);
    assert.ok(
      dns.queries.some((q) => q.name === 'hang0.spec.test'),
      'the DNS server was asked',
    );
  });

  it('the scanner V4 TCP check resolves the same bounded way', async () => {
    const { value: res, ms } = await timed(service.test(v4('hang1.spec.test:8443', '127.0.0.1:1')));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, "scanner V4 indexer: connect: cannot resolve host 'hang1.spec.test': name resolution timed out after 3s");
    assert.ok(ms < 4500, `answered after ${ms}ms`);
  });

  it('8 hanging lookups do not delay a test against a healthy registry (by IP and by localhost, which need no DNS)', async () => {
    const hanging = [];
    for (let i = 2; i < 10; i++) hanging.push(service.test(docker(`http://hang${i}.spec.test:5000`)));
    let settled = 0;
    for (const h of hanging) h.then(() => settled++);
    // All 8 are in flight: the DNS server has their questions and answers none.
    await until(() => new Set(dns.queries.filter((q) => /^hang[2-9]\./.test(q.name)).map((q) => q.name)).size === 8, '8 questions');

    const byIp = await timed(service.test(docker(registry.url)));
    assert.equal(byIp.value.status, 200, byIp.value.text);
    assert.ok(byIp.ms < 2000, `the healthy registry answered after ${byIp.ms}ms`);
    const byLocalhost = await timed(service.test(docker(`http://localhost:${registry.port}`)));
    assert.equal(byLocalhost.value.status, 200, byLocalhost.value.text);
    assert.ok(byLocalhost.ms < 2000, `the healthy registry (localhost) answered after ${byLocalhost.ms}ms`);
    assert.ok(!dns.queries.some((q) => q.name === 'localhost'), 'localhost is never asked of DNS');
    assert.equal(settled, 0, 'the hanging lookups were still pending');

    // A ninth lookup waits for a turn, and its test's own timeout still stops it.
    const impatient = await startService({ testTimeout: 500, limits: { dnsServers: [dns.server], resolveTimeout: 3000 } });
    try {
      const waiting = await timed(impatient.test(docker(`http://registry.spec.test:${registry.port}`)));
      assert.equal(waiting.value.status, 400);
      assert.equal(waiting.value.json.message, 'the test did not finish within 0.5s');
      assert.ok(waiting.ms < 1500, `the waiting test answered after ${waiting.ms}ms`);
    } finally {
      await impatient.close();
    }

    for (const res of await Promise.all(hanging)) {
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^connect: cannot resolve host 'hang\d\.spec\.test': name resolution timed out after 3s$/);
    }
    // Their turns are given back: a named lookup goes through at once.
    const after = await timed(service.test(docker(`http://registry.spec.test:${registry.port}`)));
    assert.equal(after.value.status, 200, after.value.text);
    assert.ok(after.ms < 2000, `answered after ${after.ms}ms`);
  });

  it('a lookup past its bound because all turns are taken says so', async () => {
    const quick = await startService({ testTimeout: 10_000, limits: { dnsServers: [dns.server], resolveTimeout: 400 } });
    const slow = await startService({ testTimeout: 10_000, limits: { dnsServers: [dns.server], resolveTimeout: 2000 } });
    try {
      const hanging = [];
      for (let i = 2; i < 10; i++) hanging.push(slow.test(docker(`http://hang${i}.spec.test:5000`)));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const res = await quick.test(docker('http://hang10.spec.test:5000'));
      assert.equal(res.status, 400);
      assert.equal(
        res.json.message,
        "connect: cannot resolve host 'hang10.spec.test': name resolution timed out after 400ms (it waited for one of the 8 lookups in flight)",
      );
      await Promise.all(hanging);
    } finally {
      await quick.close();
      await slow.close();
    }
  });

  it('a name in the hosts file is answered from it, without asking DNS (as getaddrinfo did)', async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-hosts-'));
    const hostsFile = path.join(folder, 'hosts');
    fs.writeFileSync(hostsFile, '# a comment\n127.0.0.1 other.spec.test\n127.0.0.1\tHosts.Spec.Test alias.spec.test # trailing\n');
    const withHosts = await startService({ limits: { dnsServers: [dns.server], hostsFile } });
    try {
      for (const name of ['hosts.spec.test', 'alias.spec.test']) {
        const res = await withHosts.test(docker(`http://${name}:${registry.port}`));
        assert.equal(res.status, 200, res.text);
        assert.ok(!dns.queries.some((q) => q.name === name), `${name} was asked of DNS`);
      }
    } finally {
      await withHosts.close();
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('an injected resolver (limits.resolve) that never settles is bounded the same way', async () => {
    const stuck = await startService({ limits: { resolveTimeout: 300, resolve: () => new Promise(() => undefined) } });
    try {
      const { value: res, ms } = await timed(stuck.test(docker('http://stuck.spec.test:5000')));
      assert.equal(res.status, 400);
      assert.equal(res.json.message, "connect: cannot resolve host 'stuck.spec.test': name resolution timed out after 300ms");
      assert.ok(ms < 1500, `answered after ${ms}ms`);
    } finally {
      await stuck.close();
    }
  });
});

describe('each resolved address is tried in order', () => {
  let dns;
  let registry;
  let unused;
  let service;
  before(async () => {
    registry = await startRegistry({ auth: 'htpasswd', users: { alice: PASSWORD } });
    unused = await freePort();
    dns = await startDns({
      'two.spec.test': { A: ['127.0.0.2', '127.0.0.1'] },
      'six.spec.test': { A: ['127.0.0.1'], AAAA: ['::1'] },
    });
    service = await startService({ limits: { dnsServers: [dns.server], connectTimeout: 1000, responseTimeout: 1000 } });
  });
  after(async () => {
    await service.close();
    await registry.close();
    await dns.close();
  });

  it('a name resolving to [127.0.0.2 (nothing there), 127.0.0.1 (the registry)] succeeds', async () => {
    const res = await service.test(docker(`http://two.spec.test:${registry.port}`));
    assert.equal(res.status, 200, res.text);
  });

  it('a name resolving to [::1 (nothing there), 127.0.0.1 (the registry)] succeeds', async () => {
    const resolve = async () => [
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ];
    const stubbed = await startService({ limits: { resolve } });
    try {
      const res = await stubbed.test(docker(`http://registry.spec.test:${registry.port}`));
      assert.equal(res.status, 200, res.text);
    } finally {
      await stubbed.close();
    }
  });

  it('localhost reaches a peer that listens on ::1 only (127.0.0.1 is tried first)', async () => {
    const server = http.createServer((req, res) => res.end('{}'));
    await new Promise((resolve) => server.listen(0, '::1', resolve));
    const { port } = server.address();
    try {
      const res = await service.test({
        name: 'clair',
        type: 'clair',
        categories: ['SCANNER'],
        clair: { endpoint: `http://localhost:${port}`, insecure: true },
      });
      assert.equal(res.status, 200, res.text);
      const tcp = await service.test(v4(`localhost:${port}`, `[::1]:${port}`));
      assert.equal(tcp.status, 200, tcp.text);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('when no address takes the connection, the failure names every address tried', async () => {
    const res = await service.test(docker(`http://two.spec.test:${unused}`));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, `connect: two.spec.test:${unused} refused the connection (nothing listens there) (tried 127.0.0.2, 127.0.0.1)`);
    const tcp = await service.test(v4(`six.spec.test:${unused}`, '127.0.0.1:1'));
    assert.equal(tcp.status, 400);
    assert.equal(
      tcp.json.message,
      `scanner V4 indexer: connect: six.spec.test:${unused} refused the connection (nothing listens there) (tried 127.0.0.1, ::1)`,
    );
  });

  it('every address is checked by the policy: one refused address refuses the name', async () => {
    const strict = await startService({
      limits: {
        allowPrivate: false,
        resolve: async () => [
          { address: '203.0.113.7', family: 4 },
          { address: '169.254.169.254', family: 4 },
        ],
      },
    });
    try {
      const res = await strict.test(docker('http://mixed.spec.test:5000'));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^endpoint refused: mixed\.spec\.test resolves to 169\.254\.169\.254, which is a link-local address/);
    } finally {
      await strict.close();
    }
  });
});

describe('a body that stalls is told apart from no answer', () => {
  let service;
  before(async () => {
    service = await startService({ limits: { connectTimeout: 500, responseTimeout: 500 } });
  });
  after(() => service.close());

  it('headers, part of the body, then nothing: "sent headers and then stopped sending its body"', async () => {
    const stalling = await startPeer((req, res) => {
      res.writeHead(401, { 'content-type': 'text/plain', 'content-length': '1000' });
      res.write('the start of a body');
    });
    try {
      const { value: res, ms } = await timed(service.test(docker(stalling.url)));
      assert.equal(res.status, 400);
      assert.equal(res.json.message, `${stalling.hostPort} sent headers and then stopped sending its body (timeout after 500ms)`);
      assert.ok(ms < 2000, `answered after ${ms}ms`);
    } finally {
      await stalling.close();
    }
  });

  it('headers only, no body at all: the same message', async () => {
    const stalling = await startPeer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
      res.flushHeaders();
    });
    try {
      const res = await service.test(docker(stalling.url));
      assert.equal(res.status, 400);
      assert.equal(res.json.message, `${stalling.hostPort} sent headers and then stopped sending its body (timeout after 500ms)`);
    } finally {
      await stalling.close();
    }
  });

  it('no headers at all: "no answer within"', async () => {
    const silent = await startSilent();
    try {
      const res = await service.test(docker(`http://${silent.hostPort}`));
      assert.equal(res.status, 400);
      assert.equal(res.json.message, `no answer from ${silent.hostPort} within 500ms`);
    } finally {
      await silent.close();
    }
  });
});
