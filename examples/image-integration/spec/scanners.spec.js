'use strict';
// Scanner checks against peers that follow each scanner's documented API.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startPeer, freePort } = require('./peers');
const { startService } = require('./service');

describe('scanners', () => {
  let service;
  let scanner;
  let healthy = true;
  before(async () => {
    service = await startService();
    scanner = await startPeer((req, res) => {
      const known = ['/scanner/ping', '/v1/namespaces', '/indexer/api/v1/index_state'].includes(req.url);
      res.writeHead(known && healthy ? 200 : known ? 503 : 404, { 'content-type': 'application/json' });
      res.end(known && healthy ? '{}' : '{"message":"not here"}');
    });
  });
  after(async () => {
    await service.close();
    await scanner.close();
  });

  const cases = {
    clairify: ['/scanner/ping', { name: 's', type: 'clairify', categories: ['SCANNER'], clairify: { endpoint: '', numConcurrentScans: 10 } }],
    clair: ['/v1/namespaces', { name: 's', type: 'clair', categories: ['SCANNER'], clair: { endpoint: '', insecure: true } }],
    clairV4: ['/indexer/api/v1/index_state', { name: 's', type: 'clairV4', categories: ['SCANNER'], clairV4: { endpoint: '', insecure: true } }],
  };
  for (const [type, [path, body]] of Object.entries(cases)) {
    it(`${type}: GET ${path} answered 200 passes; another answer fails with the status`, async () => {
      const integration = structuredClone(body);
      integration[type].endpoint = scanner.url;
      healthy = true;
      const ok = await service.test(integration);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(scanner.received.at(-1).url, path);
      healthy = false;
      const down = await service.test(integration);
      assert.equal(down.status, 400);
      assert.match(down.json.message, new RegExp(`^unexpected status: 127\\.0\\.0\\.1:\\d+ answered HTTP 503 to GET ${path.replace(/\//g, '\\/')}`));
      healthy = true;
    });
  }

  it('clair v4: an index state answered 304 Not Modified passes, as in StackRox (clairv4.go Test); clairify and clair answered 304 fail', async (t) => {
    const notModified = await startPeer((req, res) => {
      res.writeHead(304, { etag: '"index-state"' });
      res.end();
    });
    t.after(() => notModified.close());
    const v4 = await service.test({ name: 's', type: 'clairV4', categories: ['SCANNER'], clairV4: { endpoint: notModified.url } });
    assert.equal(v4.status, 200, v4.text);
    assert.equal(notModified.received.at(-1).url, '/indexer/api/v1/index_state');
    for (const [type, path] of [
      ['clairify', '/scanner/ping'],
      ['clair', '/v1/namespaces'],
    ]) {
      const res = await service.test({ name: 's', type, categories: ['SCANNER'], [type]: { endpoint: notModified.url } });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.message, `unexpected status: ${notModified.hostPort} answered HTTP 304 to GET ${path}`);
    }
  });

  it('scanner V4: both the indexer and the matcher must accept connections', async () => {
    const listeners = [];
    const listen = () =>
      new Promise((resolve) => {
        const server = net.createServer((s) => s.end());
        listeners.push(server);
        server.listen(0, '127.0.0.1', () => resolve(server.address().port));
      });
    const [indexer, matcher] = [await listen(), await listen()];
    const closed = await freePort();
    const v4 = (i, m) => ({
      name: 'v4',
      type: 'scannerv4',
      categories: ['SCANNER', 'NODE_SCANNER'],
      scannerV4: { indexerEndpoint: `127.0.0.1:${i}`, matcherEndpoint: `127.0.0.1:${m}` },
    });
    try {
      assert.equal((await service.test(v4(indexer, matcher))).status, 200);
      const noMatcher = await service.test(v4(indexer, closed));
      assert.equal(noMatcher.status, 400);
      assert.equal(noMatcher.json.message, `scanner V4 matcher: connect: 127.0.0.1:${closed} refused the connection (nothing listens there)`);
      const passed = service.log
        .entries()
        .filter((e) => e.msg === 'image integration test passed')
        .at(-1);
      assert.match(passed.checked[0], /their gRPC APIs were not called/);
    } finally {
      for (const server of listeners) server.close();
    }
  });

  it('quay as a scanner is tested through its registry', async () => {
    const registry = await startPeer((req, res) => {
      res.writeHead(req.headers.authorization === `Basic ${Buffer.from('$oauthtoken:quay-token').toString('base64')}` ? 200 : 401);
      res.end('{}');
    });
    try {
      const quay = { name: 'q', type: 'quay', categories: ['SCANNER'], quay: { endpoint: registry.url, insecure: true, oauthToken: 'quay-token' } };
      assert.equal((await service.test(quay)).status, 200);
      assert.equal(registry.received.at(-1).url, '/v2/');
    } finally {
      await registry.close();
    }
  });

  it('categories are tested in the order given; the first failure answers', async () => {
    const registry = await startPeer((req, res) => {
      res.writeHead(500);
      res.end('registry broken');
    });
    try {
      const quay = { name: 'q', type: 'quay', categories: ['REGISTRY', 'SCANNER'], quay: { endpoint: registry.url, insecure: true } };
      const res = await service.test(quay);
      assert.equal(res.status, 400);
      assert.match(res.json.message, /answered HTTP 500 to GET \/v2\/: registry broken/);
      assert.equal(registry.received.length, 1, 'the same registry check is not repeated for the scanner category');
    } finally {
      await registry.close();
    }
  });
});

describe("clairify's ping: a 200 whose body StackRox's client reads as JSON without an Error (stackrox/scanner pkg/clairify/client)", () => {
  let answer;
  let service;
  let scanner;
  before(async () => {
    service = await startService();
    scanner = await startPeer((req, res) => {
      res.writeHead(200, { 'content-type': answer.type ?? 'application/json' });
      res.end(answer.body);
    });
  });
  after(async () => {
    await service.close();
    await scanner.close();
  });
  const clairify = () => ({ name: 's', type: 'clairify', categories: ['SCANNER'], clairify: { endpoint: scanner.url } });

  const passing = {
    '{} (what the scanner answers)': '{}',
    '{"Error": null}': '{"Error": null}',
    'null (Go decodes it into nothing)': 'null',
    'other fields only': '{"status": "ok", "Errors": [1]}',
    'an Error given twice, the last null (the last wins)': '{"Error": {"Message": "starting"}, "error": null}',
    'a lone surrogate in a string (U+FFFD to encoding/json)': '{"status": "\\ud800", "Error": null}',
  };
  for (const [what, body] of Object.entries(passing)) {
    it(`passes: ${what}`, async () => {
      answer = { body };
      const res = await service.test(clairify());
      assert.equal(res.status, 200, res.text);
    });
  }

  const failing = {
    'an Error object': [
      { body: '{"Error": {"Message": "the scanner is not ready:\\nvulnerabilities are loading"}}' },
      'an error: the scanner is not ready: vulnerabilities are loading',
    ],
    'an error in lower case (Go matches field names in any case)': [{ body: '{"error": {"message": "no database"}}' }, 'an error: no database'],
    'an empty Error object': [{ body: '{"Error": {}}' }, 'an error'],
    'an Error that is not an object': [{ body: '{"Error": "broken"}' }, 'an Error field that is not an object: {"Error": "broken"}'],
    'an HTML page': [
      { type: 'text/html', body: '<html><body><h1>It works!</h1></body></html>' },
      'a body that is not JSON: <html><body><h1>It works!</h1></body></html>',
    ],
    'an empty body': [{ body: '' }, 'an empty body, where a JSON object was expected'],
    'JSON that is no object': [{ body: '[1, 2]' }, 'JSON that is not an object: [1, 2]'],
    'JSON with text after it': [{ body: '{} trailing' }, 'a body that is not JSON: {} trailing'],
  };
  for (const [what, [reply, why]] of Object.entries(failing)) {
    it(`fails: ${what}`, async () => {
      answer = reply;
      const res = await service.test(clairify());
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.message, `unexpected answer: ${scanner.hostPort} answered GET /scanner/ping with ${why}`);
    });
  }

  it('fails: a body larger than the bound (IMAGE_INTEGRATION_MAX_RESPONSE_BYTES), cut there and so no JSON', async (t) => {
    const small = await startService({ limits: { maxBodyBytes: 1024 } });
    t.after(() => small.close());
    answer = { body: JSON.stringify({ padding: 'x'.repeat(4096) }) };
    const res = await small.test(clairify());
    assert.equal(res.status, 400, res.text);
    assert.equal(
      res.json.message,
      `unexpected answer: ${scanner.hostPort} answered GET /scanner/ping with a body larger than 1024 bytes, where a JSON object was expected`,
    );
  });
});
