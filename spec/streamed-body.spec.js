'use strict';
// A function that asks for its body as a stream gets it unread: read only as the function reads,
// held to uploadLimit while it reads, destroyed when the client goes away.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { streamed } = require('../lib/index.js');
const { serve, request } = require('./helpers');

const sha = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

async function hashBody(context, body) {
  const hash = crypto.createHash('sha256');
  let size = 0;
  for await (const chunk of body) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha: hash.digest('hex') };
}

/** A streaming handler that reads its body to the end, hands the code of a failed read to `record`, and answers as if nothing failed. */
function swallowing(record) {
  return streamed(async (context, body) => {
    try {
      for await (const chunk of body) void chunk;
    } catch (err) {
      record(err.code);
    }
    return 'swallowed';
  });
}

/** Sends `chunks` (written one by one, chunked) and resolves with the answer. */
function send(port, { path = '/', headers = {}, chunks = [], end = true } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', path, headers: { 'content-type': 'application/octet-stream', ...headers } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    if (end) req.end();
  });
}

describe('streamed request bodies', () => {
  it('streamed(handle) reads the body as it comes: every byte, in order', async (t) => {
    const { url } = await serve(t, streamed(hashBody));
    const body = crypto.randomBytes(3_000_000);
    const res = await request(url + '/', { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { size: body.length, sha: sha(body) });
  });

  it('a route and a named function can stream their bodies; others still get theirs parsed', async (t) => {
    const echo = (input) => input;
    const module = {
      routes: { 'POST /raw': Object.assign(hashBody, { streamBody: true }), 'POST /parsed': (context, body) => body },
      functions: { upload: (input) => hashBody(undefined, input), echo },
    };
    module.functions.upload.streamBody = true;
    const { url } = await serve(t, module);
    const body = Buffer.from('{"a":1}');
    const post = (path) => request(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.deepEqual((await post('/raw')).json, { size: 7, sha: sha(body) });
    assert.deepEqual((await post('/upload')).json, { size: 7, sha: sha(body) });
    assert.deepEqual((await post('/parsed')).json, { a: 1 });
    assert.deepEqual((await post('/echo')).json, { a: 1 });
  });

  it('nothing is read ahead of the function: the client is held back by backpressure', async (t) => {
    let seen;
    const { port } = await serve(
      t,
      streamed(async (context, body) => {
        // Give the client time to push all it can before reading anything.
        await new Promise((r) => setTimeout(r, 300));
        seen = context.req.socket.bytesRead;
        return hashBody(context, body);
      }),
      { uploadLimit: '100mb' },
    );
    const body = crypto.randomBytes(32 * 1024 * 1024);
    const res = await send(port, { chunks: [body] });
    assert.deepEqual(res.json, { size: body.length, sha: sha(body) });
    assert.ok(seen < 8 * 1024 * 1024, `read ${seen} bytes before the function read any`);
  });

  it('past uploadLimit the stream errors and the answer is 413, even when the function catches it', async (t) => {
    let caught;
    const { port } = await serve(
      t,
      swallowing((code) => (caught = code)),
      { uploadLimit: 1000 },
    );
    const res = await send(port, { chunks: [Buffer.alloc(600), Buffer.alloc(600)] });
    assert.equal(res.status, 413);
    assert.equal(res.json.code, 'FUNCRUN_BODY_TOO_LARGE');
    assert.equal(res.json.setting, 'uploadLimit');
    assert.equal(caught, 'FUNCRUN_BODY_TOO_LARGE');
  });

  it('a Content-Length past uploadLimit is a 413 before the function runs', async (t) => {
    let called = false;
    const { url } = await serve(
      t,
      streamed(() => (called = true)),
      { uploadLimit: 10 },
    );
    const res = await request(url + '/', { method: 'POST', body: 'x'.repeat(11) });
    assert.equal(res.status, 413);
    assert.equal(called, false);
  });

  it('a client that goes away destroys the stream the function reads', async (t) => {
    let failed;
    const failure = new Promise((resolve) => (failed = resolve));
    let reading;
    const started = new Promise((resolve) => (reading = resolve));
    const { port, url } = await serve(
      t,
      streamed(async (context, body) => {
        try {
          for await (const chunk of body) reading(chunk.length);
          failed('ended');
        } catch (err) {
          failed(err.code);
        }
      }),
    );
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', headers: { 'transfer-encoding': 'chunked' } });
    req.on('error', () => {});
    req.write(Buffer.alloc(1000));
    await started;
    req.destroy();
    assert.equal(await failure, 'FUNCRUN_BODY_INCOMPLETE');
    assert.equal((await request(url + '/', { method: 'POST', body: 'x' })).status, 204, 'the server still answers');
  });

  it('a function that answers without reading its body closes the connection (the rest is never read)', async (t) => {
    const { port } = await serve(
      t,
      streamed(() => ({ ok: true })),
    );
    const res = await send(port, { chunks: [Buffer.alloc(100_000)], end: false });
    assert.deepEqual(res.json, { ok: true });
    assert.equal(res.headers.connection, 'close');
  });

  it('a function that reads slowly sets the pace: the body is not cut at the request timeout', async (t) => {
    const { port } = await serve(
      t,
      streamed(async (context, body) => {
        const hash = crypto.createHash('sha256');
        let size = 0;
        for await (const chunk of body) {
          hash.update(chunk);
          size += chunk.length;
          await new Promise((r) => setTimeout(r, 100));
        }
        return { size, sha: hash.digest('hex') };
      }),
      { requestTimeout: '1s', headersTimeout: '1s' },
    );
    const body = crypto.randomBytes(2 * 1024 * 1024);
    const res = await send(port, { chunks: [body] });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.deepEqual(res.json, { size: body.length, sha: sha(body) });
  });

  it('a client that sends nothing while the function waits for bytes is answered 408 past the request timeout', async (t) => {
    let failed;
    const { port } = await serve(
      t,
      swallowing((code) => (failed = code)),
      { requestTimeout: '500ms', headersTimeout: '500ms' },
    );
    const started = Date.now();
    const res = await send(port, { headers: { 'transfer-encoding': 'chunked' }, chunks: [Buffer.alloc(100)], end: false });
    assert.equal(res.status, 408);
    assert.equal(res.json.code, 'FUNCRUN_REQUEST_TIMEOUT');
    assert.equal(failed, 'FUNCRUN_REQUEST_TIMEOUT');
    assert.ok(Date.now() - started < 5000);
  });

  it('past the request timeout a client that drips its body while the function waits is answered 408', { timeout: 15_000 }, async (t) => {
    const { port } = await serve(
      t,
      streamed(async (context, body) => {
        for await (const chunk of body) void chunk;
        return 'read';
      }),
      { requestTimeout: '500ms', headersTimeout: '500ms' },
    );
    const started = Date.now();
    const answer = new Promise((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      // A byte every 100 ms: never silent for a whole window, far below minBodyRate.
      const drip = setInterval(() => req.write('x'), 100);
      req.on('close', () => clearInterval(drip));
      t.after(() => (clearInterval(drip), req.destroy()));
    });
    const res = await answer;
    assert.equal(res.status, 408);
    assert.equal(res.json.code, 'FUNCRUN_REQUEST_TIMEOUT');
    assert.ok(Date.now() - started < 5000);
  });

  /** Sends `piece` every 100 ms for `pieces` times (chunked), then ends; resolves with the answer. */
  function paced(t, port, piece, pieces) {
    return new Promise((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      let sent = 0;
      const pace = setInterval(() => (++sent > pieces ? (clearInterval(pace), req.end()) : req.write(piece)), 100);
      req.on('close', () => clearInterval(pace));
      t.after(() => (clearInterval(pace), req.destroy()));
    });
  }

  // 4000 bytes per second (400 every 100 ms): over the kilobyte in each window of the request
  // timeout that the pace before minBodyRate asked for, under the default minBodyRate of 8 KiB per second.
  const SLOW = Buffer.alloc(400, 1);
  const reading = streamed(async (context, body) => {
    let size = 0;
    for await (const chunk of body) size += chunk.length;
    return { size };
  });

  it('past the request timeout a client slower than minBodyRate (8 KiB/s by default) is answered 408 naming it', { timeout: 15_000 }, async (t) => {
    const { port } = await serve(t, reading, { requestTimeout: '500ms', headersTimeout: '500ms' });
    const res = await paced(t, port, SLOW, 30);
    assert.equal(res.status, 408);
    assert.equal(res.json.code, 'FUNCRUN_REQUEST_TIMEOUT');
    assert.equal(res.json.setting, 'minBodyRate');
    assert.equal(res.json.limit, 8192);
  });

  it('a client at minBodyRate or faster is read to the end, however long past the request timeout', { timeout: 15_000 }, async (t) => {
    const { port } = await serve(t, reading, { requestTimeout: '500ms', headersTimeout: '500ms', minBodyRate: '2kb' });
    // 3 s at 4000 bytes per second: six windows of the request timeout.
    assert.deepEqual(await paced(t, port, SLOW, 30), { status: 200, json: { size: 12_000 } });
  });

  it('a request without a body gives an empty stream', async (t) => {
    const { url } = await serve(t, streamed(hashBody));
    const res = await request(url + '/');
    assert.deepEqual(res.json, { size: 0, sha: sha('') });
  });

  it('the stream is the body as sent: a multipart or JSON body is not parsed', async (t) => {
    const { url } = await serve(
      t,
      streamed(async (context, body) => {
        let text = '';
        for await (const chunk of body) text += chunk;
        return { text, files: context.files.length };
      }),
    );
    const form = new FormData();
    form.append('a', '1');
    const res = await request(url + '/', { method: 'POST', body: form });
    assert.match(res.json.text, /name="a"\r\n\r\n1\r\n/);
    assert.equal(res.json.files, 0);
  });

  it('refused at start: a streaming handle beside named functions, a streaming named function with a schema', async () => {
    const { start } = require('../lib/index.js');
    await assert.rejects(start({ handle: streamed(() => 1), functions: { a: () => 1 } }, { port: 0, logLevel: 'silent' }), /handle streams its body/);
    const withSchema = Object.assign(() => 1, { streamBody: true, inputSchema: { type: 'object' } });
    await assert.rejects(start({ functions: { a: withSchema } }, { port: 0, logLevel: 'silent' }), /streams its body has no inputSchema/);
  });
});
