'use strict';
// Time linear in input size: a hostile body is refused (or served) at once, never blocking the
// event loop for long, with a well-formed JSON answer (a 4xx, never a 5xx).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, request } = require('./helpers');

const LIMIT = 4_000_000;

/**
 * Sends a hostile request and, while it is being processed, a liveness probe. Resolves with the
 * hostile answer, how long it took, and how long the probe waited. The defects these specs
 * reproduce block the event loop for tens of seconds; the bounds below are 1 s and 3 s.
 */
async function whileHostile(url, path, init) {
  const started = performance.now();
  const hostile = request(url + path, init).then((answer) => ({ ...answer, ms: performance.now() - started }));
  await new Promise((resolve) => setTimeout(resolve, 30));
  const probeStart = performance.now();
  const probe = await request(url + '/health/liveness');
  const probeMs = performance.now() - probeStart;
  assert.equal(probe.status, 200);
  return { ...(await hostile), probeMs };
}

function assertQuick(answer) {
  assert.ok(answer.probeMs < 1000, `liveness waited ${Math.round(answer.probeMs)} ms`);
  assert.ok(answer.ms < 3000, `the hostile request took ${Math.round(answer.ms)} ms`);
}

const structured = (event) => ({ method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
const event = (extra) => ({ specversion: '1.0', id: '1', source: '/spec', type: 'spec.test', ...extra });

describe('time linear in input size', () => {
  let server;
  before(async () => {
    server = await startServer((ctx, data) => (Buffer.isBuffer(data) ? data.toString('utf8') : { kind: typeof data }), { bodyLimit: LIMIT });
  });
  after(() => server.close());

  it('data_base64 of 1 MB of whitespace and a "!" is a 400 at once, and liveness is answered meanwhile', async () => {
    const answer = await whileHostile(server.url, '/', structured(event({ data_base64: ' '.repeat(1_000_000) + '!' })));
    assert.equal(answer.status, 400);
    assert.equal(answer.json.attribute, 'data_base64');
    assertQuick(answer);
  });

  for (const [what, body] of [
    ['1 MiB of fields without "=" (a&a&a...)', 'a&'.repeat(520_000)],
    ['2 MB of distinct names without "="', Array.from({ length: 250_000 }, (_, i) => `k${i}`).join('&')],
  ]) {
    it(`a form body of ${what} is read at once, and liveness is answered meanwhile`, async () => {
      const answer = await whileHostile(server.url, '/', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.json, { kind: 'object' });
      assertQuick(answer);
    });
  }

  it('malformed JSON nested 1,000,000 deep is a 400 with its position, not a 500', async () => {
    const answer = await whileHostile(server.url, '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(1_000_000) });
    assert.equal(answer.status, 400);
    assert.equal(typeof answer.json.position, 'number');
    assert.equal(typeof answer.json.line, 'number');
    assertQuick(answer);
  });

  it('well-formed JSON nested deeper than 512 levels is a 400; 512 levels are fine', async () => {
    const deep = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(513) + ']'.repeat(513) });
    assert.equal(deep.status, 400);
    assert.match(deep.json.message, /nested deeper than 512/);
    const ok = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(512) + ']'.repeat(512) });
    assert.equal(ok.status, 200);
    const inString = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify('['.repeat(5000)) });
    assert.equal(inString.status, 200, 'brackets inside strings do not count');
  });

  it('a structured CloudEvent whose data nests 1,000,000 deep is a 400 at once', async () => {
    const body = '{"specversion":"1.0","id":"1","source":"/s","type":"t","data":' + '['.repeat(1_000_000);
    const answer = await whileHostile(server.url, '/', { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body });
    assert.equal(answer.status, 400);
    assertQuick(answer);
  });
});
