'use strict';
// HTTP framing: funcrun owns Content-Length, Transfer-Encoding and Connection whatever a function
// returns, and answers the framing a client chooses (absolute-form targets, missing Host, Expect,
// pipelining, garbage, CONNECT, Upgrade, transfer codings, broken bodies) with a JSON answer
// and a closed connection where it must.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Readable } = require('node:stream');
const fs = require('node:fs');
const net = require('node:net');
const { serve, startServer, project, runServing } = require('./helpers');
const { exchange, firstResponse, statuses } = require('./raw');
const { streamed } = require('../lib/index.js');

describe('funcrun owns the framing', () => {
  let server;
  let port;
  let headers;
  before(async () => {
    server = await startServer(() => ({ statusCode: 200, headers, body: 'hello world' }));
    port = server.server.address().port;
  });
  after(() => server.close());

  it("a function's transfer-encoding, content-length and connection are left out; the next request on the connection is served", async () => {
    headers = {
      'transfer-encoding': 'chunked',
      'content-length': '5',
      connection: 'upgrade',
      'keep-alive': 'timeout=1',
      upgrade: 'websocket',
      'x-kept': 'yes',
    };
    const one = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
    const { text } = await exchange(port, one + one.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'));
    assert.deepEqual(statuses(text), [200, 200]);
    const first = firstResponse(text);
    assert.equal(first.headers['content-length'], '11');
    assert.equal(first.headers['transfer-encoding'], undefined);
    assert.equal(first.headers.upgrade, undefined);
    assert.equal(first.headers['x-kept'], 'yes');
    assert.ok(first.body.startsWith('hello worldHTTP/1.1 200'), 'the first body is exactly 11 bytes');
    assert.ok(server.log.entries().some((e) => e.level === 40 && /headers left out/.test(e.msg)));
  });

  it("a whole answer has one Content-Length, its body in bytes: HTTP/1.1, HTTP/1.0, and HEAD (the GET's, without the body)", async () => {
    headers = { 'content-type': 'text/plain' };
    const get = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
    const pair = (await exchange(port, get.replace('GET', 'HEAD') + get.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'))).text;
    const head = firstResponse(pair);
    assert.equal(head.headers['content-length'], '11');
    assert.ok(head.body.startsWith('HTTP/1.1 200'), 'no body follows the HEAD answer');
    const whole = firstResponse(head.body);
    assert.equal(whole.headers['content-length'], '11');
    assert.equal(whole.body, 'hello world');
    const old = firstResponse((await exchange(port, 'GET / HTTP/1.0\r\n\r\n')).text);
    assert.equal(old.headers['content-length'], '11');
    assert.equal(old.body, 'hello world');
  });

  it('an answer after headers set on the response beforehand (CORS) has one Content-Length too, for any body', async (t) => {
    const bodies = { '/text': 'héllo wörld', '/empty': '' };
    const cors = await serve(t, {
      cors: () => ['https://app.example.com'],
      handle: (ctx) => ({ statusCode: 200, body: bodies[ctx.path] }),
    });
    const origin = 'Origin: https://app.example.com\r\n';
    for (const [path, bytes] of [
      ['/text', 13],
      ['/empty', 0],
    ]) {
      const answer = firstResponse(
        (await exchange(Number(new URL(cors.url).port), `GET ${path} HTTP/1.1\r\nHost: x\r\n${origin}Connection: close\r\n\r\n`)).text,
      );
      assert.equal(answer.headers['access-control-allow-origin'], 'https://app.example.com');
      assert.equal(answer.headers['content-length'], String(bytes), path);
      assert.equal(Buffer.from(answer.body, 'latin1').length, bytes);
    }
  });

  it('array values are sent as repeated headers', async () => {
    headers = { 'set-cookie': ['a=1', 'b=2'], 'x-list': ['x', 'y'] };
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text);
    assert.deepEqual(answer.headers['set-cookie'], ['a=1', 'b=2']);
    assert.deepEqual(answer.headers['x-list'], ['x', 'y']);
    assert.equal(answer.headers['0'], undefined);
  });

  it('names that differ only in case are one header: the later value wins, but every Set-Cookie is sent', async () => {
    headers = { 'Content-Type': 'text/html', 'content-type': 'text/plain', 'Set-Cookie': 'a=1', 'set-cookie': ['b=2'], 'X-A': '1', 'x-a': '2', 'x-b': 'b' };
    const { text } = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.headers['content-type'], 'text/plain');
    assert.equal(answer.headers['x-a'], '2');
    assert.equal(answer.headers['x-b'], 'b');
    assert.deepEqual(answer.headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal(text.match(/^content-type:/gim).length, 1, text);
    // Pairs repeat a header on purpose, whatever the case.
    headers = [
      ['x-a', '1'],
      ['X-A', '2'],
    ];
    assert.deepEqual(firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text).headers['x-a'], ['1', '2']);
  });

  it('headers given as [name, value] pairs, a Headers or a Map are sent by name', async () => {
    for (headers of [
      [
        ['x-a', '1'],
        ['x-a', '2'],
      ],
      new Headers([['x-a', '1']]),
      new Map([['x-a', '1']]),
    ]) {
      const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text);
      assert.equal(answer.status, 200);
      assert.ok(answer.headers['x-a'] !== undefined, JSON.stringify(answer.headers));
      assert.equal(answer.headers['0'], undefined);
    }
  });

  it('a header value node refuses is left out rather than failing the response', async () => {
    headers = { 'x-bad': 'caf\u20ac', 'x-crlf': 'a\r\nset-cookie: x=1', 'x-good': 'ok' };
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-good'], 'ok');
    assert.equal(answer.headers['x-bad'], undefined);
    assert.equal(answer.headers['set-cookie'], undefined);
  });
});

describe('answers without content: 204, 205 (Reset Content) and 304', () => {
  const get = (path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
  const last = (path, method = 'GET') => `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;

  it('a 205 with a body sends none: Content-Length: 0, on GET and HEAD, and the next answer follows at once', async (t) => {
    const server = await serve(t, (ctx) => ({ statusCode: 205, headers: { 'x-kept': 'yes' }, body: ctx.path === '/json' ? { a: 1 } : 'not sent' }));
    const port = server.server.address().port;
    for (const path of ['/text', '/json']) {
      const { text } = await exchange(port, get(path) + last(path, 'HEAD'));
      assert.deepEqual(statuses(text), [205, 205], text);
      const first = firstResponse(text);
      assert.equal(first.headers['content-length'], '0', path);
      assert.equal(first.headers['transfer-encoding'], undefined);
      assert.equal(first.headers['x-kept'], 'yes');
      assert.ok(first.body.startsWith('HTTP/1.1 205'), `no content before the next answer: ${JSON.stringify(first.body)}`);
      const head = firstResponse(first.body);
      assert.equal(head.headers['content-length'], '0', `HEAD ${path}`);
      assert.equal(head.body, '');
    }
  });

  it('a 205 whose body is a stream: the stream is closed unread, the answer has Content-Length: 0', async (t) => {
    let source;
    const server = await serve(t, () => {
      source = new Readable({ read() {} });
      source.push('never sent');
      return { statusCode: 205, body: source };
    });
    const { text, timedOut } = await exchange(server.server.address().port, last('/'));
    assert.equal(timedOut, false);
    const answer = firstResponse(text);
    assert.equal(answer.status, 205);
    assert.equal(answer.headers['content-length'], '0');
    assert.equal(answer.headers['transfer-encoding'], undefined);
    assert.equal(answer.body, '');
    assert.equal(source.destroyed, true);
  });

  it('204 and 304 with a body send none, and no framing header', async (t) => {
    const server = await serve(t, (ctx) => ({ statusCode: Number(ctx.path.slice(1)), body: 'not sent' }));
    const port = server.server.address().port;
    const { text } = await exchange(port, get('/204') + last('/304'));
    assert.deepEqual(statuses(text), [204, 304], text);
    const first = firstResponse(text);
    assert.equal(first.headers['content-length'], undefined);
    assert.equal(first.headers['transfer-encoding'], undefined);
    assert.ok(first.body.startsWith('HTTP/1.1 304'));
    assert.equal(firstResponse(first.body).body, '');
  });
});

describe('malformed bytes on a connection whose response is in flight', () => {
  it('close the connection; no 400 is written into the streaming body', async (t) => {
    const server = await serve(t, () =>
      Readable.from(
        (async function* () {
          for (let i = 0; i < 6; i++) {
            yield Buffer.from(`chunk${i};`);
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
      ),
    );
    const { text } = await exchange(server.server.address().port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', { writes: [[80, 'GARBAGE \u0000\r\n\r\n']] });
    assert.deepEqual(statuses(text), [200]);
    assert.doesNotMatch(text, /HTTP\/1\.1 400/);
    assert.doesNotMatch(text, /malformed/);
  });

  it('malformed chunk framing from a client that keeps sending gets its JSON 400, the connection lingering before it closes', async (t) => {
    // In a process of its own, as a deployed server is: the client's writes and the close race as they do there.
    const folder = project({ 'index.js': "module.exports = () => 'ok';" });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const server = await runServing([folder], { env: { FUNC_LOG_LEVEL: 'warn' } });
    t.after(() => server.stop());
    for (let i = 0; i < 3; i++) {
      const { got, lingered } = await new Promise((resolve) => {
        // A client that keeps its side open and writing after the answer, as one busy sending its body does.
        const socket = net.connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true });
        let text = '';
        let answered;
        socket.on('data', (d) => {
          answered ??= Date.now();
          text += d;
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve({ got: text, lingered: Date.now() - (answered ?? Date.now()) }));
        socket.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nZZZ\r\n');
        const chunk = Buffer.alloc(65536, 120);
        const pump = () => {
          while (!socket.destroyed) if (!socket.write(chunk)) return void socket.once('drain', pump);
        };
        pump();
      });
      assert.equal(firstResponse(got).status, 400, `try ${i}: ${JSON.stringify(got.slice(0, 80))}`);
      // Closed at once, the connection is reset under the client's writes, and the 400 may be lost.
      assert.ok(lingered >= 300, `try ${i}: closed ${lingered} ms after the answer`);
    }
  });

  it('with no response in flight, malformed bytes get a JSON 400', async (t) => {
    const server = await serve(t, () => 'ok');
    const { text } = await exchange(server.server.address().port, 'GARBAGE \u0000\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.status, 400);
    assert.equal(JSON.parse(answer.body).statusCode, 400);
  });
});

describe('HTTP framing an attacker chooses', () => {
  let server;
  let port;
  before(async () => {
    server = await startServer((ctx, data) => ({ path: ctx.path, data }), { bodyLimit: 1000 });
    port = server.server.address().port;
  });
  after(() => server.close());

  it('an absolute-form target is routed by its path', async () => {
    const { text } = await exchange(port, 'GET http://example.test/health/liveness HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.status, 200);
    assert.equal(answer.body, 'OK');
    const fn = firstResponse((await exchange(port, 'GET HTTP://example.test/a/b?x=1 HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n')).text);
    assert.equal(JSON.parse(fn.body).path, '/a/b');
    const bare = firstResponse((await exchange(port, 'GET http://example.test HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n')).text);
    assert.equal(JSON.parse(bare.body).path, '/');
  });

  it('an HTTP/1.1 request without Host gets a JSON 400', async () => {
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nConnection: close\r\n\r\n')).text);
    assert.equal(answer.status, 400);
    assert.match(answer.headers['content-type'], /^application\/json/);
    assert.match(JSON.parse(answer.body).message, /Host/);
  });

  it('a request with two Host headers gets a JSON 400, in any case and also on HTTP/1.0', async () => {
    for (const head of [
      'GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test',
      'GET / HTTP/1.1\r\nhost: a.test\r\nX-A: 1\r\nHOST: a.test',
      'GET / HTTP/1.0\r\nHost: a\r\nhOsT: b',
    ]) {
      const answer = firstResponse((await exchange(port, `${head}\r\nConnection: close\r\n\r\n`)).text);
      assert.equal(answer.status, 400, head);
      assert.equal(JSON.parse(answer.body).code, 'FUNCRUN_HOST_REPEATED', head);
    }
    // A header whose name only starts or ends like it, or is four characters one off it, is another header.
    const other = firstResponse(
      (await exchange(port, 'GET / HTTP/1.1\r\nHost: a\r\nX-Host: b\r\nHosts: c\r\nHoss: d\r\nGost: e\r\nConnection: close\r\n\r\n')).text,
    );
    assert.equal(other.status, 200);
  });

  it('an HTTP/1.0 request without Host is served', async () => {
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.0\r\n\r\n')).text);
    assert.equal(answer.status, 200);
  });

  it('an unknown Expect gets a JSON 417', async () => {
    const answer = firstResponse((await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n')).text);
    assert.equal(answer.status, 417);
    assert.equal(JSON.parse(answer.body).statusCode, 417);
  });

  it('Expect: 100-continue with a Content-Length over the limit gets 413 and no 100 Continue', async () => {
    const { text } = await exchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 5000\r\n\r\n', {
      wait: 1500,
    });
    assert.deepEqual(statuses(text), [413]);
    assert.doesNotMatch(text, /100 Continue/);
    assert.equal(JSON.parse(firstResponse(text).body).limit, 1000);
  });

  it('Expect: 100-continue within the limit gets 100 Continue, then the answer', async () => {
    const { text } = await exchange(
      port,
      'POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
      {
        writes: [[100, 'hi']],
      },
    );
    assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    assert.deepEqual(JSON.parse(text.slice(text.indexOf('{'))).data, 'hi');
  });
});

describe('pipelining before garbage, CONNECT, Upgrade, transfer codings', () => {
  let server;
  let port;
  before(async () => {
    server = await startServer((ctx, data) => ({ path: ctx.path, data }));
    port = server.server.address().port;
  });
  after(() => server.close());

  it('complete pipelined requests followed by malformed bytes are answered, then the connection closes', async () => {
    const one = (path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const { text, timedOut } = await exchange(port, one('/a') + one('/b') + 'GARBAGE \u0000\r\n\r\n');
    assert.equal(timedOut, false);
    assert.deepEqual(statuses(text), [200, 200]);
    assert.match(text, /"path":"\/b"/);
  });

  it('CONNECT gets a JSON 405', async () => {
    const { text } = await exchange(port, 'CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n');
    const answer = firstResponse(text);
    assert.equal(answer.status, 405);
    assert.equal(JSON.parse(answer.body).statusCode, 405);
  });

  // A client that never closes its side must not keep the connection (and its slot) after the answer.
  for (const [what, bytes, status] of [
    ['CONNECT', 'CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n', 405],
    ['malformed bytes', 'GARBAGE \u0000\r\n\r\n', 400],
    ['headers too large', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, 431],
  ]) {
    it(`after ${what} (${status}) the connection is closed by funcrun, even when the client keeps its side open`, async (t) => {
      const socket = require('node:net').connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      t.after(() => socket.destroy());
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk) => (text += chunk));
      const ended = new Promise((resolve) => socket.once('end', resolve)); // and the client never ends its own side
      socket.write(bytes);
      await ended;
      assert.equal(firstResponse(text).status, status);
      const connections = () => new Promise((resolve, reject) => server.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
      for (let i = 0; (await connections()) > 0; i++) {
        assert.ok(i < 200, 'the half-open connection is still held after 10 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
  }

  it("Transfer-Encoding: gzip, chunked is a 501, not still-coded bytes for the function; the client's doing, logged as a refusal, not an error", async (t) => {
    const own = await serve(t, () => 'ok', { logLevel: 'debug' });
    const { text } = await exchange(
      own.port,
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n',
    );
    const answer = firstResponse(text);
    assert.equal(answer.status, 501);
    assert.equal(answer.headers.connection, 'close');
    assert.deepEqual(
      own.log.entries().filter((line) => line.level >= 40),
      [],
      'no warning or error line',
    );
    const rejected = own.log.entries().find((line) => line.msg === 'request rejected');
    assert.equal(rejected?.statusCode, 501, own.log.text());
  });

  it('an Upgrade request is answered and the connection closed; nothing behind it hangs', async (t) => {
    const own = await serve(t, () => 'ok');
    const { text, timedOut } = await exchange(
      own.server.address().port,
      'GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n',
      { wait: 3000 },
    );
    assert.equal(timedOut, false);
    assert.equal(statuses(text)[0], 200);
    assert.equal(firstResponse(text).headers.connection, 'close');
  });
});

describe('a request whose body goes wrong', () => {
  for (const [what, body, status, options] of [
    ['a body slower than the request timeout gets a JSON 408', 'Content-Length: 10\r\n\r\nab', 408, { requestTimeout: 800 }],
    ['malformed chunk framing gets a JSON 400', 'Transfer-Encoding: chunked\r\n\r\nzz\r\n', 400, {}],
  ]) {
    it(`${what}, then the connection closes`, async (t) => {
      const server = await serve(t, () => 'ok', options);
      const { text, timedOut } = await exchange(server.server.address().port, `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n${body}`, {
        wait: 5000,
      });
      assert.equal(timedOut, false);
      const answer = firstResponse(text);
      assert.equal(answer.status, status, text);
      assert.equal(JSON.parse(answer.body).statusCode, status);
    });
  }
});

// A body left unread that is small and of a declared length is read and dropped after its answer,
// and the connection goes on: a broker's kept-alive connection is not closed by every event a
// function answers without reading. Any other body left unread closes the connection after its
// answer; node's parser reads that body only after the answer was decided, then dispatches what was
// pipelined behind it: those requests must not run, as their answers could never be sent (by
// HTTP, the client retries them).
describe('a request whose body is left unread, with requests pipelined behind it', () => {
  const functions = {
    'a fetch handler that does not read the body': (ran) => ({
      fetch(request) {
        ran.push(new URL(request.url).pathname);
        return new Response('did not read');
      },
    }),
    'an async fetch handler that does not read the body': (ran) => ({
      async fetch(request) {
        ran.push(new URL(request.url).pathname);
        await new Promise((resolve) => setTimeout(resolve, 50));
        return new Response('did not read');
      },
    }),
    'a streamed handle function that does not read the body': (ran) =>
      streamed((context) => {
        ran.push(context.path);
        return 'did not read';
      }),
  };
  const behind = 'GET /second HTTP/1.1\r\nHost: x\r\n\r\nPOST /third HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi';
  for (const [what, make] of Object.entries(functions)) {
    it(`${what}, a small body of a declared length: the connection goes on, and the requests behind it are answered`, async (t) => {
      const ran = [];
      const server = await serve(t, make(ran));
      const first = 'POST /noread HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{"a":"b"}';
      const { text, timedOut } = await exchange(server.server.address().port, first + behind, { wait: 5000 });
      assert.equal(timedOut, false, 'the last request closed the connection');
      assert.deepEqual(statuses(text), [200, 200, 200]);
      const answer = firstResponse(text);
      assert.notEqual(answer.headers.connection, 'close');
      assert.match(answer.body, /^did not read/);
      assert.deepEqual(ran, ['/noread', '/second', '/third']);
    });

    const closing = {
      'a chunked body, whose end nothing bounds': 'POST /noread HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      'a body over the body limit': `PUT /noread HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n${'x'.repeat(40)}`,
    };
    // (Answered after a wait, the same bodies have come whole: nothing is left unread.)
    for (const [body, first] of what.startsWith('an async') ? [] : Object.entries(closing)) {
      it(`${what}, ${body}: the first answer arrives whole, the requests behind it are not run, the connection closes`, async (t) => {
        const ran = [];
        // The fetch handler is given the body of a PUT over the limit as a 413: a GET's body it is not given.
        const request = what.includes('fetch') && body.includes('limit') ? first.replace('PUT', 'GET') : first;
        const server = await serve(t, make(ran), { bodyLimit: 20 });
        const { text, timedOut } = await exchange(server.server.address().port, request + behind, { wait: 5000 });
        assert.equal(timedOut, false, 'the connection closed');
        assert.deepEqual(statuses(text), [200]);
        const answer = firstResponse(text);
        assert.equal(answer.headers.connection, 'close');
        assert.equal(answer.body, 'did not read');
        await new Promise((resolve) => setTimeout(resolve, 100));
        assert.deepEqual(ran, ['/noread'], 'the pipelined requests did not reach the function');
      });
    }
  }

  it('an error answered before a small body was read (a fetch handler that throws): the connection goes on', async (t) => {
    const ran = [];
    const server = await serve(t, {
      fetch(request) {
        ran.push(new URL(request.url).pathname);
        if (request.method === 'POST' && ran.length === 1) throw new Error('refused');
        return new Response('ok');
      },
    });
    const first = 'POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{"a":"b"}';
    const { text, timedOut } = await exchange(server.server.address().port, first + behind, { wait: 5000 });
    assert.equal(timedOut, false, 'the last request closed the connection');
    assert.deepEqual(statuses(text), [500, 200, 200]);
    assert.notEqual(firstResponse(text).headers.connection, 'close');
    assert.deepEqual(ran, ['/noread', '/second', '/third']);
  });

  const readsPart = (ran) => ({
    async fetch(request) {
      ran.push(new URL(request.url).pathname);
      if (request.body !== null) await request.body.getReader().read();
      return new Response('read part');
    },
  });

  it('a fetch handler that reads part of a body of a declared length within the limit: the rest is dropped, the connection goes on', async (t) => {
    const ran = [];
    const server = await serve(t, readsPart(ran));
    const first = `POST /part HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n${'x'.repeat(1000)}`;
    const { text, timedOut } = await exchange(server.server.address().port, first, { wait: 5000, writes: [[300, 'y'.repeat(199_000) + behind]] });
    assert.equal(timedOut, false, 'the last request closed the connection');
    assert.deepEqual(statuses(text), [200, 200, 200]);
    assert.deepEqual(ran, ['/part', '/second', '/third']);
  });

  it('a fetch handler that reads part of a chunked body: the connection closes after the answer', async (t) => {
    const ran = [];
    const server = await serve(t, readsPart(ran));
    const first = `POST /part HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n${'x'.repeat(1000)}\r\n`;
    const { text, timedOut } = await exchange(server.server.address().port, first, { wait: 5000 });
    assert.equal(timedOut, false, 'the connection closed');
    assert.deepEqual(statuses(text), [200]);
    assert.equal(firstResponse(text).body, 'read part');
    assert.deepEqual(ran, ['/part']);
  });

  it('an async fetch handler that does not read a chunked body still coming: the answer closes the connection', async (t) => {
    const ran = [];
    const server = await serve(t, functions['an async fetch handler that does not read the body'](ran));
    const first = 'POST /noread HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n';
    const { text, timedOut } = await exchange(server.server.address().port, first, { wait: 5000 });
    assert.equal(timedOut, false, 'the connection closed');
    assert.deepEqual(statuses(text), [200]);
    assert.equal(firstResponse(text).headers.connection, 'close');
    assert.deepEqual(ran, ['/noread']);
  });
});
