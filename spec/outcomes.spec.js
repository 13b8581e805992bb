'use strict';
// retry() and drop(): a function says what the broker should do with an event, rather than relying
// on what a throw means. Each is logged with the event's id, type and trace, and counted.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { CloudEvent, HTTP } = require('cloudevents');
const { serve, request } = require('./helpers');
const { retry, drop } = require('../lib/index.js');

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

async function post(url, ce) {
  const { headers, body } = HTTP.binary(ce);
  return request(url, { method: 'POST', headers: { ...headers, traceparent: TRACEPARENT }, body });
}

describe('explicit outcomes', () => {
  it('retry() answers 503 with Retry-After; the reason goes to the log with the event, never to the sender', async (t) => {
    const { url, log } = await serve(t, (context) =>
      context.cloudevent.type === 'busy' ? retry('pool exhausted at db-primary.internal', { after: 30, status: 429 }) : retry('db down'),
    );
    const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: {} });
    const res = await post(url, ce);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.equal(res.json.code, 'FUNCRUN_RETRY');
    assert.doesNotMatch(res.text, /db down/);
    const busy = await post(url, new CloudEvent({ type: 'busy', source: '/spec' }));
    assert.equal(busy.status, 429);
    assert.equal(busy.headers.get('retry-after'), '30');
    assert.doesNotMatch(busy.text, /db-primary/);
    const line = log.entries().find((e) => e.msg === 'event to be delivered again');
    assert.deepEqual(line.event, { id: ce.id, source: '/spec', type: 'order.created' });
    assert.equal(line.reason, 'db down');
    assert.equal(line.trace_id, '0af7651916cd43dd8448eb211c80319c');
    assert.ok(!log.entries().some((e) => e.level >= 50), 'a retry is not an error');
  });

  it('drop() answers 204 and logs the reason with the event', async (t) => {
    const { url, log } = await serve(t, () => drop('not for this region'));
    const ce = new CloudEvent({ type: 'order.created', source: '/spec', data: {} });
    const res = await post(url, ce);
    assert.equal(res.status, 204);
    const line = log.entries().find((e) => e.msg === 'event dropped');
    assert.equal(line.event.id, ce.id);
    assert.equal(line.reason, 'not for this region');
    assert.equal(line.trace_id, '0af7651916cd43dd8448eb211c80319c');
  });

  it('in a batch, a dropped event has no answer of its own and a retry() answers for the whole batch', async (t) => {
    const ran = [];
    const { url } = await serve(t, (context) => {
      ran.push(context.cloudevent.id);
      if (context.cloudevent.type === 'drop') return drop('skip');
      if (context.cloudevent.type === 'retry') return retry('later');
      return context.cloudEventResponse({ ok: true }).response();
    });
    const batch = (types) =>
      request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify(types.map((type, i) => new CloudEvent({ id: `${type}${i}`, type, source: '/spec' }))),
      });
    const dropped = await batch(['ok', 'drop', 'ok']);
    assert.equal(dropped.status, 200);
    assert.equal(dropped.json.length, 2);
    ran.length = 0;
    const retried = await batch(['ok', 'retry', 'ok']);
    assert.equal(retried.status, 503);
    assert.deepEqual(ran, ['ok0', 'retry1']);
  });

  it('named functions answer retry() and drop() as handle does: never as data', async (t) => {
    const charge = (input) => (input.later ? retry('card processor down', { after: 9 }) : drop('duplicate order'));
    charge.trigger = 'order.created';
    const { url, log } = await serve(t, { functions: { charge } });
    const later = await post(url, new CloudEvent({ type: 'order.created', source: '/spec', data: { later: true } }));
    assert.equal(later.status, 503);
    assert.equal(later.headers.get('retry-after'), '9');
    assert.doesNotMatch(later.text, /card processor/);
    const dropped = await post(url, new CloudEvent({ type: 'order.created', source: '/spec', data: {} }));
    assert.equal(dropped.status, 204);
    const byName = await request(new URL('/charge', url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"later":true}' });
    assert.equal(byName.status, 503);
    assert.doesNotMatch(byName.text, /card processor/);
    assert.ok(log.entries().some((e) => e.msg === 'event dropped' && e.reason === 'duplicate order'));
  });

  it('retried and dropped events are counted; a wrong retry() option is the function’s error', async (t) => {
    const { url } = await serve(
      t,
      (context) => (context.cloudevent.type === 'drop' ? drop('x') : context.cloudevent.type === 'bad' ? retry('x', { after: -1 }) : retry('x')),
      {
        idempotency: true,
      },
    );
    await post(url, new CloudEvent({ type: 'drop', source: '/spec' }));
    await post(url, new CloudEvent({ type: 'retry', source: '/spec' }));
    assert.equal((await post(url, new CloudEvent({ type: 'bad', source: '/spec' }))).status, 500);
    const metrics = await request(new URL('/metrics', url));
    assert.match(metrics.text, /funcrun_events_total\{outcome="dropped",[^}]*\} 1\n/);
    assert.match(metrics.text, /funcrun_events_total\{outcome="retried",[^}]*\} 1\n/);
    assert.throws(() => retry('x', { status: 500 }), /'status' is 429 or 503/);
  });
});
