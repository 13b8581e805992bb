'use strict';
// Event contracts, idempotency and retry()/drop() for a fetch handler: a module with `events` (or
// with idempotency on) has a request's CloudEvents admitted before `fetch` runs, as a `handle`
// function's are: refused by their contract (400), a duplicate answered from the store byte for
// byte without `fetch` running again (429 while it runs), and `fetch` handed a Request whose
// readEvent() gives the admitted events. retry() and drop(), returned or thrown, answer 503 with
// Retry-After and 204. Checked with a plain `{ fetch }` object and a real Hono app.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { CloudEvent, HTTP } = require('cloudevents');
const { Hono } = require('hono');
const { serve, request } = require('./helpers');
const { startRedis } = require('./redis');
const { drop, eventResponse, readEvent, readEvents, retry } = require('../lib/index.js');

const ORDER = { type: 'object', properties: { id: { type: 'string' }, total: { type: 'number', minimum: 0 } }, required: ['id', 'total'] };

// A Standard Schema validator written out, as Zod makes one: digits in, a number out.
const amount = {
  '~standard': {
    version: 1,
    vendor: 'spec',
    validate(value) {
      if (value === null || typeof value !== 'object' || typeof value.amount !== 'string' || !/^\d+$/.test(value.amount)) {
        return { issues: [{ message: 'amount must be digits', path: [{ key: 'amount' }] }] };
      }
      return { value: { amount: Number(value.amount) } };
    },
  },
};

const EVENTS = { types: { 'order.created': ORDER, 'payment.received': amount } };
const ON = { idempotency: true };

function event(type, data, extra = {}) {
  return new CloudEvent({ type, source: '/spec', data, ...extra });
}

async function post(url, ce, mode = 'binary') {
  const { headers, body } = mode === 'binary' ? HTTP.binary(ce) : HTTP.structured(ce);
  return request(url, { method: 'POST', headers, body });
}

function postBatch(url, events) {
  const body = JSON.stringify(events.map((e) => e.toJSON()));
  return request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body });
}

/** Status, headers (but Date and the connection's) and body: what a replay must repeat. */
function answerOf(res) {
  const headers = [...res.headers].filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name));
  return { status: res.status, headers, text: res.text };
}

function gate() {
  let open;
  const opened = new Promise((resolve) => (open = resolve));
  return { opened, open };
}

describe('a fetch handler with event contracts', () => {
  it("readEvent() of a copy of fetch's Request (Hono's bodyLimit() on a chunked body, clone(), new Request()) gives the admitted events, not the body read again", async (t) => {
    const { bodyLimit } = require('hono/body-limit');
    const app = new Hono();
    app.post('/', bodyLimit({ maxSize: 1024 }), async (c) => {
      const copy = new Request(c.req.raw, { body: JSON.stringify({ amount: 'not even digits' }), duplex: 'half' });
      const [limited, cloned, made] = await Promise.all([readEvent(c.req.raw), readEvent(c.req.raw.clone()), readEvent(copy)]);
      return c.json([limited.data, cloned.data, made.data]);
    });
    const { url } = await serve(t, { events: EVENTS, fetch: app.fetch });
    const { headers, body } = HTTP.binary(event('payment.received', { amount: '42' }));
    // Chunked: bodyLimit() replaces the Request with one of its own, whose body it counts.
    const chunked = await request(url, { method: 'POST', headers, body: new Blob([body]).stream(), duplex: 'half' });
    assert.equal(chunked.status, 200, chunked.text);
    assert.deepEqual(chunked.json, [{ amount: 42 }, { amount: 42 }, { amount: 42 }]);
  });

  it("an event is checked before fetch runs: a broken contract or an undeclared type is a 400 with its code, and fetch's readEvent() gives the validator's output", async (t) => {
    const seen = [];
    const { url } = await serve(t, {
      events: EVENTS,
      async fetch(request) {
        const ce = await readEvent(request);
        seen.push({ type: ce.type, data: ce.data });
        return Response.json({ ok: true });
      },
    });
    assert.equal((await post(url, event('order.created', { id: 'o1', total: 3 }))).status, 200);
    assert.equal((await post(url, event('payment.received', { amount: '42' }), 'structured')).status, 200);
    const invalid = await post(url, event('order.created', { id: 'o2', total: -1 }));
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.code, 'FUNCRUN_INVALID_EVENT_DATA');
    const digits = await post(url, event('payment.received', { amount: 'ten' }));
    assert.equal(digits.status, 400);
    assert.equal(digits.json.code, 'FUNCRUN_INVALID_EVENT_DATA');
    const undeclared = await post(url, event('order.deleted', { id: 'o3' }));
    assert.equal(undeclared.status, 400);
    assert.equal(undeclared.json.code, 'FUNCRUN_UNDECLARED_EVENT_TYPE');
    // The validator's output, not the data as sent: the amount is a number.
    assert.deepEqual(seen, [
      { type: 'order.created', data: { id: 'o1', total: 3 } },
      { type: 'payment.received', data: { amount: 42 } },
    ]);
  });

  it('the Request fetch gets carries the bytes read: its body can still be read, and a request that is no event reaches fetch unread', async (t) => {
    const { url } = await serve(t, {
      events: EVENTS,
      async fetch(request) {
        const admitted = request.headers.has('ce-id') ? (await readEvent(request)).data : null;
        return Response.json({ admitted, body: await request.text(), path: new URL(request.url).pathname });
      },
    });
    const ce = event('order.created', { id: 'o1', total: 3 });
    const res = await post(`${url}/orders?x=1`, ce);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { admitted: { id: 'o1', total: 3 }, body: JSON.stringify({ id: 'o1', total: 3 }), path: '/orders' });
    // No CloudEvent: no contract applies, fetch reads the body itself.
    const plain = await request(`${url}/plain`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'not an event' });
    assert.deepEqual(plain.json, { admitted: null, body: 'not an event', path: '/plain' });
  });

  it('a batch is checked event by event: one broken event refuses it, otherwise readEvents() gives them all', async (t) => {
    let calls = 0;
    const { url } = await serve(t, {
      events: EVENTS,
      async fetch(request) {
        calls++;
        const events = await readEvents(request);
        return Response.json(events.map((e) => e.data));
      },
    });
    const ok = await postBatch(url, [event('order.created', { id: 'a', total: 1 }), event('payment.received', { amount: '7' })]);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.json, [{ id: 'a', total: 1 }, { amount: 7 }]);
    const broken = await postBatch(url, [event('order.created', { id: 'a', total: 1 }), event('order.created', { id: 'b' })]);
    assert.equal(broken.status, 400);
    assert.equal(broken.json.code, 'FUNCRUN_INVALID_EVENT_DATA');
    assert.equal(calls, 1);
  });

  it('an event over the body limit, sent without a length, is a 413 before fetch runs', async (t) => {
    let calls = 0;
    const { url } = await serve(t, { events: EVENTS, fetch: () => (calls++, new Response('ran')) }, { bodyLimit: 100 });
    const { headers, body } = HTTP.binary(event('order.created', { id: 'x'.repeat(500), total: 1 }));
    // Chunked: only reading the body finds it too large.
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(body));
        controller.close();
      },
    });
    const res = await request(url, { method: 'POST', headers, body: chunked, duplex: 'half' });
    assert.equal(res.status, 413);
    assert.equal(res.json.code, 'FUNCRUN_BODY_TOO_LARGE');
    assert.equal(calls, 0);
  });
});

describe('a fetch handler with idempotency', () => {
  it('a duplicate gets the first answer again, byte for byte, in either mode, and fetch runs once', async (t) => {
    let calls = 0;
    const { url, log } = await serve(
      t,
      {
        async fetch(request) {
          calls++;
          const ce = await readEvent(request);
          return Response.json({ calls, id: ce.id }, { status: 201, headers: { 'x-order': ce.data.id } });
        },
      },
      ON,
    );
    const ce = event('order.created', { id: 'o1', total: 3 });
    const first = await post(url, ce);
    assert.equal(first.status, 201);
    assert.deepEqual(first.json, { calls: 1, id: ce.id });
    const again = await post(url, ce);
    const structured = await post(url, ce, 'structured');
    assert.equal(calls, 1);
    assert.deepEqual(answerOf(again), answerOf(first));
    assert.deepEqual(answerOf(structured), answerOf(first));
    assert.equal(log.entries().filter((e) => e.msg === 'duplicate event: answered as the first delivery was').length, 2);
    // Another event runs; a request that is no event is never deduplicated.
    assert.equal((await post(url, event('order.created', { id: 'o2', total: 1 }))).json.calls, 2);
    await request(url, { method: 'POST', body: 'plain' });
    await request(url, { method: 'POST', body: 'plain' });
    assert.equal(calls, 4);
  });

  it('a duplicate while fetch still runs is a 429 with Retry-After; a 5xx releases the event, so its next delivery runs', { timeout: 10_000 }, async (t) => {
    let calls = 0;
    const { opened, open } = gate();
    const { url } = await serve(
      t,
      {
        async fetch(request) {
          calls++;
          const ce = await readEvent(request);
          if (ce.data.id === 'slow') await opened;
          if (ce.data.id === 'failing' && calls < 4) return Response.json({ failed: true }, { status: 500 });
          return Response.json({ calls });
        },
      },
      ON,
    );
    const slow = event('order.created', { id: 'slow', total: 1 });
    const running = post(url, slow);
    while (calls === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const busy = await post(url, slow);
    assert.equal(busy.status, 429);
    assert.equal(busy.json.code, 'FUNCRUN_EVENT_IN_PROGRESS');
    assert.equal(busy.headers.get('retry-after'), '1');
    open();
    assert.equal((await running).status, 200);
    const failing = event('order.created', { id: 'failing', total: 1 });
    assert.equal((await post(url, failing)).status, 500);
    assert.equal((await post(url, failing)).status, 500);
    assert.deepEqual((await post(url, failing)).json, { calls: 4 });
    assert.deepEqual((await post(url, failing)).json, { calls: 4 });
    assert.equal(calls, 4);
  });

  it('a timeout (504) holds the event until fetch has finished: a redelivery meanwhile is a 429, the next one runs', async (t) => {
    let calls = 0;
    let finished;
    const { url } = await serve(
      t,
      {
        async fetch() {
          if (++calls > 1) return Response.json({ calls });
          await new Promise((resolve) => setTimeout(resolve, 400));
          finished = true;
          return Response.json({ late: true });
        },
      },
      { ...ON, timeout: 150 },
    );
    const ce = event('order.created', { id: 'o1', total: 1 });
    const timedOut = await post(url, ce);
    assert.equal(timedOut.status, 504);
    assert.equal((await post(url, ce)).status, 429);
    while (!finished) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual((await post(url, ce)).json, { calls: 2 });
  });

  it('a batch is one delivery: its duplicate is replayed without fetch', async (t) => {
    let calls = 0;
    const { url } = await serve(
      t,
      {
        events: EVENTS,
        async fetch(request) {
          calls++;
          return Response.json({ ids: (await readEvents(request)).map((e) => e.data.id) });
        },
      },
      ON,
    );
    const batch = [event('order.created', { id: 'a', total: 1 }), event('order.created', { id: 'b', total: 2 })];
    const first = await postBatch(url, batch);
    assert.deepEqual(first.json, { ids: ['a', 'b'] });
    assert.deepEqual(answerOf(await postBatch(url, batch)), answerOf(first));
    assert.equal(calls, 1);
  });

  it('an answer larger than the answer limit, or streamed, is sent whole but not kept: the next delivery runs fetch again', async (t) => {
    let calls = 0;
    const { url, log } = await serve(
      t,
      {
        async fetch(request) {
          calls++;
          const ce = await readEvent(request);
          if (ce.data.id === 'large') return new Response('x'.repeat(5000));
          const encoder = new TextEncoder();
          const body = new ReadableStream({
            async start(controller) {
              controller.enqueue(encoder.encode('one,'));
              await new Promise((resolve) => setTimeout(resolve, 20));
              controller.enqueue(encoder.encode('two'));
              controller.close();
            },
          });
          return new Response(body);
        },
      },
      { ...ON, idempotencyAnswerLimit: 1000 },
    );
    const large = event('order.created', { id: 'large', total: 1 });
    assert.equal((await post(url, large)).text.length, 5000);
    assert.equal((await post(url, large)).text.length, 5000);
    const streamed = event('order.created', { id: 'streamed', total: 1 });
    assert.equal((await post(url, streamed)).text, 'one,two');
    assert.equal((await post(url, streamed)).text, 'one,two');
    assert.equal(calls, 4);
    const notKept = log.entries().filter((e) => e.msg === 'answer not kept for duplicates: streamed, or larger than the answer limit');
    assert.equal(notKept.length, 4);
  });

  it('replicas sharing Redis: a duplicate sent to the other replica gets the answer, and fetch runs once', async (t) => {
    const redis = await startRedis(t);
    let calls = 0;
    const handler = {
      async fetch(request) {
        calls++;
        return Response.json({ id: (await readEvent(request)).data.id });
      },
    };
    const options = { ...ON, idempotencyStore: redis.url, name: 'orders' };
    const [a, b] = await Promise.all([serve(t, handler, options), serve(t, handler, options)]);
    const ce = event('order.created', { id: 'o1', total: 1 });
    const first = await post(a.url, ce);
    assert.deepEqual(first.json, { id: 'o1' });
    assert.deepEqual(answerOf(await post(b.url, ce)), answerOf(first));
    assert.equal(calls, 1);
  });
});

describe('retry() and drop() in a fetch handler', () => {
  it('returned from a plain { fetch }: retry() is a 503 with Retry-After and runs again, drop() a 204 kept for duplicates, logged and never sent', async (t) => {
    let calls = 0;
    const { url, log } = await serve(
      t,
      {
        async fetch(request) {
          calls++;
          const ce = await readEvent(request);
          if (ce.type === 'order.later') return retry('stock service down (secret detail)', { after: 7 });
          if (ce.type === 'order.busy') return retry('too much', { status: 429 });
          return drop('no such order');
        },
      },
      ON,
    );
    const later = event('order.later', {});
    const res = await post(url, later);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '7');
    assert.equal(res.json.code, 'FUNCRUN_RETRY');
    assert.doesNotMatch(res.text, /secret/);
    assert.equal((await post(url, later)).status, 503);
    assert.equal(calls, 2);
    const busy = await post(url, event('order.busy', {}));
    assert.equal(busy.status, 429);
    assert.equal(busy.headers.get('retry-after'), '1');
    const dropped = event('order.unknown', {});
    const gone = await post(url, dropped);
    assert.equal(gone.status, 204);
    assert.equal(gone.text, '');
    assert.equal((await post(url, dropped)).status, 204);
    assert.equal(calls, 4);
    const retried = log.entries().find((e) => e.msg === 'event to be delivered again');
    assert.equal(retried.event.id, later.id);
    assert.equal(retried.retryAfter, 7);
    assert.equal(log.entries().find((e) => e.msg === 'event dropped').reason, 'no such order');
  });

  it('thrown from a real Hono app, through its middleware and without idempotency: retry() is a 503, drop() a 204; a Hono app declares events beside it', async (t) => {
    const app = new Hono();
    const order = [];
    app.use(async (c, next) => {
      order.push('middleware');
      await next();
    });
    app.post('/orders', async (c) => {
      const ce = await readEvent(c.req.raw);
      if (ce.data.amount > 100) throw retry('the payment service is busy', { after: 3 });
      if (ce.data.amount === 0) throw drop('nothing to pay');
      return c.json({ paid: ce.data.amount });
    });
    // As `module.exports = app; module.exports.events = ...` makes it.
    app.events = EVENTS;
    const { url } = await serve(t, app);
    const paid = await post(`${url}/orders`, event('payment.received', { amount: '12' }));
    assert.equal(paid.status, 200);
    assert.deepEqual(paid.json, { paid: 12 });
    const busy = await post(`${url}/orders`, event('payment.received', { amount: '500' }));
    assert.equal(busy.status, 503);
    assert.equal(busy.headers.get('retry-after'), '3');
    assert.equal(busy.json.code, 'FUNCRUN_RETRY');
    assert.equal((await post(`${url}/orders`, event('payment.received', { amount: '0' }))).status, 204);
    const refused = await post(`${url}/orders`, event('payment.received', { amount: 'lots' }));
    assert.equal(refused.status, 400);
    assert.equal(refused.json.code, 'FUNCRUN_INVALID_EVENT_DATA');
    assert.deepEqual(order, ['middleware', 'middleware', 'middleware']);
  });

  it('a Hono app as a default export with events as a named export, idempotency on: a duplicate is replayed without the app running', async (t) => {
    let calls = 0;
    const app = new Hono();
    app.post('/', async (c) => {
      calls++;
      const ce = await readEvent(c.req.raw);
      return c.json({ total: ce.data.total, calls });
    });
    const { url } = await serve(t, { default: app, events: EVENTS }, ON);
    const ce = event('order.created', { id: 'o1', total: 9 });
    const first = await post(url, ce);
    assert.deepEqual(first.json, { total: 9, calls: 1 });
    assert.deepEqual(answerOf(await post(url, ce)), answerOf(first));
    assert.equal((await post(url, event('order.created', { id: 'o1', total: -9 }))).status, 400);
    assert.equal(calls, 1);
  });
});

/** The event an answer carries, and the mode it came in: structured (no ce- header) or binary (attributes as ce- headers). */
function answeredEvent(res) {
  const ceHeaders = [...res.headers.keys()].filter((name) => name.startsWith('ce-'));
  if (/^application\/cloudevents\+json/.test(res.headers.get('content-type') ?? '')) {
    assert.deepEqual(ceHeaders, [], 'a structured answer has no ce- header');
    const { id, time, type, data } = res.json;
    return { mode: 'structured', status: res.status, order: res.headers.get('x-order'), id, time, type, data };
  }
  assert.ok(ceHeaders.includes('ce-id') && ceHeaders.includes('ce-specversion'), `an event in binary mode: ${JSON.stringify([...res.headers])}`);
  const [id, time, type] = ['ce-id', 'ce-time', 'ce-type'].map((name) => res.headers.get(name));
  return { mode: 'binary', status: res.status, order: res.headers.get('x-order'), id, time, type, data: res.json };
}

const other = (mode) => (mode === 'binary' ? 'structured' : 'binary');

describe("an answered event replayed to a duplicate delivered in the other mode: in the duplicate's mode, the function run once", () => {
  // Each answers with an event, its status and a header of its own; `runs` counts the calls.
  const shapes = {
    'a { fetch } answering with eventResponse()': (runs) => ({
      async fetch(request) {
        runs.push(1);
        const ce = await readEvent(request);
        return eventResponse(
          { type: 'order.confirmed', source: '/orders', data: { confirmed: ce.data.id } },
          { status: 202, headers: { 'x-order': ce.data.id } },
        );
      },
    }),
    'a Hono app answering with eventResponse()': (runs) => {
      const app = new Hono();
      app.use(async (c, next) => {
        await next();
        c.header('x-order', 'set by middleware');
      });
      app.post('/', async (c) => {
        runs.push(1);
        const ce = await readEvent(c.req.raw);
        return eventResponse({ type: 'order.confirmed', source: '/orders', data: { confirmed: ce.data.id } }, { status: 202 });
      });
      return app;
    },
    'a handle function answering with the response chain': (runs) => (context, data) => {
      runs.push(1);
      return { statusCode: 202, headers: { 'x-order': data.id }, body: context.cloudEventResponse({ confirmed: data.id }).type('order.confirmed').response() };
    },
  };

  for (const [name, make] of Object.entries(shapes)) {
    it(`${name}: binary then structured, and structured then binary`, async (t) => {
      const runs = [];
      const { url } = await serve(t, make(runs), ON);
      for (const first of ['binary', 'structured']) {
        const ce = event('order.created', { id: `o-${first}`, total: 1 });
        const fresh = answeredEvent(await post(url, ce, first));
        // A fresh answer is in the request's mode.
        assert.equal(fresh.mode, first);
        assert.equal(fresh.status, 202);
        assert.deepEqual(fresh.data, { confirmed: `o-${first}` });
        const duplicate = answeredEvent(await post(url, ce, other(first)));
        assert.equal(duplicate.mode, other(first), 'the duplicate is answered in its own mode');
        // The same event (id, time, data), status and the function's header: the first answer's.
        assert.deepEqual({ ...duplicate, mode: first }, fresh);
        // And the first mode again gets the first answer as it was.
        assert.deepEqual(answeredEvent(await post(url, ce, first)), fresh);
      }
      assert.equal(runs.length, 2, 'the function ran once per event');
    });
  }

  it('eventResponse() given a mode answers in it, and a duplicate gets it in that mode, as a fresh run would', async (t) => {
    const runs = [];
    const handler = {
      async fetch(request) {
        runs.push(1);
        const mode = new URL(request.url).searchParams.get('mode');
        return eventResponse({ type: 'order.confirmed', source: '/orders', data: { confirmed: (await readEvent(request)).data.id } }, { mode });
      },
    };
    const { url } = await serve(t, handler, ON);
    for (const mode of ['binary', 'structured']) {
      const ce = event('order.created', { id: `o-${mode}`, total: 1 });
      const first = await post(`${url}/?mode=${mode}`, ce, other(mode));
      assert.equal(answeredEvent(first).mode, mode);
      const again = await post(`${url}/?mode=${mode}`, ce, mode);
      assert.deepEqual(answerOf(again), answerOf(first));
    }
    assert.equal(runs.length, 2);
  });

  it('replicas sharing Redis: the duplicate sent to the other replica in the other mode gets the event in its own mode', async (t) => {
    const redis = await startRedis(t);
    const runs = [];
    const handler = shapes['a { fetch } answering with eventResponse()'](runs);
    const options = { ...ON, idempotencyStore: redis.url, name: 'orders' };
    const [a, b] = await Promise.all([serve(t, handler, options), serve(t, handler, options)]);
    for (const first of ['binary', 'structured']) {
      const ce = event('order.created', { id: `o-${first}`, total: 1 });
      const fresh = answeredEvent(await post(a.url, ce, first));
      const duplicate = answeredEvent(await post(b.url, ce, other(first)));
      assert.equal(duplicate.mode, other(first));
      assert.deepEqual({ ...duplicate, mode: first }, fresh);
    }
    assert.equal(runs.length, 2);
  });
});
