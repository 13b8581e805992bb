'use strict';
// funcrun/testing, imported by name as a function project imports it.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { createContext, startFunction, serve, CloudEvent } = require('funcrun/testing');
const { project, request, sink } = require('./helpers');

describe('funcrun/testing', () => {
  it('createContext builds the context funcrun would: method, path, query on the context, headers, body', () => {
    const ctx = createContext({
      method: 'post',
      url: '/orders?id=7&tag=a&tag=b',
      headers: { 'Content-Type': 'application/json; charset=utf-8', 'X-Trace': 't' },
      body: { n: 1 },
    });
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

  it('createContext with a CloudEvent sets context.cloudevent and its data as body; log lines can be captured', () => {
    const out = sink();
    const event = new CloudEvent({ type: 't', source: '/s', data: { a: 1 } });
    const ctx = createContext({ cloudevent: event, logDestination: out });
    assert.equal(ctx.cloudevent, event);
    assert.deepEqual(ctx.body, { a: 1 });
    ctx.log.debug('captured');
    assert.equal(out.entries()[0].msg, 'captured');
  });

  it('startFunction serves a module, or a project folder with its func.yaml, on a free port', async (t) => {
    const running = await startFunction({ handle: () => 'from a module' });
    t.after(() => running.close());
    assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await request(running.url)).text, 'from a module');
    const folder = project({
      'index.js': 'module.exports = () => process.env.FROM_YAML;',
      'func.yaml': 'run:\n  envs:\n    - name: FROM_YAML\n      value: yes from yaml\ndeploy:\n  healthEndpoints:\n    liveness: /alive\n',
    });
    const fromFolder = await startFunction(folder, { config: folder });
    t.after(() => fromFolder.close());
    assert.equal((await request(fromFolder.url)).text, 'yes from yaml');
    assert.equal((await request(fromFolder.url + '/alive')).text, 'OK');
    assert.deepEqual(fromFolder.probes, { liveness: '/alive', readiness: '/health/readiness' });
    assert.deepEqual(running.probes, { liveness: '/health/liveness', readiness: '/health/readiness' });
  });

  it('serve serves for one test with the options given, and closes the server after it: then its port refuses', async (t) => {
    let served;
    await t.test('a test that serves', async (inner) => {
      served = await serve(inner, { handle: (ctx) => ({ debug: ctx.log.isLevelEnabled('debug') }) }, { logLevel: 'debug', logDestination: sink() });
      assert.match(served.url, new RegExp(`^http://127\\.0\\.0\\.1:${served.port}$`));
      assert.ok(served.server.listening);
      assert.deepEqual((await request(served.url)).json, { debug: true });
    });
    assert.equal(served.server.listening, false);
    const refused = await new Promise((resolve) => {
      const socket = net.connect(served.port, '127.0.0.1', () => {
        socket.destroy();
        resolve(undefined);
      });
      socket.on('error', (err) => resolve(err.code));
    });
    assert.equal(refused, 'ECONNREFUSED');
  });

  it('serve without the test context refuses before anything listens', async () => {
    await assert.rejects(
      serve(() => 'never served'),
      { name: 'TypeError', message: /takes the test's context first/ },
    );
    await assert.rejects(
      serve({ after: 'not a hook' }, () => 'never served'),
      TypeError,
    );
  });
});

describe('createEventContext', () => {
  const { defineEvents } = require('funcrun');
  const { createEventContext } = require('funcrun/testing');
  const events = defineEvents({
    types: {
      'com.example.order.created': { type: 'object', properties: { id: { type: 'string' }, quantity: { type: 'integer' } }, required: ['id', 'quantity'] },
      'com.example.order.cancelled': { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    },
  });
  // What the handler saw of its context, with its answer, for comparing a unit test's call with a served request.
  const handle = (context, data) => {
    const event = context.cloudevent;
    const seen = {
      method: context.method,
      type: event.type,
      dataIsBody: data === context.body,
      specversion: context.headers['ce-specversion'],
      contentType: context.contentType,
    };
    if (event.type === 'com.example.order.created') return { ...seen, confirmed: data.id, quantity: data.quantity * 2 };
    return { ...seen, cancelled: data.id };
  };

  it("makes the context an event handler takes: the declared type's event with the data, which the handler answers as it does when served", async (t) => {
    const out = sink();
    const context = createEventContext(events, 'com.example.order.created', { id: 'o-7', quantity: 2 }, { logDestination: out });
    const event = context.cloudevent;
    assert.ok(event instanceof CloudEvent);
    assert.deepEqual([event.type, event.source, event.specversion, event.data], ['com.example.order.created', '/test', '1.0', { id: 'o-7', quantity: 2 }]);
    assert.match(event.id, /^[0-9a-f-]{36}$/);
    assert.equal(context.headers['ce-id'], event.id);
    assert.equal(context.headers['ce-type'], 'com.example.order.created');
    const unit = handle(context, event.data);
    assert.deepEqual(unit, {
      method: 'POST',
      type: 'com.example.order.created',
      dataIsBody: true,
      specversion: '1.0',
      contentType: 'application/json',
      confirmed: 'o-7',
      quantity: 4,
    });
    context.log.info('logged');
    assert.equal(out.entries()[0].msg, 'logged');

    // The same event sent to the same module, served: the handler answers the same.
    const { url } = await serve(t, { handle, events });
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': event.id, 'ce-source': '/test', 'ce-type': 'com.example.order.created' },
      body: JSON.stringify(event.data),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, unit);
  });

  it('takes the attributes and options given, and refuses a type the module does not declare unless it passes others through', () => {
    const context = createEventContext(
      events,
      'com.example.order.cancelled',
      { id: 'o-8' },
      { attributes: { source: '/orders', id: '8', subject: 'o-8' }, url: '/hooks?from=broker' },
    );
    assert.deepEqual([context.cloudevent.source, context.cloudevent.id, context.cloudevent.subject], ['/orders', '8', 'o-8']);
    assert.deepEqual([context.path, context.query.from, context.headers['ce-subject']], ['/hooks', 'broker', 'o-8']);
    assert.deepEqual(handle(context, context.cloudevent.data).cancelled, 'o-8');
    assert.throws(() => createEventContext(events, 'com.example.order.refunded', {}), {
      name: 'TypeError',
      message: "createEventContext: 'com.example.order.refunded' is not a declared event type ('com.example.order.created', 'com.example.order.cancelled')",
    });
    assert.throws(() => createEventContext(events, 'toString', {}), TypeError);
    const open = defineEvents({ types: {}, passthrough: true });
    assert.equal(createEventContext(open, 'com.example.ping', 42).cloudevent.data, 42);
  });
});

describe('createLogSink', () => {
  it('collects the lines of a started function, at trace level, parsed as JSON', async (t) => {
    const { createLogSink } = require('funcrun/testing');
    const sink = createLogSink();
    const running = await serve(
      t,
      (ctx) => {
        ctx.log.trace({ step: 1 }, 'tracing');
        return 'ok';
      },
      { logDestination: sink },
    );
    assert.equal(await (await fetch(running.url)).text(), 'ok');
    const traced = sink.entries().find((e) => e.msg === 'tracing');
    assert.equal(traced.step, 1);
    assert.equal(traced.level, 10);
    assert.match(sink.text(), /"msg":"tracing"/);
    assert.equal(sink.lines.length, sink.entries().length);
  });
});

describe('fetch handlers in funcrun/testing', () => {
  it('createFetchContext: the ctx funcrun gives fetch, whose waitUntil keeps its promises and whose log carries reqId', async () => {
    const { createFetchContext, createLogSink } = require('funcrun/testing');
    const lines = createLogSink();
    const ctx = createFetchContext({ reqId: 7, logDestination: lines });
    const handler = {
      prefix: 'item',
      async fetch(request, env, c) {
        const id = new URL(request.url).pathname.split('/').pop();
        c.log.info({ id }, 'read');
        c.waitUntil(Promise.resolve('audited'));
        c.waitUntil(Promise.reject(new Error('audit failed')));
        c.passThroughOnException();
        return Response.json({ name: `${this.prefix} ${id}`, region: env.REGION, reqId: c.reqId });
      },
    };
    const res = await handler.fetch(new Request('http://localhost/items/3'), { REGION: 'eu' }, ctx);
    assert.deepEqual(await res.json(), { name: 'item 3', region: 'eu', reqId: 7 });
    assert.equal(ctx.waitedFor.length, 2);
    const outcomes = await ctx.settled();
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected'],
    );
    assert.equal(outcomes[1].reason.message, 'audit failed');
    const [line] = lines.entries();
    assert.equal(line.msg, 'read');
    assert.equal(line.reqId, 7);
    assert.equal(line.id, '3');
    // Silent by default, and a fresh list each time.
    const quiet = createFetchContext();
    quiet.log.info('nowhere');
    assert.equal(quiet.reqId, 1);
    assert.deepEqual(quiet.waitedFor, []);
  });

  it("serve serves a { fetch } object: every path and method reaches it, and the probes stay funcrun's", async (t) => {
    const seen = [];
    const running = await serve(t, {
      async fetch(request) {
        seen.push(`${request.method} ${new URL(request.url).pathname}`);
        return new Response(request.body === null ? 'no body' : await request.text(), { status: 202, headers: { 'x-app': 'yes' } });
      },
    });
    const put = await request(`${running.url}/a/b?c=1`, { method: 'PUT', body: 'sent' });
    assert.equal(put.status, 202);
    assert.equal(put.text, 'sent');
    assert.equal(put.headers.get('x-app'), 'yes');
    assert.equal((await request(`${running.url}/`)).text, 'no body');
    assert.equal((await request(`${running.url}/health/readiness`)).text, 'OK');
    assert.deepEqual(seen, ['PUT /a/b', 'GET /']);
  });
});

describe('docs/testing.md', () => {
  it("createFetchContext's Hono app and its unit test run as written, and the test passes", (t) => {
    const fs = require('node:fs');
    const path = require('node:path');
    const { spawnSync } = require('node:child_process');
    const ROOT = path.join(__dirname, '..');
    const page = fs.readFileSync(path.join(ROOT, 'docs', 'testing.md'), 'utf8');
    const section = page.slice(page.indexOf('## createFetchContext'), page.indexOf('## serve'));
    const blocks = [...section.matchAll(/```js\n\/\/ (\S+)\n([\s\S]*?)```/g)];
    assert.deepEqual(
      blocks.map(([, file]) => file),
      ['index.js', 'test/unit.js'],
    );
    // Inside the checkout, where funcrun/testing and hono resolve as in a project that installed them.
    const folder = path.join(ROOT, '.tmp', 'docs-fetch-test');
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    for (const [, file, text] of blocks) {
      fs.mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
      fs.writeFileSync(path.join(folder, file), text);
    }
    // Without this run's NODE_TEST_CONTEXT, which would send the inner run's report to this one.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=tap', path.join(folder, 'test', 'unit.js')], { cwd: folder, encoding: 'utf8', env });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^# pass 1$/m);
  });
});
