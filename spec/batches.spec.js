'use strict';
// Batches of CloudEvents (application/cloudevents-batch+json): the handler runs per event and the
// returned events go back as a batch. One request timeout, one XML budget and one client for the
// whole batch; time linear in its size, whatever the query.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { CloudEvent } = require('cloudevents');
const { serve, request } = require('./helpers');

describe('CloudEvents batches', () => {
  it('runs the handler per event and answers the returned events as a batch', async (t) => {
    const types = [];
    const { url } = await serve(t, (ctx, data) => {
      types.push(ctx.cloudevent.type);
      return ctx
        .cloudEventResponse({ doubled: data.n * 2 })
        .type('dev.example.doubled')
        .source('/batch');
    });
    const events = [1, 2, 3].map((n) => new CloudEvent({ type: `t${n}`, source: '/s', data: { n } }));
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^application\/cloudevents-batch\+json/);
    assert.deepEqual(types, ['t1', 't2', 't3']);
    assert.deepEqual(
      res.json.map((e) => e.data.doubled),
      [2, 4, 6],
    );
    assert.ok(res.json.every((e) => e.type === 'dev.example.doubled'));
  });

  it('a batch whose handler returns no events is a 204; an invalid event in it is a 400 naming its index', async (t) => {
    const { url } = await serve(t, () => undefined);
    const ok = new CloudEvent({ type: 't', source: '/s' });
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify([ok, ok]) });
    assert.equal(res.status, 204);
    const bad = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json' },
      body: JSON.stringify([ok, { type: 't', source: '/s', specversion: '1.0' }]),
    });
    assert.equal(bad.status, 400);
    assert.match(bad.json.message, /event \[1\]: missing required attribute 'id'/);
    const notArray = await request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: '{}' });
    assert.equal(notArray.status, 400);
  });

  it('a batch of 20,000 events with 1,500 query keys is answered in time linear in its size', async (t) => {
    const server = await serve(t, () => undefined, { bodyLimit: 4_000_000 });
    const events = JSON.stringify(Array.from({ length: 20000 }, (_, i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't' })));
    const query = Array.from({ length: 1500 }, (_, i) => `k${i}=1`).join('&');
    const started = performance.now();
    const answer = await request(`${server.url}/?${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json' },
      body: events,
    });
    const took = performance.now() - started;
    assert.equal(answer.status, 204);
    assert.ok(took < 3000, `took ${Math.round(took)} ms (quadratic: about 10 s; linear: about 0.5 s)`);
  });

  it("a batch's contexts still carry the query keys, never over the context's own fields", async (t) => {
    const seen = [];
    const server = await serve(t, (ctx) => void seen.push([ctx.page, ctx.method, ctx.query.method]));
    const events = JSON.stringify([1, 2].map((i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't' })));
    await request(`${server.url}/?page=2&method=DELETE`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: events });
    assert.deepEqual(seen, [
      ['2', 'POST', 'DELETE'],
      ['2', 'POST', 'DELETE'],
    ]);
  });

  it('a batch of XML events shares one node budget: together no more than one XML body', async (t) => {
    const server = await serve(t, () => undefined, { bodyLimit: 2_000_000 });
    const doc = '<r>' + '<a/>'.repeat(20_000) + '</r>';
    const events = Array.from({ length: 4 }, (_, i) => ({
      specversion: '1.0',
      id: String(i),
      source: '/s',
      type: 't',
      datacontenttype: 'application/xml',
      data: doc,
    }));
    const answer = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json' },
      body: JSON.stringify(events),
    });
    assert.equal(answer.status, 400);
    assert.match(answer.json.message, /more than 50000/);
    const two = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json' },
      body: JSON.stringify(events.slice(0, 2)),
    });
    assert.equal(two.status, 204);
  });
});

describe('batches and the request timeout', () => {
  const batchOf = (n) => ({
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents-batch+json' },
    body: JSON.stringify(Array.from({ length: n }, (_, i) => ({ specversion: '1.0', id: String(i), source: '/s', type: 't' }))),
  });

  it('the timeout covers the whole batch, not each event: 40 events of 100 ms with a 300 ms timeout are a 504 in well under 4 s', async (t) => {
    const server = await serve(t, () => new Promise((r) => setTimeout(r, 100)), { timeout: 300 });
    const started = performance.now();
    const answer = await request(server.url, batchOf(40));
    assert.equal(answer.status, 504);
    assert.ok(performance.now() - started < 1500, `took ${Math.round(performance.now() - started)} ms`);
  });

  it('a batch whose client went away stops running its events', async (t) => {
    let ran = 0;
    const server = await serve(t, async () => {
      ran++;
      await new Promise((r) => setTimeout(r, 50));
    });
    await fetch(server.url, { ...batchOf(40), signal: AbortSignal.timeout(200) }).catch(() => {});
    await new Promise((r) => setTimeout(r, 600));
    assert.ok(ran < 15, `${ran} of 40 events ran`);
  });
});
