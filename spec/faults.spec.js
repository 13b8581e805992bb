'use strict';
// Faults attributed to their request: an exception nothing caught or a rejection nothing
// handled, raised in an invocation's async context, is logged fatal with that invocation's reqId
// and trace, its request answered 500, the others finish, shutdown() runs, and the process
// exits 1. Real processes (serve.js), real HTTP.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { AsyncLocalStorage } = require('node:async_hooks');
const { request, project, runServing } = require('./helpers');
const { exchange, statuses } = require('./raw');

const FUNCRUN = JSON.stringify(path.join(__dirname, '..', 'lib', 'index.js'));
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
// Where AsyncLocalStorage is cheap (AsyncContextFrame: Node 24) scoping is always on; on Node 22's
// promise-hook storage it is on once the function uses `log` (the fixtures below all do, but one).
const ALWAYS_SCOPED = !('_enable' in AsyncLocalStorage.prototype);

// A function module that uses funcrun's `log`, crashes on ?crash=, sleeps on ?slow=, and whose
// shutdown() says that it ran (an error reporter would flush there).
const MODULE = `
const { log } = require(${FUNCRUN});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
module.exports = {
  async handle(context) {
    log.info({ q: context.query }, 'invoked');
    const how = context.query.crash;
    if (how === 'timer') { setTimeout(() => { throw new Error('a timer threw: secret-ish detail'); }, 5); return new Promise(() => {}); }
    if (how === 'rejection') { Promise.reject(new Error('nobody handled this')); await sleep(300); return 'too late'; }
    if (how === 'status') { setTimeout(() => { const e = new Error('not found, it says'); e.statusCode = 404; throw e; }, 5); return new Promise(() => {}); }
    if (how === 'value') { setTimeout(() => { throw { not: 'an Error' }; }, 5); return new Promise(() => {}); }
    if (how === 'proxy') { setTimeout(() => { const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy; }, 5); return new Promise(() => {}); }
    if (how === 'generator') {
      const { Readable } = require('node:stream');
      return { body: Readable.from((async function* () { yield 'row,'; log.info('producing'); await sleep(20); setTimeout(() => { throw new Error('from the stream'); }, 1); await sleep(200); yield 'never'; })()) };
    }
    if (how === 'stream') {
      const { Readable } = require('node:stream');
      const body = new Readable({ read() {} });
      body.push('part one,');
      setTimeout(() => { throw new Error('mid-stream'); }, 50);
      return { body, headers: { 'content-type': 'text/plain' } };
    }
    if (how === 'after') { context.waitUntil(new Promise((resolve) => setTimeout(() => { resolve(); throw new Error('after the answer'); }, 30))); return 'answered'; }
    if (how === 'outlived') { setTimeout(() => { log.info('still running'); throw new Error('outlived'); }, 30); return 'answered'; }
    if (context.query.slow) await sleep(Number(context.query.slow));
    return { ok: context.query.n ?? true };
  },
  shutdown() { log.info('shutdown ran'); setTimeout(() => log.info('after shutdown'), 1); },
};
`;

async function crash(how, { extra = [] } = {}) {
  const proc = await runServing([project({ 'index.js': MODULE }), '--grace-period', '5s']);
  const slow = request(`${proc.url}/?slow=400&n=slow`);
  await new Promise((r) => setTimeout(r, 50));
  const others = extra.map((n) => request(`${proc.url}/?slow=100&n=${n}`));
  const crashed = await request(`${proc.url}/?crash=${how}`, { headers: { traceparent: TRACEPARENT } }).catch((err) => ({ error: err }));
  const { code } = await proc.exited;
  return { proc, crashed, slow: await slow, others: await Promise.all(others), code, lines: proc.lines() };
}

function crashedInvocation(lines) {
  return lines.find((l) => l.msg === 'invoked' && l.q.crash !== undefined);
}

describe('faults attributed to their request', () => {
  it('an exception from a timer: fatal with its reqId and trace, its request 500, the others answered, shutdown(), exit 1', async () => {
    const { crashed, slow, others, code, lines } = await crash('timer', { extra: ['a', 'b', 'c'] });
    assert.equal(crashed.status, 500);
    assert.deepEqual(crashed.json, { statusCode: 500, code: 'FUNCRUN_FUNCTION_CRASHED', error: 'Internal Server Error', message: 'Internal Server Error' });
    assert.ok(!crashed.text.includes('secret-ish'), 'the 500 says nothing of the error');
    assert.equal(crashed.headers.get('connection'), 'close', 'the process stops: its connection is not kept');
    assert.equal(slow.status, 200, 'a request in flight finishes');
    assert.deepEqual(slow.json, { ok: 'slow' });
    assert.deepEqual(
      others.map((r) => r.json),
      [{ ok: 'a' }, { ok: 'b' }, { ok: 'c' }],
    );
    assert.equal(code, 1);
    const fatal = lines.find((l) => l.level === 60);
    const invoked = crashedInvocation(lines);
    assert.equal(fatal.msg, 'uncaught exception in this invocation');
    assert.equal(fatal.err.message, 'a timer threw: secret-ish detail');
    assert.equal(fatal.reqId, invoked.reqId);
    assert.equal(fatal.trace_id, TRACE_ID);
    assert.equal(fatal.span_id, invoked.span_id);
    // shutdown() runs outside the invocation that crashed: its lines carry no reqId.
    assert.equal(lines.find((l) => l.msg === 'shutdown ran').reqId, undefined);
    assert.equal(lines.find((l) => l.msg === 'shutdown ran').trace_id, undefined);
    const order = (msg) => lines.findIndex((l) => l.msg === msg);
    assert.ok(order('shutdown ran') > lines.indexOf(fatal), 'shutdown() ran after the fault');
    assert.ok(order('stopped') > order('shutdown ran'));
  });

  it('an unhandled rejection: the same, named as such', async () => {
    const { crashed, slow, code, lines } = await crash('rejection');
    assert.equal(crashed.status, 500);
    assert.equal(slow.status, 200);
    assert.equal(code, 1);
    const fatal = lines.find((l) => l.level === 60);
    assert.equal(fatal.msg, 'unhandled rejection in this invocation');
    assert.equal(fatal.err.message, 'nobody handled this');
    assert.equal(fatal.reqId, crashedInvocation(lines).reqId);
    assert.equal(fatal.trace_id, TRACE_ID);
  });

  it('a crash is a 500 whatever the thrown value says of itself (a statusCode, a non-Error)', async () => {
    for (const how of ['status', 'value', 'proxy']) {
      const { crashed, code, lines } = await crash(how);
      assert.equal(crashed.status, 500, how);
      assert.equal(code, 1);
      const fatal = lines.find((l) => l.level === 60);
      assert.equal(fatal.reqId, crashedInvocation(lines).reqId, how);
    }
  });

  it('mid-stream, the answer already begun is cut, not finished as if whole', async () => {
    const { crashed, code, lines } = await crash('stream');
    assert.ok(crashed.error !== undefined || crashed.status === 200, 'a cut connection, or a body cut short');
    if (crashed.error === undefined) assert.notEqual(crashed.text, 'part one,', 'fetch saw a complete body');
    assert.equal(code, 1);
    assert.equal(lines.find((l) => l.level === 60).reqId, crashedInvocation(lines).reqId);
  });

  it("in a returned stream's own code (a generator): attributed, the answer begun is cut", async () => {
    const { crashed, code, lines } = await crash('generator');
    assert.ok(crashed.error !== undefined || crashed.text !== 'row,never', 'not a whole answer');
    assert.equal(code, 1);
    const invoked = crashedInvocation(lines);
    assert.equal(lines.find((l) => l.msg === 'producing').reqId, invoked.reqId, "the generator's log line");
    const fatal = lines.find((l) => l.level === 60);
    assert.equal(fatal.err.message, 'from the stream');
    assert.equal(fatal.reqId, invoked.reqId);
    assert.equal(fatal.trace_id, TRACE_ID);
  });

  it('the lines written before the exit all reach a reader that reads late (the fatal line last but one)', async () => {
    const { spawn } = require('node:child_process');
    const dir = project({
      'index.js': `const { log } = require(${FUNCRUN});\nmodule.exports = () => { for (let i = 0; i < 300; i++) log.info({ i, pad: 'x'.repeat(1000) }, 'busy'); setTimeout(() => { throw new Error('after the burst'); }, 1); return new Promise(() => {}); };\n`,
    });
    const port = await require('./helpers').freePort();
    // The shell's pipe reader sleeps a second before reading: node queues what the pipe cannot take.
    const script = `"${process.execPath}" "${path.join(__dirname, '..', 'lib', 'serve.js')}" "${dir}" --port ${port} --host 127.0.0.1 --grace-period 1s | (sleep 1; cat)`;
    const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    const exited = new Promise((resolve) => child.on('close', resolve));
    await require('./helpers').waitUntilListening(port, { child: { exitCode: null } });
    const res = await request(`http://127.0.0.1:${port}/`).catch((err) => ({ error: err }));
    await exited;
    assert.equal(res.status, 500);
    const lines = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.equal(lines.filter((l) => l.msg === 'busy').length, 300);
    assert.equal(lines.filter((l) => l.level === 60).length, 1);
    assert.equal(lines.at(-1).msg, 'stopped');
  });

  it('in work after the answer (waitUntil): the answer stands; the fatal line names the invocation', async () => {
    const { crashed, code, lines } = await crash('after');
    assert.equal(crashed.status, 200);
    assert.equal(crashed.text, 'answered');
    assert.equal(code, 1);
    const fatal = lines.find((l) => l.level === 60);
    assert.equal(fatal.err.message, 'after the answer');
    assert.equal(fatal.reqId, crashedInvocation(lines).reqId);
    assert.equal(fatal.trace_id, TRACE_ID);
  });

  it('in work that outlived its invocation: the fatal line says so, blaming no request and carrying no trace', async () => {
    const { crashed, code, lines } = await crash('outlived');
    assert.equal(crashed.status, 200);
    assert.equal(code, 1);
    const reqId = crashedInvocation(lines).reqId;
    const running = lines.find((l) => l.msg === 'still running');
    const fatal = lines.find((l) => l.level === 60);
    assert.equal(fatal.msg, 'uncaught exception in work that outlived its request');
    assert.equal(fatal.err.message, 'outlived');
    for (const line of [running, fatal]) {
      assert.equal(line.outlivedRequest, reqId);
      assert.equal(line.reqId, undefined);
      assert.equal(line.trace_id, undefined);
    }
  });

  it('a request pipelined behind the crashed one is answered, and the drain does not wait for the crashed function', async () => {
    const proc = await runServing([project({ 'index.js': MODULE }), '--grace-period', '5s']);
    const started = performance.now();
    const { text } = await exchange(proc.port, 'GET /?crash=timer HTTP/1.1\r\nHost: x\r\n\r\nGET /?n=behind HTTP/1.1\r\nHost: x\r\n\r\n', { wait: 8000 });
    const { code } = await proc.exited;
    assert.deepEqual(statuses(text), [500, 200], text);
    assert.match(text, /\{"ok":"behind"\}$/);
    assert.equal(code, 1);
    // The crashed function never returns: waiting for it would take the whole grace period.
    assert.ok(performance.now() - started < 4000, 'the drain waited for the crashed function');
    assert.ok(!proc.lines().some((l) => /cut at the end of the grace period/.test(l.msg)));
  });

  it('outside any invocation: fatal without a reqId, requests in flight finish, shutdown(), exit 1', async () => {
    const dir = project({
      'index.js': `${MODULE}\nsetTimeout(() => { throw new Error('a stray timer at load'); }, 600);\n`,
    });
    const proc = await runServing([dir]);
    const slow = await request(`${proc.url}/?slow=900&n=late`);
    const { code } = await proc.exited;
    assert.equal(slow.status, 200);
    assert.equal(code, 1);
    const lines = proc.lines();
    const fatal = lines.find((l) => l.level === 60);
    assert.equal(fatal.msg, 'uncaught exception');
    assert.equal(fatal.reqId, undefined);
    assert.equal(fatal.trace_id, undefined);
    assert.ok(lines.some((l) => l.msg === 'shutdown ran'));
  });

  it(`a function that never uses log: ${ALWAYS_SCOPED ? 'attributed all the same (AsyncContextFrame)' : 'not attributed on promise-hook storage (Node 22): fatal without a reqId'}`, async () => {
    const dir = project({
      'index.js': `module.exports = (context) => { if (context.query.crash) { setTimeout(() => { throw new Error('unscoped'); }, 5); return new Promise(() => {}); } return 'ok'; };\n`,
    });
    const proc = await runServing([dir, '--grace-period', '500ms']);
    const crashed = await request(`${proc.url}/?crash=1`, { headers: { traceparent: TRACEPARENT } }).catch((err) => ({ error: err }));
    const { code } = await proc.exited;
    assert.equal(code, 1);
    const fatal = proc.lines().find((l) => l.level === 60);
    assert.equal(fatal.err.message, 'unscoped');
    if (ALWAYS_SCOPED) {
      assert.equal(crashed.status, 500);
      assert.equal(fatal.trace_id, TRACE_ID);
      assert.equal(typeof fatal.reqId, 'number');
    } else {
      // Unattributed: no request is guessed at; the crashed one is cut when the grace period ends.
      assert.ok(crashed.error !== undefined, 'the request was cut');
      assert.equal(fatal.reqId, undefined);
      assert.equal(fatal.msg, 'uncaught exception');
    }
  });

  it("a fetch handler's timer: fatal with its reqId and trace, its request 500 with funcrun's body, the other answered, exit 1", async () => {
    const dir = project({
      'index.js': `
const { log } = require(${FUNCRUN});
module.exports = {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    log.info({ path: url.pathname }, 'invoked');
    if (url.pathname === '/crash') { setTimeout(() => { throw new Error('a fetch timer threw: secret-ish detail'); }, 5); return new Promise(() => {}); }
    await new Promise((r) => setTimeout(r, 300));
    return Response.json({ reqId: ctx.reqId });
  },
};
`,
    });
    const proc = await runServing([dir, '--grace-period', '5s']);
    const slow = request(`${proc.url}/slow`);
    await new Promise((r) => setTimeout(r, 50));
    const crashed = await request(`${proc.url}/crash`, { headers: { traceparent: TRACEPARENT } });
    const { code } = await proc.exited;
    assert.equal(code, 1);
    assert.equal(crashed.status, 500);
    assert.deepEqual(crashed.json, { statusCode: 500, code: 'FUNCRUN_FUNCTION_CRASHED', error: 'Internal Server Error', message: 'Internal Server Error' });
    assert.equal((await slow).status, 200, 'a request in flight finishes');
    const lines = proc.lines();
    const fatal = lines.find((l) => l.level === 60);
    assert.equal(fatal.msg, 'uncaught exception in this invocation');
    assert.equal(fatal.reqId, lines.find((l) => l.msg === 'invoked' && l.path === '/crash').reqId);
    assert.equal(fatal.trace_id, TRACE_ID);
    assert.ok(!lines.some((l) => l.msg === 'invoked' && l.path === '/slow' && l.reqId === fatal.reqId));
  });
});

describe('a fault in a batch of CloudEvents', () => {
  it("an earlier event's stray exception answers the batch 500, and no later event of it runs", async () => {
    // Event 1 schedules a timer that throws and waits a little longer; event 2 says that it ran.
    const dir = project({
      'index.js': `
const { log } = require(${FUNCRUN});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
module.exports = async (context) => {
  if (context.cloudevent === undefined) { await sleep(300); return { ok: true }; }
  log.info({ id: context.cloudevent.id }, 'event ran');
  if (context.cloudevent.id === '1') { setTimeout(() => { throw new Error('a timer threw'); }, 5); await sleep(30); }
  return undefined;
};
`,
    });
    const proc = await runServing([dir, '--grace-period', '5s']);
    const events = JSON.stringify(['1', '2'].map((id) => ({ specversion: '1.0', id, source: '/batch', type: 'test.event', data: { id } })));
    // Pipelined behind a slow request, so that the batch's connection stays open after its 500:
    // as a broker's kept-alive connection does.
    const batch = `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/cloudevents-batch+json\r\nContent-Length: ${Buffer.byteLength(events)}\r\n\r\n${events}`;
    const { text } = await exchange(proc.port, `GET / HTTP/1.1\r\nHost: x\r\n\r\n${batch}`, { wait: 5000 });
    const { code } = await proc.exited;
    assert.deepEqual(statuses(text), [200, 500], text);
    assert.match(text, /"code":"FUNCRUN_FUNCTION_CRASHED"/);
    assert.equal(code, 1);
    const ran = proc.lines().filter((l) => l.msg === 'event ran');
    assert.deepEqual(
      ran.map((l) => l.id),
      ['1'],
      'the sender delivers the batch again: event 2 must not run now too',
    );
  });
});

describe('a write into a response body funcrun cancelled', () => {
  it('is no fault: the function enqueuing after the timeout cancelled its body gets a warning, and the process goes on serving', async (t) => {
    // A producer on a timer with no cancel(): it enqueues after funcrun cancelled the body, which
    // the Streams standard answers with a throw in the function's timer.
    const dir = project({
      'index.js': `
module.exports = {
  fetch(request) {
    const asked = new URL(request.url).searchParams.get('type');
    if (asked === 'fast') return Response.json({ ok: true });
    const type = asked === 'bytes' ? 'bytes' : undefined;
    const body = new ReadableStream({
      type,
      pull(controller) {
        return new Promise((resolve) => setTimeout(() => { controller.enqueue(new TextEncoder().encode('late')); controller.close(); resolve(); }, 300));
      },
    });
    return new Response(body);
  },
};
`,
    });
    const proc = await runServing([dir, '--timeout', '100ms']);
    t.after(() => proc.child.kill('SIGKILL'));
    for (const type of ['default', 'bytes']) {
      const late = await request(`${proc.url}/?type=${type}`);
      assert.equal(late.status, 504, type);
      await new Promise((r) => setTimeout(r, 400));
      const next = await request(`${proc.url}/?type=fast`);
      assert.equal(next.status, 200, `${type}: still serving`);
    }
    proc.child.kill('SIGTERM');
    const { code } = await proc.exited;
    assert.equal(code, 0);
    const lines = proc.lines();
    assert.equal(lines.filter((l) => l.level >= 60).length, 0, 'nothing fatal');
    const warned = lines.filter((l) => l.level === 40 && /wrote to a response body stream that was closed/.test(l.msg));
    assert.equal(warned.length, 2, JSON.stringify(lines));
    assert.match(warned[0].err.message, /already closed/);
  });
});
