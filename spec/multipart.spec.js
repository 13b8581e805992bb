'use strict';
// multipart/form-data bodies: fields as an object, files readable as bytes, large ones in
// temporary files that are gone however the invocation ends, every limit a 413 naming it.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { monitorEventLoopDelay } = require('node:perf_hooks');
const { serve, request, project, runServing } = require('./helpers');

const sha = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

/** A folder for the server's temporary files, removed after the test. */
function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-spec-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every file under `dir`, at any depth. */
function filesUnder(dir) {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
}

/** Waits until `check()` is true (a bound that catches a hang, not a speed). */
async function eventually(check, what) {
  const until = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > until) assert.fail(`not within 5s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// What a function sees of its files.
async function describeFiles(context, body) {
  const files = [];
  for (const file of context.files) {
    const bytes = await file.bytes();
    let streamed = 0;
    for await (const chunk of file.stream()) streamed += chunk.length;
    files.push({ field: file.field, filename: file.filename, type: file.type, size: file.size, sha: sha(bytes), streamed });
  }
  return { fields: body, proto: Object.getPrototypeOf(body) === Object.prototype, files };
}

function curl(args) {
  return new Promise((resolve, reject) =>
    execFile('curl', ['-sS', ...args], { encoding: 'utf8', maxBuffer: 1 << 26 }, (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout)))),
  );
}

/** A raw multipart body with boundary `x`, from parts given as [headers text, body]. */
function multipart(parts, { close = true } = {}) {
  const pieces = parts.map(([headers, body]) => Buffer.concat([Buffer.from(`--x\r\n${headers}\r\n\r\n`), Buffer.from(body), Buffer.from('\r\n')]));
  return Buffer.concat([...pieces, Buffer.from(close ? '--x--\r\n' : '')]);
}

/** One part whose header holds `byte` (not UTF-8 by itself) between `before` and `after`. */
function withByte(before, byte, after) {
  return Buffer.concat([Buffer.from(`--x\r\n${before}`), Buffer.from([byte]), Buffer.from(`${after}\r\n\r\n1\r\n--x--\r\n`)]);
}

const post = (url, body, type = 'multipart/form-data; boundary=x') => request(url, { method: 'POST', headers: { 'content-type': type }, body });

describe('multipart/form-data', () => {
  it('curl -F: fields as an object (a repeated name an array, __proto__ a key), files with their bytes', async (t) => {
    const dir = tempDir(t);
    const { url } = await serve(t, describeFiles, { tempDir: dir, fileMemoryLimit: 1024 });
    const big = crypto.randomBytes(300_000);
    const bigPath = path.join(dir, 'big.bin');
    fs.writeFileSync(bigPath, big);
    const small = path.join(dir, 'note.txt');
    fs.writeFileSync(small, 'hello');
    const out = await curl([
      '-F',
      'a=1',
      '-F',
      'a=2',
      '-F',
      '__proto__=polluted',
      '-F',
      `photo=@${bigPath};type=image/png;filename=../../etc/passwd`,
      '-F',
      `note=@${small}`,
      url + '/',
    ]);
    assert.deepEqual(Object.keys(out.fields), ['a', '__proto__']);
    assert.deepEqual(out.fields.a, ['1', '2']);
    assert.equal(out.fields.__proto__, 'polluted');
    assert.equal(out.proto, true);
    assert.deepEqual(out.files, [
      { field: 'photo', filename: 'passwd', type: 'image/png', size: big.length, sha: sha(big), streamed: big.length },
      { field: 'note', filename: 'note.txt', type: 'text/plain', size: 5, sha: sha('hello'), streamed: 5 },
    ]);
    assert.equal(Object.getPrototypeOf({}).polluted, undefined);
  });

  it("undici's FormData through fetch: Blob files, empty ones too, and a UTF-8 field", async (t) => {
    const { url } = await serve(t, describeFiles, { tempDir: tempDir(t), fileMemoryLimit: 10 });
    const form = new FormData();
    form.append('name', 'Zoë ✓');
    const bytes = Buffer.from([...Array(256).keys()]);
    form.append('all', new Blob([bytes], { type: 'application/octet-stream' }), 'bytes.bin');
    form.append('empty', new Blob([]), 'empty.txt');
    const res = await request(url + '/', { method: 'POST', body: form });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.fields, { name: 'Zoë ✓' });
    assert.deepEqual(
      res.json.files.map((f) => [f.field, f.filename, f.size, f.sha]),
      [
        ['all', 'bytes.bin', 256, sha(bytes)],
        ['empty', 'empty.txt', 0, sha('')],
      ],
    );
  });

  it('a file input left empty (filename="") is a file without a name, not a field', async (t) => {
    const { url } = await serve(t, describeFiles, { tempDir: tempDir(t) });
    const res = await post(url + '/', multipart([['Content-Disposition: form-data; name="photo"; filename=""\r\nContent-Type: application/octet-stream', '']]));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.fields, {});
    assert.deepEqual(res.json.files, [{ field: 'photo', filename: '', type: 'application/octet-stream', size: 0, sha: sha(''), streamed: 0 }]);
  });

  it('a file past the memory limit is in a 0600 file in a 0700 folder of its own, never under its client-chosen name', async (t) => {
    const dir = tempDir(t);
    const seen = {};
    const { url } = await serve(
      t,
      async (context) => {
        const files = filesUnder(dir);
        seen.count = files.length;
        seen.modes = files.map((f) => fs.statSync(path.join(f.parentPath, f.name)).mode & 0o777);
        seen.folders = fs.readdirSync(dir).map((name) => [name, fs.statSync(path.join(dir, name)).mode & 0o777]);
        seen.names = files.map((f) => f.name);
        return { size: context.files[0].size };
      },
      { tempDir: dir, fileMemoryLimit: 100 },
    );
    const form = new FormData();
    form.append('f', new Blob([Buffer.alloc(5000, 1)]), 'evil name; rm -rf');
    form.append('small', new Blob([Buffer.alloc(50, 1)]), 'small.bin');
    const res = await request(url + '/', { method: 'POST', body: form });
    assert.equal(res.status, 200, res.text);
    assert.equal(seen.count, 1, 'only the large file is on disk');
    assert.deepEqual(seen.modes, [0o600]);
    assert.equal(seen.folders.length, 1);
    assert.match(seen.folders[0][0], /^funcrun-uploads-/);
    assert.equal(seen.folders[0][1], 0o700);
    assert.ok(!seen.names.some((n) => n.includes('evil')));
    assert.deepEqual(filesUnder(dir), [], 'removed before the answer');
  });

  it('a temporary folder that cannot be made is a 500 that names no path; small files still pass', async (t) => {
    const missing = path.join(tempDir(t), 'gone', 'deeper');
    const { url, log } = await serve(t, (context) => ({ size: context.files[0].size }), { tempDir: missing, fileMemoryLimit: 1000 });
    const form = (size) => {
      const f = new FormData();
      f.append('f', new Blob([Buffer.alloc(size)]), 'a.bin');
      return f;
    };
    const res = await request(url + '/', { method: 'POST', body: form(5000) });
    assert.equal(res.status, 500);
    assert.ok(!res.text.includes(missing) && !res.text.includes('funcrun-uploads'), res.text);
    assert.ok(log.text().includes('ENOENT'), 'the reason is in the log');
    assert.deepEqual((await request(url + '/', { method: 'POST', body: form(500) })).json, { size: 500 });
  });

  describe('temporary files are removed however the invocation ends', () => {
    const bigForm = () => {
      const form = new FormData();
      form.append('f', new Blob([crypto.randomBytes(200_000)]), 'a.bin');
      form.append('g', new Blob([crypto.randomBytes(200_000)]), 'b.bin');
      return form;
    };

    it('the function answers (and a file stream it returned is still sent whole)', async (t) => {
      const dir = tempDir(t);
      const { url } = await serve(t, (context) => ({ headers: { 'content-type': 'application/octet-stream' }, body: context.files[0].stream() }), {
        tempDir: dir,
        fileMemoryLimit: 1000,
      });
      const form = bigForm();
      const expected = Buffer.from(await form.get('f').arrayBuffer());
      const res = await fetch(url + '/', { method: 'POST', body: form });
      assert.equal(sha(Buffer.from(await res.arrayBuffer())), sha(expected));
      assert.deepEqual(filesUnder(dir), []);
    });

    it('the function throws', async (t) => {
      const dir = tempDir(t);
      const { url } = await serve(
        t,
        () => {
          throw new Error('no');
        },
        { tempDir: dir, fileMemoryLimit: 1000 },
      );
      const res = await request(url + '/', { method: 'POST', body: bigForm() });
      assert.equal(res.status, 500);
      assert.deepEqual(filesUnder(dir), []);
    });

    it('the function times out (504)', async (t) => {
      const dir = tempDir(t);
      const { url } = await serve(t, () => new Promise(() => {}), { tempDir: dir, fileMemoryLimit: 1000, timeout: 200 });
      const res = await request(url + '/', { method: 'POST', body: bigForm() });
      assert.equal(res.status, 504);
      assert.deepEqual(filesUnder(dir), []);
    });

    it('the client goes away while the function runs', async (t) => {
      const dir = tempDir(t);
      let release;
      const running = new Promise((resolve) => {
        release = resolve;
      });
      let calledBack;
      const called = new Promise((resolve) => (calledBack = resolve));
      const { url } = await serve(
        t,
        async () => {
          calledBack(filesUnder(dir).length);
          await running;
          return 'late';
        },
        { tempDir: dir, fileMemoryLimit: 1000 },
      );
      const controller = new AbortController();
      const sent = fetch(url + '/', { method: 'POST', body: bigForm(), signal: controller.signal }).catch((err) => err);
      assert.equal(await called, 2);
      controller.abort();
      await sent;
      release();
      await eventually(() => filesUnder(dir).length === 0, 'files removed');
    });

    it('the client goes away in the middle of a file', async (t) => {
      const dir = tempDir(t);
      const { url, port } = await serve(t, () => 'never', { tempDir: dir, fileMemoryLimit: 1000 });
      const req = http.request({
        port,
        host: '127.0.0.1',
        method: 'POST',
        headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': 10_000_000 },
      });
      req.on('error', () => {});
      req.write(Buffer.concat([Buffer.from('--x\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\n'), Buffer.alloc(100_000, 7)]));
      await eventually(() => filesUnder(dir).length === 1, 'the file spilled');
      req.destroy();
      await eventually(() => filesUnder(dir).length === 0, 'files removed');
      assert.equal((await request(url + '/', { method: 'POST', body: 'x' })).status, 200, 'the server still answers');
    });

    // A function that holds its request ?ms= milliseconds, or forever without it.
    const HOLDING = `
      module.exports = async (context) => {
        await new Promise((resolve) => context.query.ms && setTimeout(resolve, Number(context.query.ms)));
        return { size: context.files[0].size };
      };`;

    async function uploadHeld(t, grace, query = '') {
      const dir = tempDir(t);
      const folder = project({ 'index.js': HOLDING });
      t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
      const server = await runServing([folder, '--grace-period', grace], { env: { TMPDIR: dir, FUNC_FILE_MEMORY_LIMIT: '1000', FUNC_LOG_LEVEL: 'warn' } });
      t.after(() => server.stop('SIGKILL'));
      const form = new FormData();
      form.append('f', new Blob([crypto.randomBytes(200_000)]), 'a.bin');
      const answer = fetch(server.url + '/' + query, { method: 'POST', body: form }).then(
        (res) => res.json(),
        (err) => err,
      );
      await eventually(() => filesUnder(dir).length === 1, 'the file spilled');
      return { dir, server, answer };
    }

    it('SIGTERM: a request that finishes within the grace period is answered, its file removed', async (t) => {
      const { dir, server, answer } = await uploadHeld(t, '10s', '?ms=500');
      server.child.kill('SIGTERM');
      assert.deepEqual(await answer, { size: 200_000 });
      assert.equal((await server.exited).code, 0);
      assert.deepEqual(fs.readdirSync(dir), [], 'the folder is gone too');
    });

    it('SIGTERM: a request the grace period cuts short leaves nothing behind', async (t) => {
      const { dir, server, answer } = await uploadHeld(t, '300ms');
      server.child.kill('SIGTERM');
      await server.exited;
      await answer;
      assert.deepEqual(fs.readdirSync(dir), []);
    });

    // The work reads the file 50 ms after the answer: handed to waitUntil, or handed on by work that was.
    const readLater = (file, read) => new Promise((r) => setTimeout(r, 50)).then(() => file.bytes()).then((bytes) => read(bytes.length), read);
    for (const [how, handOff] of [
      ['work handed to waitUntil', (context, work) => context.waitUntil(work())],
      ['work that waitUntil work hands on to waitUntil', (context, work) => context.waitUntil(Promise.resolve().then(() => context.waitUntil(work())))],
    ]) {
      it(`${how} still reads the files; they go once it settles`, async (t) => {
        const dir = tempDir(t);
        let read;
        const reading = new Promise((resolve) => (read = resolve));
        const { url } = await serve(
          t,
          (context) => {
            const [file] = context.files;
            handOff(context, () => readLater(file, read));
            return { statusCode: 202 };
          },
          { tempDir: dir, fileMemoryLimit: 1000 },
        );
        assert.equal((await request(url + '/', { method: 'POST', body: bigForm() })).status, 202);
        assert.equal(await reading, 200_000);
        await eventually(() => filesUnder(dir).length === 0, 'files removed after the work');
      });
    }

    it('a file stream the function opened and never read is closed when the invocation ends', async (t) => {
      const dir = tempDir(t);
      const { url } = await serve(
        t,
        (context) => {
          context.files[0].stream();
          return 'opened';
        },
        { tempDir: dir, fileMemoryLimit: 1000 },
      );
      const target = (fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return ''; // closed while listed
        }
      };
      const openOnTemp = () => fs.readdirSync('/proc/self/fd').filter((fd) => target(fd).startsWith(dir)).length;
      for (let i = 0; i < 5; i++) assert.equal((await request(url + '/', { method: 'POST', body: bigForm() })).status, 200);
      await eventually(() => openOnTemp() === 0, 'no descriptor left open on a temporary file');
    });

    it('a limit is passed in the middle of the second file (413)', async (t) => {
      const dir = tempDir(t);
      const { url } = await serve(t, () => 'never', { tempDir: dir, fileMemoryLimit: 1000, fileSizeLimit: 150_000 });
      const res = await request(url + '/', { method: 'POST', body: bigForm() });
      assert.equal(res.status, 413);
      assert.equal(res.json.code, 'FUNCRUN_FILE_TOO_LARGE');
      assert.deepEqual(filesUnder(dir), []);
    });
  });

  describe('limits: a 413 naming the setting', () => {
    const cases = [
      ['uploadLimit', { uploadLimit: 1000 }, 'FUNCRUN_BODY_TOO_LARGE', [['Content-Disposition: form-data; name="f"; filename="a"', Buffer.alloc(2000)]]],
      ['fileSizeLimit', { fileSizeLimit: 100 }, 'FUNCRUN_FILE_TOO_LARGE', [['Content-Disposition: form-data; name="f"; filename="a"', Buffer.alloc(101)]]],
      [
        'filesLimit',
        { filesLimit: 1 },
        'FUNCRUN_TOO_MANY_FILES',
        [
          ['Content-Disposition: form-data; name="f"; filename="a"', 'x'],
          ['Content-Disposition: form-data; name="f"; filename="b"', 'y'],
        ],
      ],
      [
        'fieldsLimit',
        { fieldsLimit: 2 },
        'FUNCRUN_TOO_MANY_FIELDS',
        [
          ['Content-Disposition: form-data; name="a"', '1'],
          ['Content-Disposition: form-data; name="a"', '2'],
          ['Content-Disposition: form-data; name="a"', '3'],
        ],
      ],
      ['fieldSizeLimit', { fieldSizeLimit: 10 }, 'FUNCRUN_FIELD_TOO_LARGE', [['Content-Disposition: form-data; name="a"', 'x'.repeat(11)]]],
      [
        'bodyLimit',
        { bodyLimit: 100, fieldSizeLimit: 50, uploadLimit: 10_000 },
        'FUNCRUN_FIELD_TOO_LARGE',
        Array.from({ length: 3 }, () => ['Content-Disposition: form-data; name="a"', 'x'.repeat(40)]),
      ],
      [
        'partHeaderLimit',
        { partHeaderLimit: 200 },
        'FUNCRUN_PART_HEADER_TOO_LARGE',
        [[`Content-Disposition: form-data; name="a"\r\nX-Pad: ${'p'.repeat(300)}`, 'v']],
      ],
    ];
    for (const [setting, options, code, parts] of cases) {
      it(`${setting}: ${code}`, async (t) => {
        const dir = tempDir(t);
        const { url } = await serve(t, () => 'never', { tempDir: dir, fileMemoryLimit: 10, ...options });
        const res = await post(url + '/', multipart(parts));
        assert.equal(res.status, 413, res.text);
        assert.equal(res.json.code, code);
        assert.equal(res.json.setting, setting);
        assert.ok(res.json.message.includes(setting));
        assert.deepEqual(filesUnder(dir), []);
      });
    }

    it('the fields together are held to the larger of bodyLimit and fieldSizeLimit', async (t) => {
      const { url } = await serve(t, (context, body) => body, { tempDir: tempDir(t), bodyLimit: 50, fieldSizeLimit: 100 });
      const field = ['Content-Disposition: form-data; name="a"', 'x'.repeat(40)];
      assert.equal((await post(url + '/', multipart([field, field]))).status, 200);
      const res = await post(url + '/', multipart([field, field, field]));
      assert.equal(res.status, 413);
      assert.equal(res.json.setting, 'fieldSizeLimit');
    });

    it("fields' names count with their values: 1,000 fields with 16 KB names are a 413, not 16 MB held", async (t) => {
      let called = false;
      const { url } = await serve(
        t,
        () => {
          called = true;
          return 'held';
        },
        { tempDir: tempDir(t) },
      );
      // Each name as long as a part header allows (partHeaderLimit, 16 KiB), each value empty.
      const parts = Array.from({ length: 1000 }, (_, i) => [`Content-Disposition: form-data; name="${String(i).padStart(16_000, 'n')}"`, '']);
      const res = await post(url + '/', multipart(parts));
      assert.equal(res.status, 413, res.text);
      assert.equal(res.json.code, 'FUNCRUN_FIELD_TOO_LARGE');
      // The two settings are equal by default: either names the bound.
      assert.ok(['bodyLimit', 'fieldSizeLimit'].includes(res.json.setting), res.json.setting);
      assert.equal(res.json.limit, 1_048_576);
      assert.equal(called, false);
    });

    it("files' names and types count too: held with their files while the function runs", async (t) => {
      const { url } = await serve(t, (context) => ({ size: context.files[0].size }), { tempDir: tempDir(t), bodyLimit: 1000, fieldSizeLimit: 100 });
      const file = (filename, type = 'application/octet-stream') => [
        `Content-Disposition: form-data; name="f"; filename="${filename}"\r\nContent-Type: ${type}`,
        Buffer.alloc(5000),
      ];
      // The file's bytes are not held to the bound (they go to disk), its short names are within it.
      assert.deepEqual((await post(url + '/', multipart([file('a.bin')]))).json, { size: 5000 });
      for (const part of [file('a'.repeat(2000)), file('a.bin', `application/${'x'.repeat(2000)}`)]) {
        const res = await post(url + '/', multipart([part]));
        assert.equal(res.status, 413, res.text);
        assert.equal(res.json.code, 'FUNCRUN_FIELD_TOO_LARGE');
        assert.equal(res.json.setting, 'bodyLimit');
      }
    });

    it('fileSizeLimit follows uploadLimit unless set: raising one raises both', async (t) => {
      const { url } = await serve(t, (context) => ({ size: context.files[0].size }), { tempDir: tempDir(t), uploadLimit: 3000 });
      const res = await post(url + '/', multipart([['Content-Disposition: form-data; name="f"; filename="a"', Buffer.alloc(2500)]]));
      assert.deepEqual(res.json, { size: 2500 });
    });

    it('a file past filesLimit is TOO_MANY_FILES, however many fields came first', async (t) => {
      const { url } = await serve(t, () => 'never', { tempDir: tempDir(t), filesLimit: 2, fieldsLimit: 3 });
      const field = ['Content-Disposition: form-data; name="a"', '1'];
      const file = ['Content-Disposition: form-data; name="f"; filename="a"', 'x'];
      const res = await post(url + '/', multipart([field, field, field, file, file, file]));
      assert.equal(res.json.code, 'FUNCRUN_TOO_MANY_FILES');
    });

    it('a part header exactly at partHeaderLimit passes however the body is cut into writes', async (t) => {
      const { port } = await serve(t, (context, body) => body, { tempDir: tempDir(t), partHeaderLimit: 200 });
      const header = 'Content-Disposition: form-data; name="a"';
      const body = multipart([[header + `\r\nX-Pad: ${'p'.repeat(200 - header.length - 9)}`, 'v']]);
      for (const cut of [1, 2, 3, 4, 5, 6, 7, 8].map((n) => 5 + 200 + n - 4)) {
        const answer = await new Promise((resolve, reject) => {
          const req = http.request(
            { port, host: '127.0.0.1', method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': body.length } },
            (res) => {
              let text = '';
              res.on('data', (c) => (text += c));
              res.on('end', () => resolve({ status: res.statusCode, text }));
            },
          );
          req.on('error', reject);
          req.write(body.subarray(0, cut));
          setTimeout(() => req.end(body.subarray(cut)), 20);
        });
        assert.equal(answer.status, 200, `cut at ${cut}: ${answer.text}`);
      }
    });

    it('at the limit is within it', async (t) => {
      const { url } = await serve(t, (context, body) => ({ fields: body, size: context.files[0].size }), {
        tempDir: tempDir(t),
        fileSizeLimit: 100,
        fieldSizeLimit: 10,
        partHeaderLimit: 200,
      });
      const header = 'Content-Disposition: form-data; name="a"';
      const res = await post(
        url + '/',
        multipart([
          [header + `\r\nX-Pad: ${'p'.repeat(200 - header.length - 9)}`, 'x'.repeat(10)],
          ['Content-Disposition: form-data; name="f"; filename="a"', Buffer.alloc(100)],
        ]),
      );
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json, { fields: { a: 'x'.repeat(10) }, size: 100 });
    });

    it('fetch still sending a FormData over uploadLimit reads the 413, not a broken pipe', async (t) => {
      // In a process of its own, as a deployed server is: the client's writes and the close race as they do there.
      const folder = project({ 'index.js': "module.exports = () => 'never';" });
      t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
      const server = await runServing([folder], { env: { TMPDIR: tempDir(t), FUNC_UPLOAD_LIMIT: '10mb', FUNC_LOG_LEVEL: 'warn' } });
      t.after(() => server.stop());
      const { url } = server;
      const big = new Uint8Array(30_000_000);
      for (let i = 0; i < 5; i++) {
        const form = new FormData();
        form.append('f', new Blob([big]), 'big.bin');
        const res = await fetch(url + '/', { method: 'POST', body: form });
        assert.equal(res.status, 413);
        assert.equal((await res.json()).setting, 'uploadLimit');
      }
    });

    it('a Content-Length over uploadLimit is refused before the body is read', async (t) => {
      let called = false;
      const { port } = await serve(t, () => (called = true), { uploadLimit: 1000 });
      const answer = await new Promise((resolve, reject) => {
        const req = http.request(
          {
            port,
            host: '127.0.0.1',
            method: 'POST',
            headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': 5000, expect: '100-continue' },
          },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
          },
        );
        req.on('continue', () => reject(new Error('100 Continue was sent')));
        req.on('error', reject);
        req.flushHeaders();
      });
      assert.equal(answer.status, 413);
      assert.equal(answer.body.setting, 'uploadLimit');
      assert.equal(called, false);
    });
  });

  describe('malformed bodies: 400', () => {
    const cases = [
      ['no boundary', 'multipart/form-data', multipart([['Content-Disposition: form-data; name="a"', '1']])],
      ['two boundaries', 'multipart/form-data; boundary=x; boundary=y', multipart([['Content-Disposition: form-data; name="a"', '1']])],
      ['no closing boundary', undefined, multipart([['Content-Disposition: form-data; name="a"', '1']], { close: false })],
      ['a part in the middle of its header', undefined, Buffer.from('--x\r\nContent-Disposition: form-data; name="a"\r\n')],
      ['a part without a name', undefined, multipart([['Content-Disposition: form-data', '1']])],
      [
        'a part without a Content-Disposition',
        undefined,
        multipart([
          ['Content-Disposition: form-data; name="a"', '1'],
          ['Content-Type: text/plain', '2'],
        ]),
      ],
      ['a part that is an attachment', undefined, multipart([['Content-Disposition: attachment; name="a"', '1']])],
      ['a field that is not UTF-8', undefined, multipart([['Content-Disposition: form-data; name="a"', Buffer.from([0xff, 0xfe])]])],
      ['a part name that is not UTF-8', undefined, withByte('Content-Disposition: form-data; name="n', 0xff, '"')],
      ['a filename that is not UTF-8', undefined, withByte('Content-Disposition: form-data; name="f"; filename="', 0xfe, '.txt"')],
      ['a filename* whose escapes are not UTF-8', undefined, multipart([['Content-Disposition: form-data; name="f"; filename*=UTF-8\'\'%ff.txt', '1']])],
      [
        'a part Content-Type past ASCII',
        undefined,
        withByte('Content-Disposition: form-data; name="f"; filename="a.txt"\r\nContent-Type: te', 0xff, 'xt/plain'),
      ],
    ];
    for (const [what, type, body] of cases) {
      it(what, async (t) => {
        const { url } = await serve(t, () => 'never', { tempDir: tempDir(t) });
        const res = await post(url + '/', body, type);
        assert.equal(res.status, 400, res.text);
        assert.match(res.json.code, /^FUNCRUN_INVALID_(MULTIPART|TEXT)$/);
      });
    }

    it('names, filenames and types in UTF-8 arrive as sent', async (t) => {
      const { url } = await serve(t, describeFiles, { tempDir: tempDir(t) });
      const res = await post(
        url + '/',
        multipart([
          ['Content-Disposition: form-data; name="naïve"', 'v'],
          ['Content-Disposition: form-data; name="résumé"; filename="résumé ✓.txt"\r\nContent-Type: text/plain', 'f'],
          ['Content-Disposition: form-data; name="g"; filename*=UTF-8\'\'%C3%A9t%C3%A9.txt', 'g'],
        ]),
      );
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json.fields, { naïve: 'v' });
      assert.deepEqual(
        res.json.files.map((f) => [f.field, f.filename]),
        [
          ['résumé', 'résumé ✓.txt'],
          ['g', 'été.txt'],
        ],
      );
    });

    it('a boundary inside a quoted parameter is not a second boundary', async (t) => {
      const { url } = await serve(t, (context, body) => body, { tempDir: tempDir(t) });
      const res = await post(
        url + '/',
        multipart([['Content-Disposition: form-data; name="a"', '1']]),
        'multipart/form-data; note="; boundary=zzz"; boundary=x',
      );
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json, { a: '1' });
    });

    it('an empty multipart body is no fields, as an empty form is', async (t) => {
      const { url } = await serve(t, (context, body) => ({ fields: body, files: context.files.length }), { tempDir: tempDir(t) });
      const res = await post(url + '/', '');
      assert.deepEqual(res.json, { fields: {}, files: 0 });
    });

    it('a nested multipart part is data: a field or a file like any other', async (t) => {
      const { url } = await serve(t, describeFiles, { tempDir: tempDir(t) });
      const inner = '--y\r\nContent-Disposition: form-data; name="b"\r\n\r\n2\r\n--y--';
      const res = await post(
        url + '/',
        multipart([
          ['Content-Disposition: form-data; name="a"\r\nContent-Type: multipart/mixed; boundary=y', inner],
          ['Content-Disposition: form-data; name="f"; filename="n"\r\nContent-Type: multipart/mixed; boundary=y', inner],
        ]),
      );
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json.fields, { a: inner });
      assert.equal(res.json.files[0].type, 'multipart/mixed');
    });
  });

  describe('hostile shapes are answered in time linear in their size', () => {
    // Bounds that catch a quadratic blow-up (minutes), not a speed.
    it('a million empty parts: 413 once past the parts limit', async (t) => {
      const { url } = await serve(t, () => 'never', { tempDir: tempDir(t), uploadLimit: '20mb' });
      const body = Buffer.from('--x\r\n\r\n\r\n'.repeat(1_000_000) + '--x--\r\n');
      const started = Date.now();
      const res = await post(url + '/', body);
      assert.equal(res.status, 413);
      assert.equal(res.json.code, 'FUNCRUN_TOO_MANY_PARTS');
      assert.ok(Date.now() - started < 10_000);
    });

    it('100,000 empty parts within raised limits are parsed without blocking the event loop for long', async (t) => {
      const { url } = await serve(t, (context, body) => ({ fields: Object.keys(body).length }), {
        tempDir: tempDir(t),
        fieldsLimit: 200_000,
        uploadLimit: '20mb',
      });
      const body = Buffer.from(
        Array.from({ length: 100_000 }, (_, i) => `--x\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\n\r\n`).join('') + '--x--\r\n',
      );
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const res = await post(url + '/', body);
      delay.disable();
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json, { fields: 100_000 });
      // A bound that catches the body parsed in one go (seconds), not a speed.
      assert.ok(delay.max < 1e9, `the event loop was blocked ${Math.round(delay.max / 1e6)} ms`);
    });

    it('a header flood in one part: 413 partHeaderLimit', async (t) => {
      const { url } = await serve(t, () => 'never', { tempDir: tempDir(t) });
      const flood = Array.from({ length: 100_000 }, (_, i) => `X-${i}: v`).join('\r\n');
      const res = await post(url + '/', multipart([[`Content-Disposition: form-data; name="a"\r\n${flood}`, '1']]));
      assert.equal(res.status, 413);
      assert.equal(res.json.code, 'FUNCRUN_PART_HEADER_TOO_LARGE');
    });

    it('a header that never ends: 413 without reading the rest', async (t) => {
      const { url } = await serve(t, () => 'never', { tempDir: tempDir(t), uploadLimit: '50mb' });
      const body = Buffer.concat([Buffer.from('--x\r\nX: '), Buffer.alloc(20_000_000, 0x61)]);
      const res = await post(url + '/', body);
      assert.equal(res.status, 413);
      assert.equal(res.json.code, 'FUNCRUN_PART_HEADER_TOO_LARGE');
    });

    it('data full of near-boundaries, 8 MB of it, is one file', async (t) => {
      const { url } = await serve(t, (context) => ({ size: context.files[0].size }), { tempDir: tempDir(t), uploadLimit: '20mb' });
      const data = Buffer.from('\r\n--\r\n-x\r\n--'.repeat(700_000));
      const started = Date.now();
      const res = await post(url + '/', multipart([['Content-Disposition: form-data; name="f"; filename="a"', data]]));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json, { size: data.length });
      assert.ok(Date.now() - started < 10_000);
    });
  });

  it('with FUNC_COMPAT=faas-js-runtime the body is bytes, as faas-js-runtime gives it', async (t) => {
    const { url } = await serve(t, (context, body) => ({ isBuffer: Buffer.isBuffer(body), text: body.toString(), files: context.files.length }), {
      compat: 'faas-js-runtime',
    });
    const body = multipart([['Content-Disposition: form-data; name="a"', '1']]);
    const res = await post(url + '/', body);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { isBuffer: true, text: body.toString(), files: 0 });
  });

  it('a named function gets the fields as its input, the files on its context', async (t) => {
    const upload = (input, context) => ({ input, files: context.files.map((f) => f.filename) });
    const { url } = await serve(t, { functions: { upload } }, { tempDir: tempDir(t) });
    const form = new FormData();
    form.append('title', 'cat');
    form.append('photo', new Blob(['meow']), 'cat.png');
    const res = await request(url + '/upload', { method: 'POST', body: form });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { input: { title: 'cat' }, files: ['cat.png'] });
  });
});
