'use strict';
// Each example answers as its README says.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { CloudEvent, HTTP } = require('cloudevents');
const { runServing, request } = require('./helpers');

const EXAMPLES = path.join(__dirname, '..', 'examples');

async function withExample(name, fn) {
  const proc = await runServing([path.join(EXAMPLES, name)]);
  try {
    await fn(proc.url);
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
}

describe('examples', () => {
  it('hello: greets from the query string and from a JSON body', async () => {
    await withExample('hello', async (url) => {
      assert.deepEqual((await request(url + '/?name=Ann')).json, { greeting: 'Hello, Ann!', method: 'GET' });
      const res = await request(url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Bob"}' });
      assert.deepEqual(res.json, { greeting: 'Hello, Bob!', method: 'POST' });
      assert.equal((await request(url + '/health/readiness')).text, 'OK');
    });
  });

  it('cloudevent: answers an order event with a confirmation event, in the mode it came in', async () => {
    await withExample('cloudevent', async (url) => {
      const order = new CloudEvent({ type: 'dev.example.order', source: '/shop', data: { customerId: 1, productId: 2 } });
      for (const mode of ['binary', 'structured']) {
        const message = HTTP[mode](order);
        const res = await fetch(url, { method: 'POST', headers: message.headers, body: message.body });
        assert.equal(res.status, 200);
        const answer = HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: await res.text() });
        assert.equal(answer.type, 'dev.example.order.confirmed');
        assert.equal(answer.source, '/order-confirmer');
        assert.deepEqual(answer.data, { confirmed: true, customerId: 1, productId: 2 });
        assert.equal(res.headers.has('ce-id'), mode === 'binary');
      }
      assert.equal((await request(url, { method: 'POST', body: '{}' })).status, 400);
    });
  });

  it('typescript: compiles with its own tsc config and answers 201 with the total', async () => {
    const folder = path.join(EXAMPLES, 'typescript');
    // What `npm install` does for its "funcrun": "file:../.." dependency: a link to this package.
    const link = path.join(folder, 'node_modules', 'funcrun');
    fs.mkdirSync(path.dirname(link), { recursive: true });
    if (!fs.existsSync(link)) fs.symlinkSync(path.relative(path.dirname(link), path.join(__dirname, '..')), link, 'dir');
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', folder], { encoding: 'utf8' });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    assert.ok(fs.existsSync(path.join(folder, 'build', 'index.js')));
    await withExample('typescript', async (url) => {
      const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"customerId": 1, "productId": 2}' });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('x-customer'), '1');
      assert.deepEqual(res.json, { customerId: 1, productId: 2, total: 20 });
      assert.equal((await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"customerId": "1"}' })).status, 400);
      assert.equal((await request(url)).status, 405);
    });
  });

  it("the README's ten-line handler answers its curl", async () => {
    const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
    const handler = /```js\n(\/\/ index\.js\n[\s\S]*?)```/.exec(readme)[1];
    assert.ok(handler.split('\n').filter(Boolean).length <= 11, 'about ten lines');
    const folder = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'funcrun-readme-'));
    fs.writeFileSync(path.join(folder, 'index.js'), handler);
    const proc = await runServing([folder]);
    try {
      const curl = await request(proc.url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Ann"}' });
      assert.deepEqual(curl.json, { greeting: 'Hello, Ann!' });
      assert.match(readme, /# \{"greeting":"Hello, Ann!"\}/);
      assert.deepEqual((await request(proc.url + '/?name=Bo')).json, { greeting: 'Hello, Bo!' });
      assert.equal((await request(proc.url + '/?name=' + 'x'.repeat(101))).status, 400);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });
});

