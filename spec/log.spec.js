'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const os = require('node:os');
const { createLogger, parseLogLevel } = require('../lib/log.js');
const { serve, request, sink } = require('./helpers');

describe('logger (pure)', () => {
  it('writes one JSON line per call with level, time, pid, hostname, msg', () => {
    const out = sink();
    const before = Date.now();
    createLogger('info', out).info('hello');
    assert.equal(out.lines.length, 1);
    assert.ok(out.lines[0].endsWith('}\n'));
    const [line] = out.entries();
    assert.equal(line.level, 30);
    assert.ok(line.time >= before && line.time <= Date.now());
    assert.equal(line.pid, process.pid);
    assert.equal(line.hostname, os.hostname());
    assert.equal(line.msg, 'hello');
  });

  it("uses pino's level numbers", () => {
    const out = sink();
    const log = createLogger('trace', out);
    for (const method of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) log[method](method);
    assert.deepEqual(out.entries().map((e) => [e.msg, e.level]), [['trace', 10], ['debug', 20], ['info', 30], ['warn', 40], ['error', 50], ['fatal', 60]]);
  });

  it('writes nothing below its level, and nothing at all when silent', () => {
    const out = sink();
    const warn = createLogger('warn', out);
    warn.info('no');
    warn.debug('no');
    warn.warn('yes');
    const silent = createLogger('silent', out);
    silent.fatal('no');
    assert.deepEqual(out.entries().map((e) => e.msg), ['yes']);
  });

  it('disabled methods are one shared no-op', () => {
    const log = createLogger('error', sink());
    assert.equal(log.debug, log.info);
    assert.equal(log.child(1).trace, log.warn);
  });

  it('merges an object message into the line', () => {
    const out = sink();
    createLogger('info', out).info({ order: 7, user: { id: 'u' } });
    const [line] = out.entries();
    assert.equal(line.order, 7);
    assert.deepEqual(line.user, { id: 'u' });
    assert.equal(line.level, 30);
  });

  it('serialises an Error as err with type, message and stack', () => {
    const out = sink();
    createLogger('info', out).error(new TypeError('broken'));
    const [line] = out.entries();
    assert.equal(line.msg, 'broken');
    assert.equal(line.err.type, 'TypeError');
    assert.equal(line.err.message, 'broken');
    assert.match(line.err.stack, /log\.spec\.js/);
  });

  it('a child carries reqId', () => {
    const out = sink();
    createLogger('info', out).child(12).info('in a request');
    assert.equal(out.entries()[0].reqId, 12);
  });

  it('never throws on values JSON cannot hold', () => {
    const out = sink();
    const circular = {};
    circular.self = circular;
    const log = createLogger('info', out);
    log.info(circular);
    log.info({ big: 10n });
    const [first, second] = out.entries();
    assert.equal(first.msg, '[unserializable object]');
    assert.equal(second.big, '10');
  });

  it('accepts only the known level names', () => {
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent', 'INFO']) assert.ok(parseLogLevel(level));
    assert.throws(() => parseLogLevel('verbose'), /unknown log level 'verbose'/);
  });
});

describe('logging in requests', () => {
  it("context.log lines carry the request's reqId; each request gets its own", async () => {
    const { url, log, close } = await serve((ctx) => {
      ctx.log.info(`handling ${ctx.query.n}`);
      return 'ok';
    });
    try {
      await request(url + '/?n=1');
      await request(url + '/?n=2');
      const lines = log.entries().filter((e) => e.msg.startsWith('handling'));
      assert.equal(lines.length, 2);
      assert.equal(typeof lines[0].reqId, 'number');
      assert.notEqual(lines[0].reqId, lines[1].reqId);
    } finally {
      await close();
    }
  });

  it('the runtime logs where it listens in the same format', async () => {
    const { url, log, close } = await serve(() => 'ok');
    await close();
    const listening = log.entries().find((e) => e.msg.startsWith('listening on'));
    assert.equal(listening.level, 30);
    assert.equal(listening.port, Number(new URL(url).port));
  });

  it('no access line at info; one per request at debug', async () => {
    const quiet = await serve(() => 'ok', { logLevel: 'info' });
    await request(quiet.url + '/a');
    await quiet.close();
    assert.equal(quiet.log.entries().filter((e) => e.msg === 'request completed').length, 0);

    const chatty = await serve(() => 'ok', { logLevel: 'debug' });
    await request(chatty.url + '/a?b=1');
    await chatty.close();
    const access = chatty.log.entries().filter((e) => e.msg === 'request completed');
    assert.equal(access.length, 1);
    assert.equal(access[0].level, 20);
    assert.equal(access[0].statusCode, 200);
    assert.equal(access[0].url, '/a?b=1');
  });

  it("the module's logLevel applies when no option or variable sets one", async () => {
    const { url, log, close } = await serve({
      logLevel: 'warn',
      handle(ctx) {
        ctx.log.info('hidden');
        ctx.log.warn('shown');
        return 'ok';
      },
    });
    await request(url);
    await close();
    const messages = log.entries().map((e) => e.msg);
    assert.ok(messages.includes('shown'));
    assert.ok(!messages.includes('hidden'));
  });

  it('an unknown log level stops the start', async () => {
    await assert.rejects(serve(() => 'ok', { logLevel: 'loud' }), /unknown log level 'loud'/);
  });
});
