'use strict';
// Logging in requests: context.log lines carry their request's reqId, the runtime's own lines are
// in the same format, the access line, the module's level, and what a function logs cannot stall
// or flood the server.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { serve, request } = require('./helpers');

describe('logging in requests', () => {
  it("context.log lines carry the request's reqId; each request gets its own", async (t) => {
    const { url, log } = await serve(t, (ctx) => {
      ctx.log.info(`handling ${ctx.query.n}`);
      return 'ok';
    });
    await request(url + '/?n=1');
    await request(url + '/?n=2');
    const lines = log.entries().filter((e) => e.msg.startsWith('handling'));
    assert.equal(lines.length, 2);
    assert.equal(typeof lines[0].reqId, 'number');
    assert.notEqual(lines[0].reqId, lines[1].reqId);
  });

  it("context.log.info('query', context.query) answers 200 and logs the line", async (t) => {
    const { url, log } = await serve(t, (context) => {
      context.log.info('query', context.query);
      return 'ok';
    });
    const res = await request(url + '/?a=1');
    assert.equal(res.status, 200);
    const line = log.entries().find((e) => e.msg === 'query');
    assert.ok(line, log.text());
    assert.equal(typeof line.reqId, 'number');
  });

  it('the runtime logs where it listens in the same format', async (t) => {
    const { url, log, close } = await serve(t, () => 'ok');
    await close();
    const listening = log.entries().find((e) => e.msg.startsWith('listening on'));
    assert.equal(listening.level, 30);
    assert.equal(listening.port, Number(new URL(url).port));
  });

  it('no access line at info; one per request at debug', async (t) => {
    const quiet = await serve(t, () => 'ok', { logLevel: 'info' });
    await request(quiet.url + '/a');
    await quiet.close();
    assert.equal(quiet.log.entries().filter((e) => e.msg === 'request completed').length, 0);

    const chatty = await serve(t, () => 'ok', { logLevel: 'debug' });
    await request(chatty.url + '/a?b=1&access_token=s3cr3t&flag');
    await chatty.close();
    const access = chatty.log.entries().filter((e) => e.msg === 'request completed');
    assert.equal(access.length, 1);
    assert.equal(access[0].level, 20);
    assert.equal(access[0].statusCode, 200);
    assert.equal(access[0].url, '/a?b=…&access_token=…&flag', 'query names only: values often carry tokens');
    assert.ok(!chatty.log.text().includes('s3cr3t'));
  });

  it("an absolute-form target's credentials are logged nowhere: access line, refusals, errors", async (t) => {
    const { exchange } = require('./raw');
    for (const compat of [false, true]) {
      const server = await serve(
        t,
        (context) => {
          if (context.query.fail !== undefined) throw new Error('failed');
          return 'ok';
        },
        { logLevel: 'trace', accessLog: true, ...(compat ? { compat: 'faas-js-runtime' } : {}) },
      );
      const sent = [
        'GET http://user:pa55w0rd@h.test/?a=s3cr3t HTTP/1.1\r\nHost: h.test\r\n\r\n',
        'GET http://user:pa55w0rd@h.test/?fail=1 HTTP/1.1\r\nHost: h.test\r\n\r\n',
        'GET http://user:pa55w0rd@h.test/nowhere/x?b=1 HTTP/1.1\r\nHost: h.test\r\n\r\n',
        'DELETE http://pa55w0rd@h.test/ HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n',
      ].join('');
      await exchange(server.port, sent, { wait: 4000 });
      await server.close();
      const text = server.log.text();
      assert.match(text, /"url":"http:\/\/…@h\.test\/\?a=…"/, text);
      assert.ok(!text.includes('pa55w0rd'), text);
      assert.ok(!text.includes('s3cr3t'), text);
    }
  });

  it("credentials are never written: a request's Authorization and Cookie, however the function throws or logs them", async (t) => {
    const TOKEN = 'Bearer tok-Kx81-secret';
    const COOKIE = 'session=ck-Qw72-secret';
    const PASSWORD = 'pw-Zr55-secret';
    const server = await serve(
      t,
      (context, body) => {
        const { mode } = context.query;
        if (mode === 'headers') throw context.headers;
        if (mode === 'error') throw Object.assign(new Error('denied'), { statusCode: 401, headers: context.headers });
        if (mode === 'body') throw body;
        if (mode === 'string') throw context.headers.authorization;
        if (mode === 'client') throw Object.assign(new Error('upstream 401'), { config: { headers: { Authorization: TOKEN, 'X-Api-Key': PASSWORD } } });
        if (mode === 'plain') throw { request: { headers: { cookie: COOKIE, 'proxy-authorization': TOKEN } } };
        context.log.info({ headers: context.headers, nested: [{ 'Set-Cookie': [COOKIE] }] }, 'logged');
        context.log.child({ authorization: TOKEN }).info('child');
        return 'ok';
      },
      { logLevel: 'trace', accessLog: true },
    );
    const headers = { authorization: TOKEN, cookie: COOKIE };
    for (const mode of ['headers', 'error', 'body', 'string', 'client', 'plain', 'log']) {
      const res = await request(`${server.url}/?mode=${mode}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ password: PASSWORD }),
      });
      assert.equal(res.status, mode === 'log' ? 200 : 500, mode);
      for (const secret of ['tok-Kx81', 'ck-Qw72', 'pw-Zr55']) assert.ok(!res.text.includes(secret), `${mode}: ${res.text}`);
    }
    await server.close();
    const text = server.log.text();
    for (const secret of ['tok-Kx81', 'ck-Qw72', 'pw-Zr55']) assert.ok(!text.includes(secret), text);
    // Described, not hidden: what was thrown is still recognisable.
    const thrown = server.log
      .entries()
      .map((e) => e.thrown)
      .filter(Boolean);
    assert.ok(
      thrown.some((d) => /^an object from the request, keys .*"authorization"/.test(d)),
      thrown.join('\n'),
    );
    assert.match(text, /"authorization":"\[Redacted\]"/);
    assert.equal(server.log.entries().filter((e) => e.msg === 'request failed').length, 6);
  });

  it("the request-scoped log's methods work detached, and write with the invocation's reqId", async (t) => {
    const { log } = require('..');
    const { info, child, isLevelEnabled } = log;
    const server = await serve(
      t,
      () => {
        info('detached');
        ['forEach'].forEach(log.warn);
        child({ part: 'kid' }).info('from a detached child');
        return String(isLevelEnabled('info'));
      },
      { logLevel: 'info' },
    );
    const res = await request(server.url);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.text, 'true');
    await server.close();
    const entries = server.log.entries();
    assert.equal(entries.find((e) => e.msg === 'detached')?.reqId, 1);
    assert.equal(entries.find((e) => e.level === 40)?.msg, 'forEach');
    assert.deepEqual((({ reqId, part }) => ({ reqId, part }))(entries.find((e) => e.msg === 'from a detached child')), { reqId: 1, part: 'kid' });
  });

  it("a logged object cannot set funcrun's outlivedRequest; a URL's fragment is never logged; a cut never splits a surrogate pair", async (t) => {
    const server = await serve(
      t,
      (context, body) => {
        context.log.info(body, 'order received');
        context.log.info({ note: `${'x'.repeat(256 * 1024 - 1)}😀 tail` }, 'long');
        if (context.query.fail) throw new Error('failed');
        return 'ok';
      },
      { logLevel: 'debug', accessLog: true },
    );
    const { exchange } = require('./raw');
    const body = JSON.stringify({ outlivedRequest: 41, cut: 'a line of 9 characters: its fields were left out', order: 7 });
    const sent =
      `POST /cb?fail=1#access_token=FRAG-s3cret HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
      'GET /nowhere#token=FRAG-s3cret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
    await exchange(server.port, sent, { wait: 3000 });
    await server.close();
    const text = server.log.text();
    assert.ok(!text.includes('FRAG-s3cret'), text.slice(0, 2000));
    const entries = server.log.entries();
    const received = entries.find((e) => e.msg === 'order received');
    assert.deepEqual([received.order, received.outlivedRequest], [7, undefined]);
    assert.ok(
      entries.some((e) => typeof e.url === 'string' && e.url.endsWith('#…')),
      'the access line marks the fragment left out',
    );
    const long = entries.find((e) => e.msg === 'long');
    assert.match(long.note, /^x+…\[\d+ more characters\]$/, 'cut before the emoji, not inside it');
    assert.doesNotMatch(JSON.stringify(long.note), /\\ud83d/);
  });

  it('a thrown object that shares references 25 levels deep is described quickly, not expanded', async (t) => {
    const server = await serve(
      t,
      () => {
        let o = { leaf: 1 };
        for (let i = 0; i < 25; i++) o = { a: o, b: o };
        throw o;
      },
      { logLevel: 'error' },
    );
    const began = performance.now();
    const res = await request(server.url);
    assert.equal(res.status, 500);
    assert.ok(performance.now() - began < 2000, `answered after ${Math.round(performance.now() - began)} ms`);
    await server.close();
    assert.equal(server.log.entries().filter((e) => e.msg === 'request failed').length, 1);
  });

  it('an answer cut short has its access line too: request aborted, with a status only when one was sent', async (t) => {
    const never = new Promise(() => {});
    const server = await serve(
      t,
      {
        fetch(request) {
          const path = new URL(request.url).pathname;
          // No answer ever: only the client leaving ends it.
          if (path === '/never') return never;
          let sent = false;
          const body = new ReadableStream({
            pull(controller) {
              if (sent && path === '/fails') throw new Error('the upstream went away');
              if (sent) return never;
              sent = true;
              controller.enqueue(new TextEncoder().encode('data: 1\n\n'));
            },
          });
          return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
        },
      },
      { accessLog: true },
    );
    const lines = (msg) => server.log.entries().filter((e) => e.msg === msg);
    const until = async (test) => {
      for (let waited = 0; waited < 4000 && !test(); waited += 20) await new Promise((r) => setTimeout(r, 20));
    };
    // The client leaves a stream that has started, and one whose answer never came.
    for (const path of ['/stream', '/never']) {
      const socket = net.connect(server.port, '127.0.0.1');
      socket.on('error', () => {});
      let received = '';
      socket.on('data', (chunk) => (received += chunk));
      socket.write(`GET ${path}?token=s3cr3t HTTP/1.1\r\nHost: x\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 100));
      if (path === '/stream') assert.match(received, /data: 1/);
      socket.destroy();
    }
    // A stream that fails after its head: funcrun ends the connection.
    const failing = net.connect(server.port, '127.0.0.1');
    failing.on('error', () => {});
    failing.write('GET /fails HTTP/1.1\r\nHost: x\r\n\r\n');
    t.after(() => failing.destroy());
    await until(() => lines('request aborted').length === 3);
    const aborted = lines('request aborted');
    assert.deepEqual(aborted.map((e) => [e.url, e.statusCode, e.level]).sort(), [
      ['/fails', 200, 30],
      ['/never?token=…', undefined, 30],
      ['/stream?token=…', 200, 30],
    ]);
    for (const line of aborted) assert.equal(typeof line.reqId, 'number');
    assert.equal(lines('request completed').length, 0, 'none of them completed');
    assert.ok(!server.log.text().includes('s3cr3t'));
  });

  it("the module's logLevel applies when no option or variable sets one", async (t) => {
    const { url, log, close } = await serve(t, {
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

  it('an unknown log level stops the start', async (t) => {
    await assert.rejects(
      serve(t, () => 'ok', { logLevel: 'loud' }),
      /unknown log level 'loud'/,
    );
  });

  it('logging a structure that shares references 26 levels deep ends quickly and still writes a line', async (t) => {
    const server = await serve(t, (ctx) => {
      let o = { x: 1 };
      for (let i = 0; i < 26; i++) o = { a: o, b: o };
      ctx.log.info(o, 'shared');
      return 'logged';
    });
    const started = performance.now();
    assert.equal((await request(server.url)).text, 'logged');
    assert.ok(performance.now() - started < 3000);
    assert.ok(server.log.entries().some((e) => e.msg === 'shared'));
  });

  it('a log line writes at most 50,000 values, however they are spread', async (t) => {
    const server = await serve(t, (ctx, body) => (ctx.log.info(body), 'ok'), { bodyLimit: 4_000_000 });
    const body = JSON.stringify(Array.from({ length: 400_000 }, () => ({ i: 0 })));
    const started = performance.now();
    assert.equal((await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text, 'ok');
    assert.ok(performance.now() - started < 3000);
    const line = server.log.lines.find((l) => l.includes('[Truncated]'));
    assert.ok(line, 'the line was cut');
    assert.ok(line.length < 1_500_000, `${line.length} characters`);
  });
});
