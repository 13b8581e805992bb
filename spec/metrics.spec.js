'use strict';
// /metrics in Prometheus text, with faas-js-runtime's metric names and labels.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const os = require('node:os');
const { serve, request } = require('./helpers');

describe('metrics', () => {
  const value = (text, series) => {
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  it('/metrics counts invocations and errors, times them, and labels them with the service and revision', async (t) => {
    const saved = { ...process.env };
    Object.assign(process.env, { K_SERVICE: 'orders', K_REVISION: 'orders-00042' });
    let server;
    try {
      server = await serve(t, (ctx) => {
        if (ctx.query.fail) throw new Error('boom');
        return 'ok';
      });
    } finally {
      for (const k of ['K_SERVICE', 'K_REVISION']) if (saved[k] === undefined) delete process.env[k];
    }
    for (const q of ['', '', '?fail=1']) await request(server.url + '/' + q);
    await request(server.url + '/health/readiness');
    const res = await request(server.url + '/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    // faas-js-runtime's labels in its order; the instance is the host name without POD_NAME.
    const labels = `faas_name="orders",faas_id="${os.hostname()}-[0-9a-f-]{36}",faas_instance="${os.hostname()}",faas_version="orders-00042",faas_runtime="Node.js"`;
    assert.match(res.text, new RegExp(`^faas_invocations\\{${labels}\\} 3$`, 'm'));
    assert.equal(value(res.text, 'faas_errors{'), 1);
    assert.match(res.text, /^# TYPE faas_execution_latency histogram$/m);
    assert.equal(value(res.text, 'faas_execution_latency_count{'), 3);
    assert.equal(value(res.text, 'faas_execution_latency_bucket{le="+Inf"'), 3);
    assert.equal(value(res.text, 'faas_cold_start_latency_count{'), 1);
    // Queue latency is timed for invocations only (not the probe), as faas-js-runtime does.
    assert.equal(value(res.text, 'faas_queue_latency_count{'), 3);
    assert.ok(value(res.text, 'faas_cpu_utilization{') >= 0);
    assert.ok(value(res.text, 'faas_mem_utilization{') > 1, 'resident MB');
    // Four requests went over the server's connections since it started: some bytes per second.
    assert.ok(value(res.text, 'faas_netio_utilization{') > 0);
    assert.ok(value(res.text, 'process_resident_memory_bytes{') > 0);
    assert.ok(value(res.text, 'nodejs_eventloop_lag_seconds{') >= 0);
    // Every non-comment line is `name{labels} number`.
    for (const line of res.text
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('#')))
      assert.match(line, /^[a-z_]+\{[^}]*\} [-\d.e+]+$/, line);
  });

  it("a fetch handler's requests are counted and timed; their queue latency is the admission of their events, else none", async (t) => {
    const app = {
      fetch(request) {
        if (new URL(request.url).pathname === '/fail') throw new Error('boom');
        return new Response('ok');
      },
    };
    const plain = await serve(t, app);
    for (const path of ['/', '/a', '/fail']) await request(plain.url + path);
    const text = (await request(plain.url + '/metrics')).text;
    assert.equal(value(text, 'faas_invocations{'), 3);
    assert.equal(value(text, 'faas_errors{'), 1);
    assert.equal(value(text, 'faas_execution_latency_count{'), 3);
    assert.ok(value(text, 'faas_execution_latency_sum{') > 0);
    // Nothing is read before fetch is called: no time queued.
    assert.equal(value(text, 'faas_queue_latency_count{'), 3);
    assert.equal(value(text, 'faas_queue_latency_sum{'), 0);

    // With idempotency on, a CloudEvent is read and admitted first: that is its queue latency.
    const admitting = await serve(t, app, { idempotency: true });
    const headers = { 'ce-specversion': '1.0', 'ce-id': 'q-1', 'ce-type': 'spec.queued', 'ce-source': '/spec', 'content-type': 'application/json' };
    assert.equal((await request(admitting.url + '/', { method: 'POST', headers, body: '{"n":1}' })).status, 200);
    const admitted = (await request(admitting.url + '/metrics')).text;
    assert.equal(value(admitted, 'faas_queue_latency_count{'), 1);
    assert.ok(value(admitted, 'faas_queue_latency_sum{') > 0);
  });

  it('the path is configurable, and metrics can be switched off', async (t) => {
    const moved = await serve(t, () => 'handler', { metricsPath: '/internal/metrics' });
    assert.match((await request(moved.url + '/internal/metrics')).text, /faas_invocations/);
    assert.equal((await request(moved.url + '/metrics')).text, 'handler');
    const off = await serve(t, () => 'handler', { metrics: false });
    assert.equal((await request(off.url + '/metrics')).text, 'handler');
  });
});
