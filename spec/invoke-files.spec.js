'use strict';
// `funcrun invoke` with files: --file <field>=<path> and --field <name>=<value> send a
// multipart/form-data body, --file <path> the file's bytes, streamed from disk. The peer is a plain
// node:http server that keeps each request's raw body; forms are read back with undici's own parser.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { project, run } = require('./helpers');

const CLI = path.join(__dirname, '..', 'lib', 'tools', 'cli.js');

/** Runs `funcrun invoke ...args` to completion: { code, stdout, stderr }. */
async function invoke(args, options = {}) {
  const proc = run(['invoke', ...args], { ...options, script: CLI });
  const { code } = await proc.exited;
  return { code, ...proc.out };
}

/** The form a request carried, parsed as fetch parses one. */
function formOf(request) {
  return new Request('http://x/', { method: 'POST', headers: { 'content-type': request.headers['content-type'] }, body: request.raw }).formData();
}

const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const FIVE_MB = crypto.randomBytes(5 * 1024 * 1024);

describe('funcrun invoke with files', () => {
  const received = [];
  let server;
  let target;
  let folder;
  before(async () => {
    folder = project({ 'cat.png': PNG, 'sub/bytes.bin': ALL_BYTES, 'big.bin': FIVE_MB, 'a=b.bin': ALL_BYTES, 'notes.txt': 'dear diary' });
    server = http.createServer(async (req, res) => {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      received.push({ method: req.method, url: req.url, headers: req.headers, raw: Buffer.concat(chunks) });
      if (req.url === '/moved') res.writeHead(307, { location: '/upload' }).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    target = `http://127.0.0.1:${server.address().port}/upload`;
  });
  after(() => server.close());
  const file = (name) => path.join(folder, name);

  it('sends files under their fields and repeated text fields in the order given: each file named by its basename, typed by ;type= or application/octet-stream, its bytes exact', async () => {
    const res = await invoke([
      '--target',
      target,
      '--file',
      `photo=${file('cat.png')};type=image/png`,
      '--field',
      'album=holidays',
      '--file',
      `raw=${file('sub/bytes.bin')}`,
      '--field',
      'album=summer',
      '--file',
      `big=${file('big.bin')}`,
    ]);
    assert.equal(res.code, 0, res.stderr);
    const request = received.at(-1);
    assert.equal(request.method, 'POST');
    assert.match(request.headers['content-type'], /^multipart\/form-data; boundary=/);
    // Streamed as it is encoded: chunked.
    assert.equal(request.headers['transfer-encoding'], 'chunked');
    const form = await formOf(request);
    assert.deepEqual([...form.keys()], ['photo', 'album', 'raw', 'album', 'big']);
    assert.deepEqual(form.getAll('album'), ['holidays', 'summer']);
    const photo = form.get('photo');
    assert.equal(photo.name, 'cat.png');
    assert.equal(photo.type, 'image/png');
    assert.deepEqual(Buffer.from(await photo.arrayBuffer()), PNG);
    const raw = form.get('raw');
    assert.equal(raw.name, 'bytes.bin');
    assert.equal(raw.type, 'application/octet-stream');
    assert.deepEqual(Buffer.from(await raw.arrayBuffer()), ALL_BYTES);
    const big = form.get('big');
    assert.equal(big.name, 'big.bin');
    assert.equal(big.type, 'application/octet-stream');
    assert.ok(Buffer.from(await big.arrayBuffer()).equals(FIVE_MB), 'the 5 MB file arrives byte for byte');
    assert.ok(!request.raw.includes(folder), 'the folder of a file is not sent');
  });

  it('a --field alone sends a form, its value as given (= and all); with --format cloudevent the form is a binary event’s data', async () => {
    const res = await invoke(['--target', target, '--format', 'cloudevent', '--type', 'dev.example.upload', '--field', 'a=1', '--field', 'b=x=y;type=z/w']);
    assert.equal(res.code, 0, res.stderr);
    const request = received.at(-1);
    assert.equal(request.headers['ce-type'], 'dev.example.upload');
    assert.equal(request.headers['ce-specversion'], '1.0');
    assert.match(request.headers['content-type'], /^multipart\/form-data; boundary=/);
    const form = await formOf(request);
    assert.deepEqual(
      [...form],
      [
        ['a', '1'],
        ['b', 'x=y;type=z/w'],
      ],
    );
  });

  it('--file <path> still sends the file’s bytes as the body with --content-type; a path with = in it is written ./a=b', async () => {
    for (const [args, cwd, type, bytes] of [
      [['--file', './a=b.bin', '--content-type', 'application/octet-stream'], folder, 'application/octet-stream', ALL_BYTES],
      [['--file', file('a=b.bin'), '--content-type', 'application/octet-stream'], undefined, 'application/octet-stream', ALL_BYTES],
      [['--file', file('notes.txt'), '--content-type', 'text/plain'], undefined, 'text/plain', Buffer.from('dear diary')],
    ]) {
      const res = await invoke(['--target', target, ...args], { cwd });
      assert.equal(res.code, 0, res.stderr);
      const request = received.at(-1);
      assert.equal(request.headers['content-type'], type);
      assert.deepEqual(request.raw, bytes);
    }
  });

  it('a 307 on the same origin is followed with the form sent again, whole', async () => {
    const before = received.length;
    const res = await invoke([
      '--target',
      target.replace('/upload', '/moved'),
      '--file',
      `photo=${file('cat.png')};type=image/png`,
      '--file',
      `big=${file('big.bin')}`,
      '--field',
      'album=holidays',
    ]);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(
      received.slice(before).map((r) => `${r.method} ${r.url}`),
      ['POST /moved', 'POST /upload'],
    );
    for (const request of received.slice(before)) {
      const form = await formOf(request);
      assert.deepEqual([...form.keys()], ['photo', 'big', 'album']);
      assert.equal(form.get('photo').type, 'image/png');
      assert.deepEqual(Buffer.from(await form.get('photo').arrayBuffer()), PNG);
      assert.ok(Buffer.from(await form.get('big').arrayBuffer()).equals(FIVE_MB), request.url);
      assert.equal(form.get('album'), 'holidays');
    }
  });

  it('bad use is exit code 2 with one line, and nothing is sent', async () => {
    const before = received.length;
    const photo = `photo=${file('cat.png')}`;
    for (const [args, message] of [
      [['--file', `photo=${file('x.png')}`], `cannot read --file photo=${file('x.png')}: no such file`],
      [
        ['--file', photo, '--file', `other=${file('missing.bin')};type=image/png`],
        `cannot read --file other=${file('missing.bin')};type=image/png: no such file`,
      ],
      [['--file', `dir=${folder}`], `cannot read --file dir=${folder}: not a regular file`],
      [
        ['--file', file('a=b.bin'), '--file', photo],
        `--file ${file('a=b.bin')} is the body and --file ${photo} makes a form: give one or the other (a path with = in it is written ./a=b)`,
      ],
      [
        ['--field', 'album=x', '--file', file('notes.txt')],
        `--file ${file('notes.txt')} is the body and --field album=x makes a form: give one or the other (a path with = in it is written ./a=b)`,
      ],
      [['--data', '{}', '--file', photo], `give --data or a form (--file ${photo}), not both`],
      [['--field', 'album=x', '-d', '{}'], 'give --data or a form (--field album=x), not both'],
      [
        ['--content-type', 'image/png', '--file', photo],
        `--content-type does not go with a form (--file ${photo}): it is multipart/form-data with a boundary of its own; a file's type is --file <field>=<path>;type=<type>`,
      ],
      [['--file', `${photo};type=png`], `invalid type in --file ${photo};type=png: expected a media type such as image/png`],
      [['--field', 'album'], "invalid --field 'album': expected name=value"],
      [['--request-type', 'GET', '--field', 'a=1'], 'a form (--field a=1) is sent with POST, not --request-type GET'],
      [
        ['--file', file('notes.txt'), '--file', file('a=b.bin')],
        'give one --file <path> as the body, not 2; the files of a form are named --file <field>=<path>',
      ],
      [['--file', file('missing.bin')], `cannot read --file ${file('missing.bin')}: no such file`],
    ]) {
      const res = await invoke(['--target', target, ...args]);
      assert.equal(res.code, 2, args.join(' '));
      assert.equal(res.stderr, `funcrun: ${message}\n`);
      assert.equal(res.stdout, '');
    }
    assert.equal(received.length, before, 'the server saw no request');
  });

  it('a 307 on the same origin is followed with --file <path> sent again, whole, with its Content-Length', async () => {
    const before = received.length;
    const res = await invoke(['--target', target.replace('/upload', '/moved'), '--file', file('big.bin'), '--content-type', 'application/octet-stream']);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(
      received.slice(before).map((r) => `${r.method} ${r.url}`),
      ['POST /moved', 'POST /upload'],
    );
    for (const request of received.slice(before)) {
      assert.equal(request.headers['content-length'], String(FIVE_MB.length));
      assert.ok(request.raw.equals(FIVE_MB), request.url);
    }
  });

  it(
    '--file <path> that is not a regular file (a FIFO) is sent once, chunked: a 307 for it is not followed, and that is said',
    { skip: process.platform === 'win32' && 'mkfifo' },
    async () => {
      const fifo = path.join(folder, 'fifo');
      execFileSync('mkfifo', [fifo]);
      const before = received.length;
      for (const [url, code] of [
        ['/upload', 0],
        ['/moved', 1],
      ]) {
        const proc = run(['invoke', '--target', target.replace('/upload', url), '--file', fifo, '--content-type', 'text/plain'], { script: CLI });
        // Opened for writing once the command opens it to read.
        await fs.promises.writeFile(fifo, 'through a pipe');
        assert.equal((await proc.exited).code, code, proc.out.stderr);
        if (url === '/moved') {
          assert.match(proc.out.stdout, /^HTTP 307 /);
          assert.ok(
            proc.out.stdout.endsWith(`(redirect not followed: --file ${fifo} is not a regular file, and its body cannot be sent again)\n`),
            proc.out.stdout,
          );
        }
      }
      const requests = received.slice(before);
      assert.deepEqual(
        requests.map((r) => `${r.method} ${r.url}`),
        ['POST /upload', 'POST /moved'],
      );
      for (const request of requests) {
        assert.equal(request.headers['transfer-encoding'], 'chunked');
        assert.equal(request.raw.toString(), 'through a pipe');
      }
    },
  );

  it(
    '--file <path> and a form’s file are streamed: a 256 MiB file arrives whole (with its Content-Length as the body), and the command’s peak memory grows by less than half the file',
    { skip: process.platform !== 'linux' && '/proc' },
    async (t) => {
      const SIZE = 256 * 1024 * 1024;
      // Sparse, with marks at its start, middle and end, so that the bytes' order shows in their hash.
      const dir = project({});
      t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
      const big = path.join(dir, 'big.bin');
      fs.writeFileSync(big, 'start');
      fs.truncateSync(big, SIZE);
      const fd = fs.openSync(big, 'r+');
      fs.writeSync(fd, 'middle', SIZE / 2);
      fs.writeSync(fd, 'end', SIZE - 3);
      fs.closeSync(fd);
      const expected = crypto.createHash('sha256');
      for await (const chunk of fs.createReadStream(big)) expected.update(chunk);
      // The peer reads the command's peak memory (VmHWM) once the body has arrived, while it waits for the answer.
      let pid;
      const arrived = [];
      const peer = http.createServer((req, res) => {
        const hash = crypto.createHash('sha256');
        let length = 0;
        req.on('data', (chunk) => {
          hash.update(chunk);
          length += chunk.length;
        });
        req.on('end', () => {
          const peak = Number(/^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
          arrived.push({ length, declared: req.headers['content-length'], hash: hash.digest('hex'), peak });
          res.end('{}');
        });
      });
      await new Promise((resolve) => peer.listen(0, '127.0.0.1', resolve));
      t.after(() => peer.close());
      const url = `http://127.0.0.1:${peer.address().port}/`;
      for (const body of [
        ['-d', '{}'],
        ['--file', big, '--content-type', 'application/octet-stream'],
        ['--file', `big=${big}`],
      ]) {
        const proc = run(['invoke', '--target', url, ...body], { script: CLI });
        pid = proc.child.pid;
        assert.equal((await proc.exited).code, 0, proc.out.stderr);
      }
      const [small, large, form] = arrived;
      assert.deepEqual(
        { length: large.length, declared: large.declared, hash: large.hash },
        { length: SIZE, declared: String(SIZE), hash: expected.digest('hex') },
      );
      // The form: the file and its part's framing.
      assert.ok(form.length > SIZE && form.length < SIZE + 1000, `${form.length}`);
      // Read whole, the file alone would add its size, and fetch's copies more.
      assert.ok(large.peak - small.peak < SIZE / 2, `peak memory ${large.peak} bytes, ${small.peak} for a small body`);
      assert.ok(form.peak - small.peak < SIZE / 2, `peak memory ${form.peak} bytes with the form, ${small.peak} for a small body`);
    },
  );

  it('--file <path> that changes on disk while it is sent ends the command with exit code 1 and one line, its request cut short', async (t) => {
    const changing = project({ 'growing.bin': Buffer.alloc(32 * 1024 * 1024, 7) });
    const growing = path.join(changing, 'growing.bin');
    t.after(() => fs.rmSync(changing, { recursive: true, force: true }));
    let outcome;
    const ended = new Promise((resolve) => (outcome = resolve));
    const peer = http.createServer((req, res) => {
      req.once('data', () => {
        req.pause();
        fs.appendFileSync(growing, 'more');
        setTimeout(() => req.resume(), 50);
      });
      req.on('error', () => outcome('cut'));
      req.on('aborted', () => outcome('cut'));
      req.on('end', () => {
        outcome('whole');
        res.end('{}');
      });
    });
    await new Promise((resolve) => peer.listen(0, '127.0.0.1', resolve));
    t.after(() => peer.close());
    const res = await invoke(['--target', `http://127.0.0.1:${peer.address().port}/`, '--file', growing]);
    assert.equal(res.code, 1);
    assert.equal(res.stderr, `funcrun: --file ${growing} changed on disk while it was sent\n`);
    assert.equal(await ended, 'cut');
  });

  it('a file that changes on disk while it is sent ends the command with exit code 1 and one line', async (t) => {
    // Larger than what loopback buffers hold while the peer stops reading, so the file is still being read when it changes.
    const changing = project({ 'growing.bin': Buffer.alloc(32 * 1024 * 1024, 7) });
    const growing = path.join(changing, 'growing.bin');
    const peer = http.createServer((req, res) => {
      req.once('data', () => {
        req.pause();
        fs.appendFileSync(growing, 'more');
        setTimeout(() => req.resume(), 50);
      });
      req.on('error', () => {});
      req.on('end', () => res.end('{}'));
    });
    await new Promise((resolve) => peer.listen(0, '127.0.0.1', resolve));
    t.after(() => peer.close());
    const res = await invoke(['--target', `http://127.0.0.1:${peer.address().port}/`, '--file', `big=${growing}`]);
    assert.equal(res.code, 1);
    assert.equal(res.stderr, 'funcrun: a file of the form changed on disk while it was sent\n');
  });
});
