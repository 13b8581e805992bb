'use strict';
// OpenTelemetry, when the application registers it: a SERVER span per invocation, exported by the
// SDK's in-memory exporter, its parent from the incoming context through the registered
// propagator, the HTTP semantic conventions' name and attributes, and the log fields,
// context.traceparent and answered events taken from it. Real HTTP; the `cloudevents` SDK as the
// event client.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { CloudEvent, HTTP } = require('cloudevents');
const { log } = require('../lib/index.js');
const { serve, request } = require('./helpers');

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT}-01`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const exporter = new InMemorySpanExporter();
let seen;
const shop = {
  routes: {
    'GET /orders/:id': async (context) => {
      await sleep(2);
      log.info({ id: context.params.id }, 'looking up');
      seen = { traceparent: context.traceparent, tracestate: context.tracestate };
      // The function's own span nests under the invocation's.
      await api.trace.getTracer('shop').startActiveSpan('db.query', async (span) => {
        await sleep(1);
        span.end();
      });
      return { id: context.params.id };
    },
    'POST /fail': () => {
      throw new Error('database down');
    },
    'GET /missing': () => {
      const err = new Error('no such order');
      err.statusCode = 404;
      throw err;
    },
    'POST /events': (context) => context.cloudEventResponse({ seen: context.cloudevent.id }).type('dev.spec.seen').response(),
  },
  handle: () => 'fallback',
};

const spans = () => exporter.getFinishedSpans();
const serverSpans = () => spans().filter((s) => s.kind === api.SpanKind.SERVER);
const parentOf = (span) => span.parentSpanContext?.spanId ?? span.parentSpanId;

describe('OpenTelemetry', () => {
  it('with the API installed but no tracer provider registered: no span, no trace invented', async (t) => {
    const server = await serve(t, shop, { logLevel: 'info' });
    const res = await request(`${server.url}/orders/7`);
    assert.equal(res.status, 200);
    assert.equal(seen.traceparent, undefined);
    const line = server.log.entries().find((l) => l.msg === 'looking up');
    assert.equal(line.trace_id, undefined);
  });

  describe('with a tracer provider, a propagator and a context manager registered', () => {
    let provider;
    before(() => {
      provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      api.trace.setGlobalTracerProvider(provider);
    });
    after(async () => {
      await provider.shutdown();
      api.trace.disable();
      api.propagation.disable();
      api.context.disable();
    });

    it('a SERVER span per invocation: parent from traceparent, route, attributes; logs and context.traceparent from it', async (t) => {
      exporter.reset();
      const server = await serve(t, shop, { logLevel: 'info' });
      const res = await request(`${server.url}/orders/42?token=abc`, { headers: { traceparent: TRACEPARENT, tracestate: 'vendor=opaque' } });
      assert.equal(res.status, 200);
      await sleep(10);
      const [span] = serverSpans();
      assert.equal(serverSpans().length, 1);
      assert.equal(span.name, 'GET /orders/:id');
      assert.equal(span.spanContext().traceId, TRACE_ID);
      assert.equal(parentOf(span), PARENT);
      assert.deepEqual(
        { ...span.attributes },
        { 'http.request.method': 'GET', 'url.path': '/orders/42', 'http.route': '/orders/:id', 'http.response.status_code': 200 },
      );
      assert.equal(span.status.code, api.SpanStatusCode.UNSET);
      const own = span.spanContext().spanId;
      assert.equal(seen.traceparent, `00-${TRACE_ID}-${own}-01`);
      assert.equal(seen.tracestate, 'vendor=opaque');
      const line = server.log.entries().find((l) => l.msg === 'looking up');
      assert.deepEqual([line.trace_id, line.span_id, line.trace_flags], [TRACE_ID, own, '01']);
      const db = spans().find((s) => s.name === 'db.query');
      assert.equal(parentOf(db), own, "the function's span nests under the invocation's");
      assert.equal(db.spanContext().traceId, TRACE_ID);
    });

    it('without a traceparent: a new trace, which the logs carry', async (t) => {
      exporter.reset();
      const server = await serve(t, shop, { logLevel: 'info' });
      await request(`${server.url}/orders/1`);
      await sleep(10);
      const [span] = serverSpans();
      assert.equal(parentOf(span), undefined);
      const line = server.log.entries().find((l) => l.msg === 'looking up');
      assert.equal(line.trace_id, span.spanContext().traceId);
      assert.equal(line.span_id, span.spanContext().spanId);
    });

    it('5xx marks the span as an error; 4xx does not; the fallback handler has no route', async (t) => {
      exporter.reset();
      const server = await serve(t, shop, { logLevel: 'silent' });
      assert.equal((await request(`${server.url}/fail`, { method: 'POST' })).status, 500);
      assert.equal((await request(`${server.url}/missing`)).status, 404);
      assert.equal((await request(`${server.url}/anything/else`, { method: 'PUT' })).status, 200);
      await sleep(10);
      const byPath = Object.fromEntries(serverSpans().map((s) => [s.attributes['url.path'], s]));
      assert.equal(byPath['/fail'].status.code, api.SpanStatusCode.ERROR);
      assert.equal(byPath['/fail'].attributes['http.response.status_code'], 500);
      assert.equal(byPath['/fail'].attributes['error.type'], '500');
      assert.equal(byPath['/missing'].status.code, api.SpanStatusCode.UNSET);
      assert.equal(byPath['/missing'].attributes['http.response.status_code'], 404);
      assert.equal(byPath['/anything/else'].name, 'PUT');
      assert.equal(byPath['/anything/else'].attributes['http.route'], undefined);
    });

    it('a binary CloudEvent: parent from its traceparent extension, type and id as attributes; the answer carries the span', async (t) => {
      exporter.reset();
      const server = await serve(t, shop, { logLevel: 'silent' });
      const event = new CloudEvent({ id: 'evt-1', source: '/spec', type: 'dev.spec.order', data: { n: 1 }, traceparent: TRACEPARENT });
      const message = HTTP.binary(event);
      const res = await fetch(`${server.url}/events`, { method: 'POST', headers: message.headers, body: message.body });
      const headers = Object.fromEntries(res.headers);
      const answer = HTTP.toEvent({ headers, body: await res.text() });
      await sleep(10);
      const [span] = serverSpans();
      assert.equal(span.spanContext().traceId, TRACE_ID);
      assert.equal(parentOf(span), PARENT);
      assert.equal(span.attributes['cloudevents.event_id'], 'evt-1');
      assert.equal(span.attributes['cloudevents.event_type'], 'dev.spec.order');
      assert.equal(span.name, 'POST /events');
      assert.equal(answer.type, 'dev.spec.seen');
      assert.equal(answer.traceparent, `00-${TRACE_ID}-${span.spanContext().spanId}-01`);
    });

    it("a batch: a span per event, each under its own event's trace when the request brought none", async (t) => {
      exporter.reset();
      const server = await serve(t, { handle: (context) => ({ seen: context.traceparent }) }, { logLevel: 'silent' });
      const ids = ['11111111111111111111111111111111', '22222222222222222222222222222222'];
      const events = ids.map((traceId, i) => ({
        specversion: '1.0',
        id: `e${i}`,
        source: '/spec',
        type: 'spec.batch',
        traceparent: `00-${traceId}-${PARENT}-01`,
      }));
      const res = await request(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify(events),
      });
      assert.ok(res.status < 300, res.text);
      await sleep(10);
      const byEvent = Object.fromEntries(serverSpans().map((s) => [s.attributes['cloudevents.event_id'], s]));
      assert.equal(byEvent.e0.spanContext().traceId, ids[0]);
      assert.equal(byEvent.e1.spanContext().traceId, ids[1]);
      for (const span of Object.values(byEvent)) assert.equal(parentOf(span), PARENT);
    });

    it('an unknown method is recorded as _OTHER, as the conventions say', async (t) => {
      exporter.reset();
      const server = await serve(t, shop, { logLevel: 'silent' });
      const http = require('node:http');
      await new Promise((resolve, reject) => {
        const req = http.request(`${server.url}/x`, { method: 'PURGE' }, (res) => res.resume().on('end', resolve));
        req.on('error', reject);
        req.end();
      });
      await sleep(10);
      const [span] = serverSpans();
      assert.equal(span.attributes['http.request.method'], '_OTHER');
      assert.equal(span.attributes['http.request.method_original'], 'PURGE');
      assert.equal(span.name, 'HTTP');
    });
  });

  it('until a tracer provider is registered, nothing of the API is loaded; without the API installed, no tracing at all', () => {
    const { execFileSync } = require('node:child_process');
    const os = require('node:os');
    const path = require('node:path');
    for (const [folder, installed] of [
      [os.tmpdir(), false],
      [path.join(__dirname, '..'), true],
    ]) {
      const script = `
        const { loadTracing } = require(${JSON.stringify(require.resolve('../lib/telemetry/otel.js'))});
        const tracing = loadTracing(${JSON.stringify(folder)});
        const active = tracing?.active() ?? false;
        const loaded = Object.keys(require.cache).filter((f) => f.includes('opentelemetry'));
        process.stdout.write(JSON.stringify({ tracing: tracing !== undefined, active, loaded }));`;
      const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: folder }).toString());
      assert.deepEqual(out, { tracing: installed, active: false, loaded: [] }, folder);
    }
  });

  it('a provider registered after the first request is seen, and one disabled is not: the registry is watched, not looked up per request', async (t) => {
    const server = await serve(t, shop, { logLevel: 'info' });
    // Asked once before any provider exists, the registry's global is watched from then on.
    assert.equal((await request(`${server.url}/orders/1`)).status, 200);
    // An exporter of its own: the shared one is shut down with the provider before it.
    const own = new InMemorySpanExporter();
    const served = () => own.getFinishedSpans().filter((s) => s.kind === api.SpanKind.SERVER).length;
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(own)] });
    api.trace.setGlobalTracerProvider(provider);
    t.after(() => api.trace.disable());
    assert.equal((await request(`${server.url}/orders/2`)).status, 200);
    await sleep(10);
    assert.equal(served(), 1);
    api.trace.disable();
    assert.equal((await request(`${server.url}/orders/3`)).status, 200);
    await sleep(10);
    assert.equal(served(), 1);
  });

  it("a tracer that throws costs the request nothing: it is served with funcrun's own trace context", async (t) => {
    const broken = {
      getTracer: () => ({
        startSpan() {
          throw new Error('the exporter is misconfigured');
        },
        // The function's own span (it calls startActiveSpan) is its business: that one works.
        startActiveSpan: (name, fn) => fn({ end() {} }),
      }),
    };
    api.trace.setGlobalTracerProvider(broken);
    const server = await serve(t, shop, { logLevel: 'info' });
    t.after(() => api.trace.disable());
    const res = await request(`${server.url}/orders/3`, { headers: { traceparent: TRACEPARENT } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { id: '3' });
    assert.match(seen.traceparent, new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
    assert.ok(!seen.traceparent.includes(PARENT), "the invocation's own span id");
  });
});
