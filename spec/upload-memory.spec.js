'use strict';
// Memory is bounded by the limits, not by the body: a 1 GiB body streamed to a function that
// hashes it, and a 512 MiB file in a multipart body, each measured as the server process's peak
// RSS (VmHWM, reset before each upload) over its RSS just before, once warm. The bound is generous (64 MB, where
// the goal is about 30 MB): it catches a body held in memory, not a few megabytes of drift. Then
// bodies read whole, sent one byte a chunk.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { project, runServing } = require('./helpers');

const MiB = 1024 * 1024;
const BOUND = 64 * MiB;

const INDEX = `
const crypto = require('node:crypto');
const { streamed } = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'index.js'))});
async function hash(stream) {
  const h = crypto.createHash('sha256');
  let size = 0;
  for await (const chunk of stream) { h.update(chunk); size += chunk.length; }
  return { size, sha: h.digest('hex') };
}
module.exports = {
  routes: {
    'POST /stream': streamed((context, body) => hash(body)),
    'POST /form': (context) => hash(context.files[0].stream()),
    'POST /whole': (context, data) => ({ text: typeof data === 'string' ? data.length : undefined, fields: Object.keys(context.body ?? {}).length, files: (context.files ?? []).length }),
  },
};
`;

/** VmRSS and VmHWM of a process, in bytes. */
function memoryOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)[1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Sends `total` bytes of `chunk` repeated, framed by `head` and `tail`, honouring backpressure. */
function upload(port, pathName, headers, { head = Buffer.alloc(0), chunk, total, tail = Buffer.alloc(0) }) {
  return new Promise((resolve, reject) => {
    const length = head.length + total + tail.length;
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: pathName, headers: { ...headers, 'content-length': length } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.write(head);
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
        sent += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    pump();
  });
}

/** Sends `payload` chunked, one byte a chunk (`1\r\nX\r\n`): six bytes on the wire for each. */
function oneByteChunks(port, pathName, contentType, payload) {
  const wire = [];
  for (const byte of payload) wire.push(Buffer.from(`1\r\n${String.fromCharCode(byte)}\r\n`, 'latin1'));
  wire.push(Buffer.from('0\r\n\r\n'));
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST ${pathName} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`);
      socket.end(Buffer.concat(wire));
    });
    let text = '';
    socket.on('data', (c) => (text += c));
    socket.on('end', () => resolve({ status: Number(text.split(' ')[1]), json: JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) }));
    socket.on('error', reject);
  });
}

function expectedHash(chunk, total) {
  const h = crypto.createHash('sha256');
  for (let sent = 0; sent < total; sent += chunk.length) h.update(chunk.subarray(0, Math.min(chunk.length, total - sent)));
  return h.digest('hex');
}

describe('memory across large uploads', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-spec-'));
  const folder = project({ 'index.js': INDEX });
  let server;
  after(async () => {
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(folder, { recursive: true, force: true });
  });
  const chunk = crypto.randomBytes(MiB);

  /** Resets the server's peak RSS, runs `work`, and returns the peak over the RSS before it. */
  async function peakOver(work, t) {
    const pid = server.child.pid;
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const idle = memoryOf(pid).rss;
    const result = await work();
    const { peak } = memoryOf(pid);
    t.diagnostic(`idle RSS ${(idle / MiB).toFixed(1)} MiB, peak ${(peak / MiB).toFixed(1)} MiB, over idle ${((peak - idle) / MiB).toFixed(1)} MiB`);
    return { result, over: peak - idle };
  }

  it('starts', async () => {
    server = await runServing([folder], { env: { FUNC_UPLOAD_LIMIT: '2gb', FUNC_FILE_SIZE_LIMIT: '2gb', FUNC_LOG_LEVEL: 'warn', TMPDIR: tmp } });
    // Warm: the paths' code loaded and the heap grown to its working size, as on a server that has
    // been answering (a fresh process's first large body also grows V8's heap, raw node:http's too).
    const warm = { chunk, total: 256 * MiB };
    assert.equal((await upload(server.port, '/stream', { 'content-type': 'application/octet-stream' }, warm)).status, 200);
  });

  it('a 1 GiB body streamed to a function that hashes it', async (t) => {
    const total = 1024 * MiB;
    const { result, over } = await peakOver(() => upload(server.port, '/stream', { 'content-type': 'application/octet-stream' }, { chunk, total }), t);
    assert.equal(result.status, 200);
    assert.deepEqual(result.json, { size: total, sha: expectedHash(chunk, total) });
    assert.ok(over < BOUND, `peak RSS ${(over / MiB).toFixed(1)} MiB over idle`);
  });

  it('a 512 MiB file in a multipart body, hashed from its temporary file', async (t) => {
    const total = 512 * MiB;
    const head = Buffer.from('--x\r\nContent-Disposition: form-data; name="f"; filename="big.bin"\r\n\r\n');
    const tail = Buffer.from('\r\n--x--\r\n');
    const { result, over } = await peakOver(
      () => upload(server.port, '/form', { 'content-type': 'multipart/form-data; boundary=x' }, { head, chunk, total, tail }),
      t,
    );
    assert.equal(result.status, 200);
    assert.deepEqual(result.json, { size: total, sha: expectedHash(chunk, total) });
    assert.ok(over < BOUND, `peak RSS ${(over / MiB).toFixed(1)} MiB over idle`);
    const left = fs.readdirSync(tmp, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    assert.deepEqual(left, [], 'the temporary file is gone');
  });
});

describe('memory across bodies read whole, sent one byte a chunk', () => {
  // Each byte its own chunk: a Buffer of its own for each byte held while the body is read whole
  // took some 600 times the body's size (1 MiB of body, 600 MB), within every limit. node's parser
  // makes that Buffer for each chunk all the same, garbage at once, which the peak counts as the
  // young generation grows: the bound here is wider (a million chunks, some 80 MB). Each case on a
  // server of its own, whose heap no earlier case grew.
  const CHUNKED_BOUND = 192 * MiB;
  const folder = project({ 'index.js': INDEX });
  // A fetch handler's request.text(), with the light Request and with undici's.
  const fetchFolder = project({ 'index.js': 'module.exports = { async fetch(request) { return Response.json({ text: (await request.text()).length }); } };' });
  after(() => [folder, fetchFolder].forEach((f) => fs.rmSync(f, { recursive: true, force: true })));
  for (const [what, contentType, payload, served = folder, env = {}] of [
    ["a fetch handler's request.text() of 1 MiB", 'text/plain', Buffer.from('t'.repeat(MiB - 100)), fetchFolder],
    [
      "a fetch handler's request.text() of 1 MiB, undici's Request",
      'text/plain',
      Buffer.from('t'.repeat(MiB - 100)),
      fetchFolder,
      { FUNC_LIGHT_WEB_GLOBALS: 'off' },
    ],
    ['a JSON body of 1 MiB', 'application/json', Buffer.from(JSON.stringify('a'.repeat(MiB - 100)))],
    [
      'a multipart field of 1 MiB',
      'multipart/form-data; boundary=x',
      Buffer.from(`--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n${'v'.repeat(MiB - 200)}\r\n--x--\r\n`),
    ],
    [
      'multipart files of 64 KiB, held in memory',
      'multipart/form-data; boundary=x',
      Buffer.from(
        Array.from({ length: 16 }, (_, i) => `--x\r\nContent-Disposition: form-data; name="f${i}"; filename="f"\r\n\r\n${'z'.repeat(65536)}\r\n`).join('') +
          '--x--\r\n',
      ),
    ],
  ]) {
    it(`${what} costs about its size`, async (t) => {
      const server = await runServing([served], { env: { FUNC_LOG_LEVEL: 'warn', ...env } });
      t.after(() => server.stop());
      const pid = server.child.pid;
      fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
      const idle = memoryOf(pid).rss;
      const result = await oneByteChunks(server.port, '/whole', contentType, payload);
      const over = memoryOf(pid).peak - idle;
      t.diagnostic(`peak ${(over / MiB).toFixed(1)} MiB over idle`);
      assert.equal(result.status, 200, JSON.stringify(result.json));
      assert.ok(result.json.text > 0 || result.json.fields > 0 || result.json.files > 0, JSON.stringify(result.json));
      assert.ok(over < CHUNKED_BOUND, `peak RSS ${(over / MiB).toFixed(1)} MiB over idle`);
    });
  }
});
