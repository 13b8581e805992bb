'use strict';
// W3C Trace Context: the trace a request or event arrived in reaches every log line of its
// invocation, context.traceparent (with the invocation's own span) and the event it answers with.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { HTTP, CloudEvent } = require('cloudevents');
const { serve, request } = require('./helpers');

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT}-01`;
const TRACESTATE = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';

/** A function that logs one line and answers with what it saw of the trace, served for the test `t`. */
function tracing(t) {
  return serve(
    t,
    (context) => {
      context.log.info({ trace_id: 'forged', span_id: 'forged' }, 'handled');
      return { traceparent: context.traceparent ?? null, tracestate: context.tracestate ?? null };
    },
    { logLevel: 'info' },
  );
}

const handledLines = (server) => server.log.entries().filter((line) => line.msg === 'handled');

describe('trace context over HTTP', () => {
  it('a valid traceparent: every line of the invocation carries the trace, with a span of its own', async (t) => {
    const server = await tracing(t);
    const res = await request(server.url, { headers: { traceparent: TRACEPARENT, tracestate: TRACESTATE } });
    assert.equal(res.status, 200);
    const [line] = handledLines(server);
    assert.equal(line.trace_id, TRACE_ID);
    assert.match(line.span_id, /^[0-9a-f]{16}$/);
    assert.notEqual(line.span_id, PARENT);
    assert.equal(line.trace_flags, '01');
    assert.equal(typeof line.reqId, 'number');
    assert.equal(res.json.traceparent, `00-${TRACE_ID}-${line.span_id}-01`);
    assert.equal(res.json.tracestate, TRACESTATE);
    // The fields are the runtime's: a logged object cannot forge them (one key each in the line).
    const raw = server.log.lines.find((l) => l.includes('"handled"'));
    assert.equal(raw.split('"trace_id"').length, 2);
    assert.doesNotMatch(raw, /forged/);
  });

  it('each invocation gets its own span id in the same trace', async (t) => {
    const server = await tracing(t);
    await request(server.url, { headers: { traceparent: TRACEPARENT } });
    await request(server.url, { headers: { traceparent: TRACEPARENT } });
    const [a, b] = handledLines(server);
    assert.equal(a.trace_id, b.trace_id);
    assert.notEqual(a.span_id, b.span_id);
  });

  it('without a traceparent, or with an invalid one, there is no trace: no fields, no made-up ids, never a 4xx', async (t) => {
    const server = await tracing(t);
    const invalid = [
      undefined,
      '',
      TRACEPARENT.toUpperCase(),
      `00-${'0'.repeat(32)}-${PARENT}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `ff-${TRACE_ID}-${PARENT}-01`,
      `00-${TRACE_ID}-${PARENT}-01-extra`,
      `00-${TRACE_ID}-${PARENT}-1`,
      `00_${TRACE_ID}_${PARENT}_01`,
      `00-${TRACE_ID.slice(1)}g-${PARENT}-01`,
      `${TRACEPARENT}, ${TRACEPARENT}`,
      'x'.repeat(10_000),
    ];
    for (const value of invalid) {
      const res = await request(server.url, { headers: value === undefined ? {} : { traceparent: value } });
      assert.equal(res.status, 200, String(value).slice(0, 80));
      assert.deepEqual(res.json, { traceparent: null, tracestate: null });
    }
    for (const line of server.log.entries()) {
      assert.equal(line.trace_id, undefined);
      assert.equal(line.span_id, undefined);
      assert.equal(line.trace_flags, undefined);
    }
  });

  it('a later version with more fields is read by its first four', async (t) => {
    const server = await tracing(t);
    const res = await request(server.url, { headers: { traceparent: `cc-${TRACE_ID}-${PARENT}-00-what-comes-next` } });
    assert.match(res.json.traceparent, new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-00$`));
  });

  it('a function calling another with context.traceparent continues the trace there', async (t) => {
    const downstream = await tracing(t);
    const upstream = await serve(
      t,
      async (context) => {
        context.log.info('calling downstream');
        const res = await fetch(downstream.url, { headers: { traceparent: context.traceparent } });
        return { downstream: await res.json(), mine: context.traceparent };
      },
      { logLevel: 'info' },
    );
    const res = await request(upstream.url, { headers: { traceparent: TRACEPARENT } });
    const [up] = upstream.log.entries().filter((l) => l.msg === 'calling downstream');
    const [down] = handledLines(downstream);
    assert.equal(up.trace_id, TRACE_ID);
    assert.equal(down.trace_id, TRACE_ID);
    // Downstream's parent is upstream's span.
    assert.equal(res.json.mine, `00-${TRACE_ID}-${up.span_id}-01`);
    assert.notEqual(down.span_id, up.span_id);
    assert.equal(res.json.downstream.traceparent, `00-${TRACE_ID}-${down.span_id}-01`);
  });
});

describe('trace context with CloudEvents', () => {
  function answering(t) {
    return serve(
      t,
      (context, data) => {
        context.log.info('handled');
        return context
          .cloudEventResponse({ got: data, traceparent: context.traceparent ?? null })
          .type('dev.example.answer')
          .source('/answer')
          .response();
      },
      { logLevel: 'info' },
    );
  }

  it("binary: ce-traceparent is the trace; the answer carries the invocation's traceparent and tracestate", async (t) => {
    const server = await answering(t);
    const event = new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: { n: 1 }, traceparent: TRACEPARENT, tracestate: TRACESTATE });
    const message = HTTP.binary(event);
    assert.equal(message.headers['ce-traceparent'], TRACEPARENT);
    const res = await fetch(server.url, { method: 'POST', headers: message.headers, body: message.body });
    const answer = HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: await res.text() });
    const [line] = handledLines(server);
    assert.equal(line.trace_id, TRACE_ID);
    assert.equal(answer.traceparent, `00-${TRACE_ID}-${line.span_id}-01`);
    assert.equal(answer.tracestate, TRACESTATE);
    assert.equal(answer.data.traceparent, answer.traceparent);
  });

  it('structured: the traceparent attribute is the trace; the structured answer carries it', async (t) => {
    const server = await answering(t);
    const event = new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: { n: 2 }, traceparent: TRACEPARENT });
    const message = HTTP.structured(event);
    const res = await fetch(server.url, { method: 'POST', headers: message.headers, body: message.body });
    const text = await res.text();
    const answer = HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: text });
    const [line] = handledLines(server);
    assert.equal(line.trace_id, TRACE_ID);
    assert.equal(answer.traceparent, `00-${TRACE_ID}-${line.span_id}-01`);
    assert.equal(answer.tracestate, undefined);
  });

  it("the HTTP traceparent header wins over the event's", async (t) => {
    const server = await answering(t);
    const other = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-00`;
    const message = HTTP.binary(new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: {}, traceparent: other }));
    await fetch(server.url, { method: 'POST', headers: { ...message.headers, traceparent: TRACEPARENT }, body: message.body });
    assert.equal(handledLines(server)[0].trace_id, TRACE_ID);
  });

  it('an event the function gives a traceparent of its own keeps it; an event without a trace gets none', async (t) => {
    const own = `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`;
    const server = await serve(t, (context) =>
      context.query.own
        ? new CloudEvent({ type: 'dev.example.answer', source: '/answer', traceparent: own })
        : new CloudEvent({ type: 'dev.example.answer', source: '/answer' }),
    );
    const message = HTTP.binary(new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: {}, traceparent: TRACEPARENT }));
    const kept = await fetch(server.url + '?own=1', { method: 'POST', headers: message.headers, body: message.body });
    assert.equal(kept.headers.get('ce-traceparent'), own);
    const untraced = HTTP.binary(new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: {} }));
    const none = await fetch(server.url, { method: 'POST', headers: untraced.headers, body: untraced.body });
    assert.equal(none.status, 200);
    assert.equal(none.headers.get('ce-traceparent'), null);
  });

  it("a batch under the request's trace: each event's invocation has a span of its own", async (t) => {
    const server = await answering(t);
    const events = [1, 2].map((n) => ({ specversion: '1.0', id: String(n), source: '/spec', type: 'dev.example.ask', data: { n } }));
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json', traceparent: TRACEPARENT },
      body: JSON.stringify(events),
    });
    assert.equal(res.status, 200);
    const lines = handledLines(server);
    assert.equal(lines.length, 2);
    assert.ok(lines.every((l) => l.trace_id === TRACE_ID));
    assert.notEqual(lines[0].span_id, lines[1].span_id);
    const answers = await res.json();
    assert.deepEqual(answers.map((a) => a.data.traceparent).sort(), lines.map((l) => `00-${TRACE_ID}-${l.span_id}-01`).sort());
    // Each answered event carries the trace of the invocation that made it.
    for (const answer of answers) assert.equal(answer.traceparent, answer.data.traceparent);
  });

  it('binary: the trace is read from the decoded attributes; the answer percent-encodes tracestate as every attribute', async (t) => {
    const server = await answering(t);
    const res = await fetch(server.url, {
      method: 'POST',
      headers: {
        'ce-specversion': '1.0',
        'ce-id': '1',
        'ce-source': '/spec',
        'ce-type': 'dev.example.ask',
        'ce-traceparent': TRACEPARENT,
        'ce-tracestate': 'a=%41%20b',
        'content-type': 'application/json',
      },
      body: '{}',
    });
    // The binding's percent-encoding (the SDK's own reader does not decode it; funcrun's does).
    assert.equal(res.headers.get('ce-tracestate'), 'a=A%20b');
    // A tracestate that decodes to a line break is no tracestate.
    const crlf = await fetch(server.url, {
      method: 'POST',
      headers: {
        'ce-specversion': '1.0',
        'ce-id': '2',
        'ce-source': '/spec',
        'ce-type': 'dev.example.ask',
        'ce-traceparent': TRACEPARENT,
        'ce-tracestate': 'a=%0D%0Ab',
        'content-type': 'application/json',
      },
      body: '{}',
    });
    assert.equal(crlf.status, 200);
    assert.equal(crlf.headers.get('ce-tracestate'), null);
    assert.match(crlf.headers.get('ce-traceparent'), new RegExp(`^00-${TRACE_ID}-`));
  });

  it("the trace headers count toward the answer's header block: past it, the answer goes structured", async (t) => {
    const server = await serve(t, () => new CloudEvent({ type: 'dev.example.answer', source: '/answer', big: 'x'.repeat(12_000) }));
    const message = HTTP.binary(
      new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: {}, traceparent: TRACEPARENT, tracestate: `a=${'z'.repeat(6000)}` }),
    );
    const res = await fetch(server.url, { method: 'POST', headers: message.headers, body: message.body });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^application\/cloudevents\+json/);
    const answer = JSON.parse(await res.text());
    assert.match(answer.traceparent, new RegExp(`^00-${TRACE_ID}-`));
  });

  it("a structured event's trace is on the runtime's own lines too (the error line)", async (t) => {
    const server = await serve(t, () => {
      throw new Error('broken');
    });
    const message = HTTP.structured(new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: {}, traceparent: TRACEPARENT }));
    const res = await fetch(server.url, { method: 'POST', headers: message.headers, body: message.body });
    assert.equal(res.status, 500);
    const errorLine = server.log.entries().find((l) => l.level === 50);
    assert.equal(errorLine.trace_id, TRACE_ID);
  });

  it("an answered event's own tracestate is kept, binary and structured alike", async (t) => {
    const server = await serve(t, () => new CloudEvent({ type: 'dev.example.answer', source: '/answer', tracestate: 'own=1' }));
    for (const encode of [HTTP.binary, HTTP.structured]) {
      const message = encode(new CloudEvent({ type: 'dev.example.ask', source: '/spec', data: {}, traceparent: TRACEPARENT, tracestate: 'x=1' }));
      const res = await fetch(server.url, { method: 'POST', headers: message.headers, body: message.body });
      const answer = HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: await res.text() });
      assert.equal(answer.tracestate, 'own=1');
    }
  });
});
