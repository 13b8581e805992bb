'use strict';
// funcrun/testing, imported by name as a function project imports it.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { createContext, startFunction, CloudEvent } = require('funcrun/testing');
const { project, request, sink } = require('./helpers');

describe('funcrun/testing', () => {
  it('createContext builds the context funcrun would: method, path, query on the context, headers, body', () => {
    const ctx = createContext({ method: 'post', url: '/orders?id=7&tag=a&tag=b', headers: { 'Content-Type': 'application/json; charset=utf-8', 'X-Trace': 't' }, body: { n: 1 } });
    assert.equal(ctx.method, 'POST');
    assert.equal(ctx.path, '/orders');
    assert.deepEqual({ ...ctx.query }, { id: '7', tag: ['a', 'b'] });
    assert.equal(ctx.id, '7');
    assert.equal(ctx.headers['x-trace'], 't');
    assert.equal(ctx.contentType, 'application/json');
    assert.deepEqual(ctx.body, { n: 1 });
    assert.equal(ctx.httpVersion, '1.1');
    assert.equal(ctx.cloudevent, undefined);
    const answer = ctx.cloudEventResponse({ ok: true }).type('t').source('/s').response();
    assert.ok(answer instanceof CloudEvent);
  });

  it("createContext with a CloudEvent sets context.cloudevent and its data as body; log lines can be captured", () => {
    const out = sink();
    const event = new CloudEvent({ type: 't', source: '/s', data: { a: 1 } });
    const ctx = createContext({ cloudevent: event, logDestination: out });
    assert.equal(ctx.cloudevent, event);
    assert.deepEqual(ctx.body, { a: 1 });
    ctx.log.debug('captured');
    assert.equal(out.entries()[0].msg, 'captured');
  });

  it('startFunction serves a module, or a project folder with its func.yaml, on a free port', async () => {
    const running = await startFunction({ handle: () => 'from a module' });
    try {
      assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await request(running.url)).text, 'from a module');
    } finally {
      await running.close();
    }
    const folder = project({ 'index.js': 'module.exports = () => process.env.FROM_YAML;', 'func.yaml': 'run:\n  envs:\n    - name: FROM_YAML\n      value: yes from yaml\ndeploy:\n  healthEndpoints:\n    liveness: /alive\n' });
    const fromFolder = await startFunction(folder, { config: folder });
    try {
      assert.equal((await request(fromFolder.url)).text, 'yes from yaml');
      assert.equal((await request(fromFolder.url + '/alive')).text, 'OK');
    } finally {
      await fromFolder.close();
    }
  });
});

describe('createLogSink', () => {
  it('collects the lines of a started function, at trace level, parsed as JSON', async () => {
    const { createLogSink } = require('funcrun/testing');
    const sink = createLogSink();
    const running = await startFunction((ctx) => {
      ctx.log.trace({ step: 1 }, 'tracing');
      return 'ok';
    }, { logDestination: sink });
    try {
      assert.equal(await (await fetch(running.url)).text(), 'ok');
      const traced = sink.entries().find((e) => e.msg === 'tracing');
      assert.equal(traced.step, 1);
      assert.equal(traced.level, 10);
      assert.match(sink.text(), /"msg":"tracing"/);
      assert.equal(sink.lines.length, sink.entries().length);
    } finally {
      await running.close();
    }
  });
});
