'use strict';
// Duplicates run once (the memory store; spec/idempotency-redis.spec.js has replicas sharing Redis).
// A duplicate while the first delivery runs is a 429 with Retry-After; after a 2xx or 4xx answer it
// gets that answer again, byte for byte, without the function running; a 5xx, a timeout or a
// retry() lets the next delivery run.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { CloudEvent, HTTP } = require('cloudevents');
const { serve, request } = require('./helpers');
const { HttpError, retry } = require('../lib/index.js');

function event(extra = {}) {
  return new CloudEvent({ type: 'order.created', source: '/spec', data: { n: 1 }, ...extra });
}

async function post(url, ce, mode = 'binary') {
  const { headers, body } = mode === 'binary' ? HTTP.binary(ce) : HTTP.structured(ce);
  return request(url, { method: 'POST', headers, body });
}

/** Status, headers (but Date and the connection's) and body: what a replay must repeat. */
function answerOf(res) {
  const headers = [...res.headers].filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name));
  return { status: res.status, headers, text: res.text };
}

const ON = { idempotency: true };

describe('idempotency', () => {
  it('a duplicate after the answer gets that answer again, byte for byte, answered event included, and the function runs once', async (t) => {
    let runs = 0;
    const { url, log } = await serve(
      t,
      (context, data) => {
        runs++;
        return context.cloudEventResponse({ runs, n: data.n }).type('order.priced').response();
      },
      ON,
    );
    const ce = event();
    const first = await post(url, ce);
    assert.equal(first.status, 200);
    assert.ok(first.headers.get('ce-id'));
    const second = await post(url, ce);
    const third = await post(url, ce);
    assert.equal(runs, 1);
    assert.deepEqual(answerOf(second), answerOf(first));
    assert.deepEqual(answerOf(third), answerOf(first));
    const replayed = log.entries().filter((e) => e.msg === 'duplicate event: answered as the first delivery was');
    assert.equal(replayed.length, 2);
    assert.equal(replayed[0].event.id, ce.id);
    // Another id from the same source is another event.
    await post(url, event({ id: 'other' }));
    assert.equal(runs, 2);
  });

  it("a duplicate in the other mode gets the answer's event in its own mode: binary then structured, structured then binary; the function runs once", async (t) => {
    let runs = 0;
    const { url } = await serve(
      t,
      (context, data) => {
        runs++;
        const answer = context.cloudEventResponse({ runs, n: data.n }).type('order.priced').response();
        // A spelled-out response with an event body is an event answer too, its status and headers the function's.
        return data.n === 2 ? { statusCode: 201, headers: { 'x-order': 'o2' }, body: answer } : answer;
      },
      ON,
    );
    for (const [firstMode, otherMode, n] of [
      ['binary', 'structured', 1],
      ['structured', 'binary', 2],
    ]) {
      const ce = event({ data: { n } });
      const first = await post(url, ce, firstMode);
      const other = await post(url, ce, otherMode);
      const again = await post(url, ce, firstMode);
      assert.equal(runs, n, 'the function ran once per event');
      assert.deepEqual(answerOf(again), answerOf(first), 'in the same mode, byte for byte');
      const [binary, structured] = firstMode === 'binary' ? [first, other] : [other, first];
      assert.equal(binary.status, n === 1 ? 200 : 201);
      assert.equal(structured.status, binary.status);
      // Binary: the attributes as ce-* headers, the data as the body.
      assert.match(binary.headers.get('content-type'), /^application\/json/);
      assert.deepEqual(JSON.parse(binary.text), { runs: n, n });
      // Structured: no ce-* header, the whole event as application/cloudevents+json.
      assert.match(structured.headers.get('content-type'), /^application\/cloudevents\+json/);
      assert.deepEqual(
        [...structured.headers.keys()].filter((name) => name.startsWith('ce-')),
        [],
      );
      const json = structured.json;
      for (const name of ['id', 'source', 'type', 'specversion', 'time']) assert.equal(json[name], binary.headers.get(`ce-${name}`), name);
      assert.equal(json.type, 'order.priced');
      assert.deepEqual(json.data, { runs: n, n });
      if (n === 2) for (const res of [binary, structured]) assert.equal(res.headers.get('x-order'), 'o2');
    }
  });

  it('bytes and text in an answered event keep their form across modes: data_base64 and text in structured, the body in binary', async (t) => {
    const bytes = Buffer.from([0, 1, 2, 254, 255]);
    const { url } = await serve(
      t,
      (context, data) =>
        data.n === 1
          ? new CloudEvent({ type: 'bytes', source: '/f', datacontenttype: 'application/octet-stream', data: bytes })
          : new CloudEvent({ type: 'text', source: '/f', datacontenttype: 'text/plain; charset=utf-8', data: 'ünïcode ✓' }),
      ON,
    );
    const binaryBytes = event({ data: { n: 1 } });
    assert.ok((await post(url, binaryBytes, 'structured')).json.data_base64);
    const asBinary = await fetch(url, { method: 'POST', ...HTTP.binary(binaryBytes) });
    assert.equal(asBinary.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual(Buffer.from(await asBinary.arrayBuffer()), bytes);
    const text = event({ data: { n: 2 } });
    const binaryText = await post(url, text, 'binary');
    assert.equal(binaryText.text, 'ünïcode ✓');
    const structuredText = await post(url, text, 'structured');
    assert.equal(structuredText.json.data, 'ünïcode ✓');
    assert.equal(structuredText.json.datacontenttype, 'text/plain; charset=utf-8');
    const bytesFirstBinary = event({ data: { n: 1 }, id: 'bytes-binary-first' });
    await post(url, bytesFirstBinary, 'binary');
    const structuredBytes = await post(url, bytesFirstBinary, 'structured');
    assert.equal(structuredBytes.json.data, undefined);
    assert.deepEqual(Buffer.from(structuredBytes.json.data_base64, 'base64'), bytes);
  });

  it('with FUNC_COMPAT=faas-js-runtime events are answered binary in either mode, and so are their replays', async (t) => {
    let runs = 0;
    const { url } = await serve(t, (context) => (runs++, context.cloudEventResponse({ ok: true }).type('done').response()), {
      ...ON,
      compat: 'faas-js-runtime',
    });
    const ce = event();
    const first = await post(url, ce, 'structured');
    const replayed = await post(url, ce, 'structured');
    assert.equal(runs, 1);
    assert.ok(first.headers.get('ce-id'));
    assert.deepEqual(answerOf(replayed), answerOf(first));
  });

  it('a duplicate while the first delivery runs is a 429 with Retry-After, and the function runs once', async (t) => {
    let runs = 0;
    let finish;
    const gate = new Promise((resolve) => (finish = resolve));
    const { url } = await serve(
      t,
      async () => {
        runs++;
        await gate;
        return { done: true };
      },
      ON,
    );
    const ce = event();
    const first = post(url, ce);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const during = await post(url, ce);
    assert.equal(during.status, 429);
    assert.equal(during.json.code, 'FUNCRUN_EVENT_IN_PROGRESS');
    assert.equal(during.headers.get('retry-after'), '1');
    finish();
    assert.equal((await first).status, 200);
    assert.equal((await post(url, ce)).json.done, true);
    assert.equal(runs, 1);
  });

  it('a 5xx or a retry() releases the event: the next delivery runs', async (t) => {
    let runs = 0;
    const { url } = await serve(
      t,
      async (context) => {
        runs++;
        const mode = context.cloudevent.type;
        if (mode === 'fails' && runs === 1) throw new Error('database down');
        if (mode === 'retry' && runs === 1) return retry('not yet', { status: 429 });
        return { runs };
      },
      ON,
    );
    for (const type of ['fails', 'retry']) {
      runs = 0;
      const ce = event({ type });
      const first = await post(url, ce);
      assert.ok([500, 429].includes(first.status), `${type}: ${first.status}`);
      const again = await post(url, ce);
      assert.equal(again.status, 200, type);
      assert.equal(runs, 2, type);
    }
  });

  it('a timeout (504) holds the claim until the timed-out function has finished: redeliveries meanwhile get 429, then the next one runs', async (t) => {
    let runs = 0;
    let finished = 0;
    let finish;
    const { url } = await serve(
      t,
      async () => {
        runs++;
        if (runs === 1) await new Promise((resolve) => (finish = resolve));
        finished++;
        return { runs };
      },
      { ...ON, timeout: 200 },
    );
    const ce = event();
    assert.equal((await post(url, ce)).status, 504);
    // The timed-out function still runs: a redelivery now would run beside it.
    for (let i = 0; i < 3; i++) {
      const during = await post(url, ce);
      assert.equal(during.status, 429);
      assert.equal(during.json.code, 'FUNCRUN_EVENT_IN_PROGRESS');
    }
    assert.equal(runs, 1);
    finish();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(finished, 1);
    const after = await post(url, ce);
    assert.equal(after.status, 200);
    assert.equal(runs, 2);
  });

  it('a client gone mid-invocation frees nothing while the function runs, and its answer is kept: the function runs once', async (t) => {
    let runs = 0;
    let finished;
    const done = new Promise((resolve) => (finished = resolve));
    const { url } = await serve(
      t,
      async () => {
        runs++;
        await new Promise((resolve) => setTimeout(resolve, 300));
        setImmediate(finished);
        return { runs };
      },
      ON,
    );
    const ce = event();
    const { headers, body } = HTTP.binary(ce);
    const gone = new AbortController();
    const first = fetch(url, { method: 'POST', headers, body, signal: gone.signal }).catch((err) => err);
    await new Promise((resolve) => setTimeout(resolve, 100));
    gone.abort();
    assert.equal((await first).name, 'AbortError');
    assert.equal((await post(url, ce)).status, 429);
    await done;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const again = await post(url, ce);
    assert.equal(again.status, 200);
    assert.deepEqual(again.json, { runs: 1 });
    assert.equal(runs, 1);
  });

  it('a 4xx the function answers is kept: the duplicate gets it without the function running', async (t) => {
    let runs = 0;
    const { url } = await serve(
      t,
      () => {
        runs++;
        throw new HttpError(422, 'order total does not add up');
      },
      ON,
    );
    const ce = event();
    const first = await post(url, ce);
    const second = await post(url, ce);
    assert.equal(first.status, 422);
    assert.deepEqual(answerOf(second), answerOf(first));
    assert.equal(runs, 1);
  });

  it("the module's key function decides what a duplicate is, and its option turns idempotency on", async (t) => {
    let runs = 0;
    const { url } = await serve(t, {
      events: { idempotency: { key: (e) => `order:${e.data.order}` } },
      handle: () => ({ runs: ++runs }),
    });
    assert.equal((await post(url, event({ data: { order: 7 } }))).json.runs, 1);
    assert.equal((await post(url, event({ data: { order: 7 } }))).json.runs, 1);
    assert.equal((await post(url, event({ data: { order: 8 } }))).json.runs, 2);
  });

  it('a key past the key limit is a 400; plain requests are not deduplicated', async (t) => {
    let runs = 0;
    const { url } = await serve(t, () => ({ runs: ++runs }), { ...ON, idempotencyKeyLimit: 100 });
    const res = await post(url, event({ id: 'x'.repeat(200) }));
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'FUNCRUN_EVENT_KEY_TOO_LONG');
    assert.equal(runs, 0);
    const plain = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };
    await request(url, plain);
    await request(url, plain);
    assert.equal(runs, 2);
  });

  it('an answer larger than the answer limit is sent and not kept (logged): the next delivery runs', async (t) => {
    let runs = 0;
    const { url, log } = await serve(t, () => ({ runs: ++runs, padding: 'x'.repeat(5000) }), { ...ON, idempotencyAnswerLimit: 1000 });
    const ce = event();
    const first = await post(url, ce);
    assert.equal(first.status, 200);
    assert.equal(first.json.padding.length, 5000);
    assert.equal((await post(url, ce)).json.runs, 2);
    assert.ok(log.entries().some((e) => e.msg === 'answer not kept for duplicates: streamed, or larger than the answer limit' && e.event.id === ce.id));
  });

  it('after the window, the same event runs again', async (t) => {
    let runs = 0;
    const { url } = await serve(t, () => ({ runs: ++runs }), { ...ON, idempotencyWindow: 200 });
    const ce = event();
    await post(url, ce);
    await post(url, ce);
    assert.equal(runs, 1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await post(url, ce);
    assert.equal(runs, 2);
  });

  it('a batch is one delivery: the same batch again gets the same answer', async (t) => {
    let runs = 0;
    const { url } = await serve(t, (context) => context.cloudEventResponse({ runs: ++runs }).response(), ON);
    const body = JSON.stringify([event({ id: 'a' }), event({ id: 'b' })]);
    const send = () => request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body });
    const first = await send();
    const second = await send();
    assert.equal(first.status, 200);
    assert.deepEqual(answerOf(second), answerOf(first));
    assert.equal(runs, 2);
  });

  it('a batch whose client goes away during its last event ran whole: kept, and run once; one cut before an event is released, and said', async (t) => {
    const runs = [];
    let ended = 0;
    let finished;
    const { url, log } = await serve(
      t,
      async (context) => {
        runs.push(context.cloudevent.id);
        if (context.cloudevent.type === 'slow') await new Promise((resolve) => setTimeout(resolve, 300));
        ended++;
        setImmediate(() => finished?.());
        return context.cloudEventResponse({ id: context.cloudevent.id }).response();
      },
      ON,
    );
    const send = (events, signal) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events), signal });
    // The client leaves 100 ms in; then the events that ran are waited for (`lastRun` of them have ended by then).
    const leaveDuring = async (events, lastRun) => {
      const gone = new AbortController();
      const done = new Promise((resolve) => (finished = () => ended >= lastRun && resolve()));
      const first = send(events, gone.signal).catch((err) => err);
      await new Promise((resolve) => setTimeout(resolve, 100));
      gone.abort();
      assert.equal((await first).name, 'AbortError');
      await done;
      await new Promise((resolve) => setTimeout(resolve, 50));
    };
    // Gone while the last event runs: every event ran; the redelivery is answered without a run.
    const whole = [event({ id: 'a' }), event({ id: 'b', type: 'slow' })];
    await leaveDuring(whole, 2);
    const again = await send(whole);
    assert.equal(again.status, 200);
    assert.deepEqual(runs, ['a', 'b']);
    // Gone while the first of two runs: the second never ran, so the batch runs again when delivered again.
    const cut = [event({ id: 'c', type: 'slow' }), event({ id: 'd' })];
    await leaveDuring(cut, 3);
    assert.ok(log.entries().some((e) => e.msg === 'batch cut short: its claim is released, and its events run again when it is delivered again'));
    const redelivered = await send(cut);
    assert.equal(redelivered.status, 200);
    assert.deepEqual(runs, ['a', 'b', 'c', 'c', 'd']);
  });

  it('a handler that streams its body is refused at start with idempotency or event contracts: its events would run unchecked, every duplicate again', async () => {
    const { start, streamed } = require('../lib/index.js');
    const handle = streamed(async () => 'ok');
    for (const [module, options, message] of [
      [{ handle }, ON, /handle streams its body, so no request to it is read as a CloudEvent: idempotency cannot hold for it/],
      [{ handle, events: { types: { 'com.example.a': {} } } }, {}, /handle streams its body, .*: event contracts cannot hold for it/],
      [{ handle: () => 1, routes: { 'POST /upload': handle } }, ON, /routes\['POST \/upload'\] streams its body/],
    ]) {
      await assert.rejects(start(module, { port: 0, host: '127.0.0.1', logLevel: 'silent', ...options }), message);
    }
    // Without them, it serves.
    const server = await start({ handle }, { port: 0, host: '127.0.0.1', logLevel: 'silent' });
    await new Promise((resolve) => server.close(resolve));
  });

  it('a batch of many events is deduplicated too: the key limit is per event', async (t) => {
    let runs = 0;
    const { url } = await serve(t, () => void runs++, { ...ON, idempotencyKeyLimit: 100 });
    const body = JSON.stringify(Array.from({ length: 300 }, (_, i) => event({ id: `event-${i}` })));
    const send = () => request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body });
    assert.equal((await send()).status, 204);
    assert.equal((await send()).status, 204);
    assert.equal(runs, 300);
  });

  it('duplicates are counted in the metrics', async (t) => {
    const { url } = await serve(t, () => 'ok', ON);
    const ce = event();
    await post(url, ce);
    await post(url, ce);
    const metrics = await request(new URL('/metrics', url));
    assert.match(metrics.text, /funcrun_events_total\{outcome="replayed",[^}]*\} 1\n/);
    assert.match(metrics.text, /funcrun_events_total\{outcome="in_progress",[^}]*\} 0\n/);
  });

  it('an empty batch delivered twice gets the same answer: a batch of no events is one delivery too', async (t) => {
    let runs = 0;
    const { url } = await serve(t, () => ++runs, ON);
    const send = () => request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: '[]' });
    const first = await send();
    const second = await send();
    assert.ok(first.status < 300, first.text);
    assert.deepEqual(answerOf(second), answerOf(first));
    assert.equal(runs, 0);
  });

  it('headers the function sets itself, CORS and Vary among them, are replayed with its answer', async (t) => {
    const { url } = await serve(
      t,
      () => ({ statusCode: 200, headers: { 'access-control-allow-origin': 'https://shop.example', vary: 'origin', 'x-order': '7' }, body: { ok: true } }),
      ON,
    );
    const ce = event();
    const first = await post(url, ce);
    const second = await post(url, ce);
    for (const name of ['access-control-allow-origin', 'vary', 'x-order']) assert.equal(second.headers.get(name), first.headers.get(name), name);
    assert.equal(second.headers.get('access-control-allow-origin'), 'https://shop.example');
  });
});
