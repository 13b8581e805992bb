'use strict';
// Stopping and crashing without losing answers: pipelined requests during a drain, connections
// that go idle while draining, a shutdown() or init() that never settles, an uncaught exception
// with requests in flight, and the cap on open connections.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { serve, project, run, runServing, request, freePort } = require('./helpers');
const { exchange, statuses } = require('./raw');
const { stop } = require('../lib/index.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('draining', () => {
  it('a request pipelined behind one in flight when the drain begins is run and its answer sent', async (t) => {
    let ran = 0;
    let slowBegan;
    const began = new Promise((resolve) => (slowBegan = resolve));
    const server = await serve(t, async (ctx) => {
      if (ctx.path === '/slow') {
        slowBegan();
        await sleep(300);
      } else ran++;
      return ctx.path;
    });
    const port = server.server.address().port;
    const answer = exchange(port, 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n', { writes: [[100, 'GET /second HTTP/1.1\r\nHost: x\r\n\r\n']] });
    // The drain begins while /slow is in flight (on a loaded machine, not before it has arrived).
    await began;
    const stopped = stop(server.server, 5000);
    const { text, timedOut } = await answer;
    await stopped;
    assert.equal(timedOut, false, 'the connection was closed after the last answer');
    assert.deepEqual(statuses(text), [200, 200], text);
    assert.equal(ran, 1);
    assert.match(text, /\/second$/);
    // The first answer must not close the connection: the second is still to come.
    assert.doesNotMatch(text.slice(0, text.indexOf('/slow')), /connection: close/i);
    // The second, made while the first was still to be sent, is the last: it says so.
    assert.match(text.slice(text.indexOf('/slow')), /connection: close/i);
  });

  it('requests pipelined before the drain began are all answered, then the connection closes', async (t) => {
    let ran = 0;
    const server = await serve(t, async (ctx) => {
      await sleep(ctx.path === '/slow' ? 300 : 10);
      ran++;
      return ctx.path;
    });
    const port = server.server.address().port;
    const request = (path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const answer = exchange(port, request('/slow') + request('/b') + request('/c'));
    await sleep(50);
    await stop(server.server, 5000);
    const { text, timedOut } = await answer;
    assert.equal(timedOut, false);
    assert.deepEqual(statuses(text), [200, 200, 200]);
    assert.equal(ran, 3);
  });

  it('an answer made before the drain began, waiting behind one in flight, is the last: it says Connection: close', async (t) => {
    let slowBegan;
    const began = new Promise((resolve) => (slowBegan = resolve));
    const server = await serve(t, async (ctx) => {
      if (ctx.path === '/slow') {
        slowBegan();
        await sleep(300);
      }
      return ctx.path;
    });
    const port = server.server.address().port;
    const answer = exchange(port, 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /quick HTTP/1.1\r\nHost: x\r\n\r\n');
    await began;
    // /quick is answered at once, its answer queued behind /slow's, before the drain begins.
    await sleep(50);
    const stopped = stop(server.server, 5000);
    const { text, timedOut } = await answer;
    await stopped;
    assert.equal(timedOut, false);
    assert.deepEqual(statuses(text), [200, 200], text);
    const [first, last] = [text.slice(0, text.indexOf('/slow')), text.slice(text.indexOf('/slow'))];
    assert.doesNotMatch(first, /connection: close/i);
    assert.match(last, /\r\nconnection: close\r\n/i);
    assert.doesNotMatch(last, /keep-alive/i);
    assert.ok(text.endsWith('/quick'), 'the last answer arrives whole');
  });

  it("answers queued out of order before the drain: the latest request's answer is the last, and says Connection: close", async (t) => {
    const server = await serve(t, async (ctx) => {
      if (ctx.path === '/slow') await sleep(400);
      if (ctx.path === '/mid') await sleep(100);
      return ctx.path;
    });
    const port = server.server.address().port;
    // /quick (the latest) is answered first, then /mid: both queued behind /slow when the drain begins.
    const answer = exchange(port, ['/slow', '/mid', '/quick'].map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
    await sleep(250);
    const stopped = stop(server.server, 5000);
    const { text, timedOut } = await answer;
    await stopped;
    assert.equal(timedOut, false);
    assert.deepEqual(statuses(text), [200, 200, 200], text);
    const last = text.slice(text.indexOf('/mid'));
    assert.match(last, /\r\nconnection: close\r\n/i, last);
    assert.doesNotMatch(last, /keep-alive/i);
    assert.doesNotMatch(text.slice(0, text.indexOf('/mid')), /connection: close/i);
    assert.ok(text.endsWith('/quick'), 'the last answer arrives whole');
  });

  it("while draining, the runtime's own answers (a probe, a preflight, metrics) close the connection they are the last on", async (t) => {
    let began = 0;
    let allBegan;
    const slowOnes = new Promise((resolve) => (allBegan = resolve));
    const server = await serve(t, {
      cors: () => ['https://app.example.com'],
      handle: async () => {
        if (++began === 3) allBegan();
        await sleep(300);
        return 'slow';
      },
    });
    const port = server.server.address().port;
    const behind = {
      liveness: 'GET /health/liveness HTTP/1.1\r\nHost: x\r\n\r\n',
      preflight: 'OPTIONS / HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example.com\r\nAccess-Control-Request-Method: POST\r\n\r\n',
      metrics: 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n',
    };
    // On each connection a request in flight when the drain begins; then the runtime's request behind it.
    const connections = Object.keys(behind).map((what) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      const chunks = [];
      socket.on('data', (chunk) => chunks.push(chunk));
      const closed = new Promise((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1'))));
      return { what, socket, closed };
    });
    await slowOnes;
    const stopped = stop(server.server, 5000);
    for (const { what, socket } of connections) socket.write(behind[what]);
    for (const { what, closed } of connections) {
      const text = await closed;
      assert.equal(statuses(text).length, 2, `${what}: ${text}`);
      const last = text.slice(text.indexOf('slow'));
      assert.match(last, /\r\nconnection: close\r\n/i, `${what}: ${last}`);
    }
    await stopped;
  });

  it("an answer ended but still in the socket's buffer when the drain begins reaches a slow reader whole", async (t) => {
    const { server, socket, size } = await slowReader(t);
    // Read nothing until the drain has begun and swept a few times.
    const stopped = stop(server.server, 5000);
    await sleep(300);
    let received = 0;
    socket.on('data', (chunk) => (received += chunk.length));
    socket.resume();
    await new Promise((resolve) => socket.once('close', resolve));
    assert.ok(received > size, `${received} bytes of a ${size}-byte body and its head`);
    assert.deepEqual(await stopped, { complete: true, cut: 0, unfinished: 0 });
  });

  it('an answer its client has not read whole by the grace deadline is cut, and the drain says so', async (t) => {
    const { server } = await slowReader(t);
    assert.deepEqual(await stop(server.server, 300), { complete: false, cut: 1, unfinished: 0 });
    assert.ok(server.log.entries().some((e) => e.level === 50 && /answers cut at the end of the grace period/.test(e.msg)));
  });

  it('a response streaming when the drain began does not hold the process once it ends', async (t) => {
    const { Readable } = require('node:stream');
    const server = await serve(t, () =>
      Readable.from(
        (async function* () {
          for (let i = 0; i < 4; i++) {
            yield `${i}`;
            await sleep(50);
          }
        })(),
      ),
    );
    const agent = new (require('node:http').Agent)({ keepAlive: true });
    const got = new Promise((resolve, reject) => {
      require('node:http')
        .get(`${server.url}/`, { agent }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
    await sleep(30);
    const started = performance.now();
    await stop(server.server, 20_000);
    const took = performance.now() - started;
    assert.equal(await got, '0123');
    assert.ok(took < 2000, `stop() took ${Math.round(took)} ms; the grace period is 20 s`);
    agent.destroy();
  });
});

describe('lifecycle bounds', () => {
  it('a shutdown() that never settles: logged, exit code 1, within the grace period', async () => {
    const folder = project({ 'index.js': 'module.exports = { handle: () => "ok", shutdown: () => new Promise(() => {}) };' });
    const proc = await runServing([folder, '--grace-period', '500ms']);
    const started = performance.now();
    proc.child.kill('SIGTERM');
    const { code } = await proc.exited;
    assert.equal(code, 1);
    assert.ok(performance.now() - started < 5000);
    assert.ok(
      proc.lines().some((l) => l.level >= 50 && /shutdown\(\) did not finish within 500 ms/.test(l.msg)),
      proc.out.stdout,
    );
  });

  it('an init() that never settles and holds nothing: logged, exit code 1', async () => {
    const folder = project({ 'index.js': 'module.exports = { init: () => new Promise(() => {}), handle: () => "ok" };' });
    const proc = run([folder, '--port', String(await freePort())]);
    const { code } = await proc.exited;
    assert.equal(code, 1);
    const line = JSON.parse(proc.out.stderr.trim().split('\n').pop());
    assert.equal(line.level, 60);
    assert.match(line.msg, /never finished starting/);
  });

  it("an uncaught exception in a function's timer: requests in flight get the grace period, then exit 1", async () => {
    const folder = project({
      'index.js': `module.exports = async (ctx) => {
        if (ctx.path === '/boom') { setTimeout(() => { throw new Error('stray timer'); }, 10); return 'boom'; }
        await new Promise((r) => setTimeout(r, 2500));
        return 'slow done';
      };`,
    });
    const proc = await runServing([folder, '--grace-period', '10s']);
    const slow = request(proc.url + '/slow');
    await sleep(100);
    assert.equal((await request(proc.url + '/boom')).text, 'boom');
    const answer = await slow;
    assert.equal(answer.status, 200);
    assert.equal(answer.text, 'slow done');
    assert.equal((await proc.exited).code, 1);
    assert.ok(proc.lines().some((l) => l.level === 60 && l.err?.message === 'stray timer'));
  });
});

describe('the connection cap', () => {
  it('beyond maxConnections, new connections are refused; those within it are served', async (t) => {
    // Before serve() registers the server's close, so the clients go first.
    const sockets = [];
    t.after(() => sockets.forEach((socket) => socket.destroy()));
    const server = await serve(t, () => 'ok', { maxConnections: 5 });
    const port = server.server.address().port;
    for (let i = 0; i < 20; i++) {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.closedByServer = false;
      socket.on('close', () => (socket.closedByServer = true));
      sockets.push(socket);
      await new Promise((resolve) => socket.once('connect', resolve).once('close', resolve));
    }
    await sleep(200);
    const open = sockets.filter((s) => !s.closedByServer);
    assert.equal(open.length, 5);
    for (const s of sockets) s.destroy();
    await sleep(100);
    assert.equal((await request(server.url)).text, 'ok', 'served again once connections close');
  });

  it('with the default cap, 1,024 clients that never close after an error answer do not lock out the liveness probe', { timeout: 30_000 }, async (t) => {
    const server = await serve(t, () => 'ok');
    const port = server.server.address().port;
    const shapes = [
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nx-big: ' + 'a'.repeat(20_000) + '\r\n\r\n',
    ];
    const sockets = [];
    t.after(() => sockets.forEach((socket) => socket.destroy()));
    const answered = [];
    for (let i = 0; i < 1024; i++) {
      const { socket, answer } = halfOpen(port, shapes[i % shapes.length]);
      sockets.push(socket);
      answered.push(answer);
    }
    const statuses = await Promise.all(answered);
    assert.deepEqual([...new Set(statuses)].sort(), [400, 405, 431]);
    // Each is closed a moment after its answer, whatever its client does.
    await sleep(1500);
    const probe = await request(`${server.url}/health/liveness`);
    assert.equal(probe.status, 200);
    assert.ok(
      sockets.every((socket) => socket.destroyed || socket.readableEnded),
      'sockets left open',
    );
  });

  it('FUNC_MAX_CONNECTIONS must be a whole number: another value is bad use, exit code 2', async () => {
    const folder = project({ 'index.js': 'module.exports = () => "ok";' });
    const proc = run([folder], { env: { FUNC_MAX_CONNECTIONS: 'lots' } });
    assert.equal((await proc.exited).code, 2);
    assert.match(proc.out.stderr, /FUNC_MAX_CONNECTIONS/);
  });
});

describe('SIGTERM with sockets the clients never close', () => {
  it('half-open, silent and half-sent connections: the drain ends, shutdown() runs, within the grace period', { timeout: 30_000 }, async (t) => {
    const folder = project({ 'index.js': "module.exports = { handle: () => 'ok', shutdown() { console.log(JSON.stringify({ msg: 'shutdown ran' })); } };" });
    const proc = await runServing([folder, '--grace-period', '2s']);
    t.after(() => proc.child.kill('SIGKILL'));
    const sockets = [];
    t.after(() => sockets.forEach((socket) => socket.destroy()));
    const answers = [];
    for (const bytes of ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n']) {
      for (let i = 0; i < 3; i++) {
        const { socket, answer } = halfOpen(proc.port, bytes);
        sockets.push(socket);
        answers.push(answer);
      }
    }
    await Promise.all(answers);
    // One that sends nothing, one that stops halfway through its headers, one idle after an answer.
    for (const bytes of ['', 'GET / HTTP/1.1\r\nHost: x\r\n']) sockets.push(halfOpen(proc.port, bytes).socket);
    const idle = halfOpen(proc.port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    sockets.push(idle.socket);
    assert.equal(await idle.answer, 200);
    await sleep(100);
    const started = performance.now();
    proc.child.kill('SIGTERM');
    const { code } = await Promise.race([proc.exited, sleep(6000).then(() => ({ code: 'still running 6 s after SIGTERM' }))]);
    assert.equal(code, 0);
    assert.ok(performance.now() - started < 3500, `exited ${Math.round(performance.now() - started)} ms after SIGTERM; the grace period is 2 s`);
    assert.ok(proc.lines().some((line) => line.msg === 'shutdown ran'));
  });
});

describe('probes and start-up that misbehave', () => {
  it('a readiness check that never settles is a 503 after probeTimeout', async (t) => {
    const server = await serve(t, { handle: () => 'ok', readiness: () => new Promise(() => {}) }, { probeTimeout: 200 });
    const started = performance.now();
    const answer = await request(server.url + '/health/readiness');
    assert.equal(answer.status, 503);
    assert.ok(performance.now() - started < 2000);
    assert.ok(server.log.entries().some((e) => e.level === 40 && /did not answer in time/.test(e.err?.message ?? '')));
  });

  it('an init() that throws a value nothing can read: one fatal line, exit code 1', async () => {
    const folder = project({
      'index.js':
        "module.exports = { init() { throw new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('trap'); } }); }, handle: () => 'never' };",
    });
    const proc = run([folder, '--port', String(await freePort())]);
    assert.equal((await proc.exited).code, 1);
    const lines = proc.out.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, 1);
    assert.equal(lines[0].level, 60);
    assert.doesNotMatch(lines[0].msg, /uncaught/);
  });
});

/**
 * A client that sends `bytes` and never closes its side (allowHalfOpen): resolves `answer` with the
 * status of the first answer it gets, or 0 if the connection closes without one.
 */
function halfOpen(port, bytes) {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => {});
  let text = '';
  const answer = new Promise((resolve) => {
    const onData = (chunk) => {
      text += chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3}) [^]*\r\n\r\n/.exec(text);
      if (status !== null) {
        socket.off('data', onData);
        // Keep reading (and dropping): a client that reads nothing would be another shape.
        socket.resume();
        resolve(Number(status[1]));
      }
    };
    socket.on('data', onData);
    socket.once('close', () => resolve(0));
  });
  socket.once('connect', () => bytes !== '' && socket.write(bytes));
  return { socket, answer };
}

/** A server answering 16 MiB, and a client that has asked for it and reads nothing (until resumed). */
async function slowReader(t) {
  const size = 16 * 1024 * 1024;
  const server = await serve(t, () => ({ body: Buffer.alloc(size, 'a'), headers: { 'content-type': 'application/octet-stream' } }));
  const socket = net.connect(server.server.address().port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.on('error', () => {});
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  socket.pause();
  // The answer is ended and waits in the socket's buffer.
  await sleep(200);
  return { server, socket, size };
}
