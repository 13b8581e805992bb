'use strict';
// Streams a function returns: piped with their errors handled, never sent in object mode, closed
// when funcrun does not send them (HEAD, a timeout, a client gone, an answer that cannot carry
// one), never left to crash the process.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Readable } = require('node:stream');
const { serve, startServer, request } = require('./helpers');
const { exchange, statuses } = require('./raw');

const openFds = () => fs.readdirSync('/proc/self/fd').length;

describe('returned streams', () => {
  let server;
  let make;
  let destroyed = 0;
  before(async () => {
    server = await startServer(() => make());
  });
  after(() => server.close());

  it('an object-mode stream (rows) is a 500 before any byte, logged with the reqId, counted, and the server lives on', async () => {
    make = () => Readable.from([{ id: 1 }, { id: 2 }]);
    const answer = await request(server.url);
    assert.equal(answer.status, 500);
    assert.equal(answer.json.message, 'Internal Server Error');
    const line = server.log.entries().find((e) => e.level === 50 && /not bytes or a string/.test(e.err?.message ?? ''));
    assert.ok(line, 'logged');
    assert.equal(typeof line.reqId, 'number');
    make = () => Readable.from([Buffer.from('fine')]);
    assert.equal((await request(server.url)).text, 'fine');
    const metrics = await request(server.url + '/metrics');
    assert.match(metrics.text, /faas_errors\{[^}]*\} [1-9]/);
  });

  it('a stream failing after its first bytes cuts the connection; the server lives on', async () => {
    make = () =>
      Readable.from(
        (async function* () {
          yield Buffer.from('part');
          throw new Error('disk on fire');
        })(),
      );
    await assert.rejects(request(server.url));
    make = () => Readable.from(['ok']);
    assert.equal((await request(server.url)).text, 'ok');
  });

  it('a stream failing before any byte is a 500', async () => {
    make = () =>
      new Readable({
        read() {
          this.destroy(new Error('no such file'));
        },
      });
    assert.equal((await request(server.url)).status, 500);
  });

  it('an already destroyed stream is a 500, not a request that hangs', async () => {
    make = () => {
      const stream = new Readable({ read() {} });
      stream.destroy();
      return stream;
    };
    const answer = await request(server.url, { signal: AbortSignal.timeout(3000) });
    assert.equal(answer.status, 500);
  });

  it('strings in a stream are sent as UTF-8', async () => {
    make = () => Readable.from(['caf', 'é']);
    assert.equal((await request(server.url)).text, 'café');
  });

  it('HEAD gets the headers and no body; the stream is destroyed', async () => {
    let stream;
    make = () =>
      (stream = new Readable({
        read() {
          this.push('x');
        },
      }));
    const answer = await request(server.url, { method: 'HEAD' });
    assert.equal(answer.status, 200);
    assert.equal(answer.text, '');
    assert.ok(stream.destroyed);
  });

  it('streams of aborted downloads are destroyed: 100 aborts leave no open file descriptors', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-stream-')), 'big');
    fs.writeFileSync(file, Buffer.alloc(8 * 1024 * 1024, 1));
    make = () => {
      const stream = fs.createReadStream(file, { highWaterMark: 16 * 1024 });
      stream.once('close', () => destroyed++);
      return stream;
    };
    const before = openFds();
    for (let i = 0; i < 100; i++) {
      const controller = new AbortController();
      const res = await fetch(server.url, { signal: controller.signal });
      const reader = res.body.getReader();
      await reader.read();
      controller.abort();
      await reader.closed.catch(() => {});
    }
    for (let i = 0; i < 100 && destroyed < 100; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(destroyed, 100);
    assert.ok(openFds() - before < 10, `open file descriptors grew by ${openFds() - before}`);
  });

  it('{ body: context.req.socket } is a 500; the pipelined request behind it is answered', async (t) => {
    const own = await serve(t, (ctx) => (ctx.path === '/sock' ? { body: ctx.req.socket } : 'next'));
    const { text } = await exchange(
      own.server.address().port,
      'GET /sock HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
    );
    assert.deepEqual(statuses(text), [500, 200]);
  });
});

describe('streams funcrun does not send are closed, never left to crash the process', () => {
  const fsStream = (file) => fs.createReadStream(file);
  const missing = path.join(os.tmpdir(), 'funcrun-no-such-file');
  const crashes = [];
  const onCrash = (err) => crashes.push(err);

  async function settle(check) {
    for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  }

  it('HEAD of a function returning a stream of a missing file: 200 headers, no crash, the server lives on', async (t) => {
    process.on('uncaughtException', onCrash);
    const server = await serve(t, () => fsStream(missing));
    t.after(() => process.off('uncaughtException', onCrash));
    const head = await request(server.url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(crashes, []);
    assert.equal((await request(server.url)).status, 500);
  });

  for (const [name, options, fn, init] of [
    ['the late result after a 504 timeout', { timeout: 100 }, (track) => async () => (await new Promise((r) => setTimeout(r, 250)), track()), {}],
    [
      "a batch handler's value that is not an event",
      {},
      (track) => () => track(),
      {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify([{ specversion: '1.0', id: '1', source: '/s', type: 't' }]),
      },
    ],
    ['the body of a structured return with an invalid statusCode', {}, (track) => () => ({ statusCode: 'teapot', body: track() }), {}],
  ]) {
    it(`${name}: the stream is destroyed`, async (t) => {
      let opened = 0;
      let closed = 0;
      const track = () => {
        opened++;
        const stream = new Readable({ read() {} });
        stream.once('close', () => closed++);
        return stream;
      };
      process.on('uncaughtException', onCrash);
      const server = await serve(t, fn(track), options);
      t.after(() => process.off('uncaughtException', onCrash));
      for (let i = 0; i < 10; i++) await request(server.url, init);
      await settle(() => closed === opened && opened === 10);
      assert.equal(opened, 10);
      assert.equal(closed, opened);
      assert.deepEqual(crashes, []);
    });
  }

  it('a stream returned after the client went away is destroyed', async (t) => {
    let closed = 0;
    const server = await serve(t, async () => {
      await new Promise((r) => setTimeout(r, 150));
      const stream = new Readable({ read() {} });
      stream.once('close', () => closed++);
      return stream;
    });
    for (let i = 0; i < 5; i++) await fetch(server.url, { signal: AbortSignal.timeout(50) }).catch(() => {});
    await settle(() => closed === 5);
    assert.equal(closed, 5);
  });

  it('a named function returning a stream streams it over HTTP; answering an event with one is a 500 and the stream is closed', async (t) => {
    let closed = 0;
    const stream = () => {
      const s = Readable.from(['file contents']);
      s.once('close', () => closed++);
      return s;
    };
    const server = await serve(t, { functions: { file: () => stream() } });
    const answer = await request(server.url + '/file');
    assert.equal(answer.status, 200);
    assert.equal(answer.text, 'file contents');
    const event = await request(server.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 'file', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(event.status, 500);
    assert.doesNotMatch(event.text, /_readableState|path/);
    for (let i = 0; i < 50 && closed < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, 2);
  });
});
