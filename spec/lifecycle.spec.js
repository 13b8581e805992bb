'use strict';
// init, shutdown, signals and crashes, with serve.js run as a real process.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { project, run, runServing, request, freePort } = require('./helpers');
const { serve } = require('./helpers');

describe('lifecycle', () => {
  it('init() completes before the server listens', async () => {
    const folder = project({
      'index.js': `
        let ready = false;
        module.exports = {
          async init() {
            console.log(JSON.stringify({ msg: 'init started' }));
            await new Promise((r) => setTimeout(r, 300));
            ready = true;
            console.log(JSON.stringify({ msg: 'init done' }));
          },
          handle: () => ({ ready }),
        };`,
    });
    const proc = await runServing([folder]);
    assert.deepEqual((await request(proc.url)).json, { ready: true });
    const order = proc.lines().map((l) => l.msg);
    assert.ok(order.indexOf('init done') < order.findIndex((m) => m.startsWith('listening')), order.join(' | '));
    proc.child.kill('SIGTERM');
    await proc.exited;
  });

  it('init() that throws: logged with its stack, exit code 1, nothing listens', async () => {
    const folder = project({
      'index.js': "module.exports = { init() { throw new Error('database unreachable'); }, handle: () => 'never' };",
    });
    const port = await freePort();
    const proc = run([folder, '--port', String(port)]);
    assert.equal((await proc.exited).code, 1);
    const line = JSON.parse(proc.out.stderr.trim());
    assert.equal(line.level, 60);
    assert.match(line.msg, /database unreachable/);
    assert.match(line.err.stack, /index\.js/);
    assert.ok(!proc.out.stdout.includes('listening'));
  });

  it('an async init() that rejects stops the start too', async () => {
    const folder = project({ 'index.mjs': "export async function init() { throw new Error('async init failed'); }\nexport const handle = () => 1;" });
    const proc = run([folder + '/index.mjs', '--port', '0']);
    assert.equal((await proc.exited).code, 1);
    assert.match(proc.out.stderr, /async init failed/);
  });

  for (const signal of ['SIGTERM', 'SIGINT']) {
    it(`${signal}: in-flight requests finish, new connections are refused, shutdown() runs after the last one, exit 0`, async () => {
      const folder = project({
        'index.js': `
          module.exports = {
            async handle(ctx) {
              if (ctx.path === '/slow') {
                console.log(JSON.stringify({ msg: 'slow started' }));
                await new Promise((r) => setTimeout(r, 600));
                console.log(JSON.stringify({ msg: 'slow finished' }));
                return 'slow done';
              }
              return 'fast';
            },
            async shutdown() {
              await new Promise((r) => setTimeout(r, 50));
              console.log(JSON.stringify({ msg: 'shutdown ran' }));
            },
          };`,
      });
      const proc = await runServing([folder]);
      const slow = [request(proc.url + '/slow'), request(proc.url + '/slow')];
      await proc.waitFor((l) => l.msg === 'slow started');
      proc.child.kill(signal);
      await proc.waitFor((l) => l.msg.includes(signal));
      await assert.rejects(request(proc.url + '/fast'), 'a new connection is refused');
      const answers = await Promise.all(slow);
      for (const res of answers) {
        assert.equal(res.status, 200);
        assert.equal(res.text, 'slow done');
      }
      const { code } = await proc.exited;
      assert.equal(code, 0);
      const order = proc.lines().map((l) => l.msg);
      assert.ok(order.lastIndexOf('slow finished') < order.indexOf('shutdown ran'), order.join(' | '));
      assert.ok(order.indexOf('shutdown ran') < order.indexOf('stopped'), order.join(' | '));
    });
  }

  it('a request still running at the end of the grace period is cut and logged with its reqId, method and path; shutdown() runs; exit code 3', async () => {
    const folder = project({
      'index.js': `module.exports = { handle: (ctx) => ctx.path === '/quick' ? undefined : new Promise(() => { console.log(JSON.stringify({ msg: 'hanging' })); }), shutdown() { console.log(JSON.stringify({ msg: 'shutdown ran' })); } };`,
    });
    const proc = await runServing([folder, '--grace-period', '300ms']);
    const hanging = request(proc.url + '/orders?token=secret', { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } }).catch(
      (err) => err,
    );
    await proc.waitFor((l) => l.msg === 'hanging');
    assert.equal((await request(proc.url + '/quick')).status, 204);
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 3);
    assert.ok(proc.lines().some((l) => l.msg === 'shutdown ran'));
    assert.ok((await hanging) instanceof Error);
    const cut = proc.lines().filter((l) => /^request cut at the end of the grace period/.test(l.msg));
    // Only the request still running: the quick one was answered.
    assert.equal(cut.length, 1, proc.out.stdout);
    assert.equal(cut[0].reqId, 1);
    assert.equal(cut[0].method, 'PUT');
    assert.equal(cut[0].path, '/orders');
    assert.doesNotMatch(proc.out.stdout, /secret/);
    assert.ok(
      proc.lines().some((l) => l.level === 40 && /drain was incomplete/.test(l.msg) && l.cut === 1),
      proc.out.stdout,
    );
  });

  it('a fault while draining decides the exit code (1), and the line saying the drain was incomplete names it', async () => {
    const folder = project({
      'index.js': `module.exports = (ctx) => new Promise(() => { ctx.signal.addEventListener('abort', () => { throw new Error('cut, and threw'); }); console.log(JSON.stringify({ msg: 'hanging' })); });`,
    });
    const proc = await runServing([folder, '--grace-period', '300ms']);
    const hanging = request(proc.url).catch((err) => err);
    await proc.waitFor((l) => l.msg === 'hanging');
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 1);
    assert.ok((await hanging) instanceof Error);
    assert.ok(
      proc.lines().some((l) => l.level === 60 && l.err?.message === 'cut, and threw'),
      proc.out.stdout,
    );
    const incomplete = proc.lines().filter((l) => /drain was incomplete/.test(l.msg));
    assert.deepEqual(
      incomplete.map((l) => l.msg),
      ['stopped, but the drain was incomplete: exit code 1'],
    );
  });

  it('an uncaught exception is logged as fatal with its stack, shutdown() runs, exit code 1', async () => {
    const folder = project({
      'index.js': `
        module.exports = {
          handle() {
            setImmediate(() => { throw new Error('escaped the handler'); });
            return 'answered';
          },
          shutdown() { console.log(JSON.stringify({ msg: 'shutdown ran' })); },
        };`,
    });
    const proc = await runServing([folder]);
    assert.equal((await request(proc.url)).text, 'answered');
    const { code } = await proc.exited;
    assert.equal(code, 1);
    const fatal = proc.lines().find((l) => l.level === 60);
    assert.equal(fatal.err.message, 'escaped the handler');
    assert.match(fatal.err.stack, /index\.js/);
    assert.ok(proc.lines().some((l) => l.msg === 'shutdown ran'));
  });

  it('an unhandled rejection is treated like an uncaught exception', async () => {
    const folder = project({
      'index.js': "module.exports = () => { Promise.reject(new Error('nobody caught me')); return 'ok'; };",
    });
    const proc = await runServing([folder]);
    await request(proc.url);
    assert.equal((await proc.exited).code, 1);
    assert.ok(proc.lines().some((l) => l.level === 60 && /nobody caught me/.test(l.err?.message)));
  });

  it('a shutdown() that throws is logged and the exit code is 1', async () => {
    const folder = project({ 'index.js': "module.exports = { handle: () => 1, shutdown() { throw new Error('could not flush'); } };" });
    const proc = await runServing([folder]);
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 1);
    assert.ok(proc.lines().some((l) => l.level === 50 && l.err?.message === 'could not flush'));
  });

  it('a second signal while draining exits at once with 3, the drain incomplete', async () => {
    const folder = project({
      'index.js': "module.exports = () => new Promise(() => console.log(JSON.stringify({ msg: 'hanging' })));",
    });
    const proc = await runServing([folder]);
    request(proc.url).catch(() => undefined);
    await proc.waitFor((l) => l.msg === 'hanging');
    proc.child.kill('SIGTERM');
    await proc.waitFor((l) => l.msg.startsWith('SIGTERM'));
    proc.child.kill('SIGINT');
    assert.equal((await proc.exited).code, 3);
  });

  it('the same signal twice at once (a Ctrl-C from the terminal and from npm) is one stop: requests in flight finish, exit code 0', async () => {
    const folder = project({
      'index.js':
        "module.exports = () => { console.log(JSON.stringify({ msg: 'working' })); return new Promise((r) => setTimeout(() => r({ done: true }), 500)); };",
    });
    const proc = await runServing([folder]);
    const answer = request(proc.url);
    await proc.waitFor((l) => l.msg === 'working');
    proc.child.kill('SIGINT');
    // Not at the same instant: two pending signals of one kind are delivered as one.
    await proc.waitFor((l) => l.msg.startsWith('SIGINT'));
    proc.child.kill('SIGINT');
    assert.deepEqual((await answer).json, { done: true });
    assert.equal((await proc.exited).code, 0);
  });

  it('a handler that throws never stops the process', async () => {
    const folder = project({ 'index.js': "module.exports = () => { throw 'plain string'; };" });
    const proc = await runServing([folder]);
    for (let i = 0; i < 3; i++) assert.equal((await request(proc.url)).status, 500);
    assert.equal(proc.child.exitCode, null);
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 0);
  });
});

describe('lifecycle through start()', () => {
  it('init runs before start() resolves; shutdown runs when the server closes', async (t) => {
    const events = [];
    const { url, close } = await serve(t, {
      init: async () => {
        await new Promise((r) => setTimeout(r, 20));
        events.push('init');
      },
      handle: () => 'ok',
      shutdown: () => events.push('shutdown'),
    });
    events.push('started');
    assert.equal((await request(url)).text, 'ok');
    await close();
    assert.deepEqual(events, ['init', 'started', 'shutdown']);
  });

  it("init gets the runtime's logger", async (t) => {
    const { log, close } = await serve(t, { init: ({ log: logger }) => logger.warn('from init'), handle: () => 1 });
    await close();
    const line = log.entries().find((e) => e.msg === 'from init');
    assert.equal(line.level, 40);
  });

  it('a throwing init rejects start()', async (t) => {
    await assert.rejects(
      serve(t, {
        init: () => {
          throw new Error('no init');
        },
        handle: () => 1,
      }),
      /no init/,
    );
  });

  it('a port in use rejects start()', async (t) => {
    const first = await serve(t, () => 1);
    await assert.rejects(
      serve(t, () => 1, { port: Number(new URL(first.url).port) }),
      /EADDRINUSE/,
    );
  });
});
