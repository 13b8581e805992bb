'use strict';
// The server's folder of temporary upload files: made again when something removes it, a budget
// of bytes on disk across requests (and a full disk) answered 503 with Retry-After, and the
// folders of funcrun processes killed without removing theirs swept by a later one.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { serve, request, project, runServing, freePort, waitUntilListening } = require('./helpers');

const SERVE = path.join(__dirname, '..', 'lib', 'serve.js');
const sha = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

/** A folder removed after the test. */
function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-spec-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every file under `dir`, at any depth. */
function filesUnder(dir) {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
}

/** The upload folders under `dir`. */
const foldersIn = (dir) => fs.readdirSync(dir).filter((name) => name.startsWith('funcrun-uploads-'));

/** Waits until `check()` is true (a bound that catches a hang, not a speed). */
async function eventually(check, what) {
  const until = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > until) assert.fail(`not within 10s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function form(bytes, name = 'a.bin') {
  const f = new FormData();
  f.append('f', new Blob([bytes]), name);
  return f;
}

// What the function read of its file.
const readFile = async (context) => {
  const bytes = await context.files[0].bytes();
  return { size: bytes.length, sha: sha(bytes) };
};

/** Starts a multipart body with a file of `size` bytes announced, sends `sent` of them, and leaves it open. */
function uploadOpen(t, port, { size = 10_000_000, sent = 100_000 } = {}) {
  const req = http.request({
    port,
    host: '127.0.0.1',
    method: 'POST',
    headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': size },
  });
  req.on('error', () => {});
  req.write(Buffer.concat([Buffer.from('--x\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\n'), Buffer.alloc(sent, 7)]));
  t.after(() => req.destroy());
  return req;
}

// A user namespace where this process may mount (root, or unprivileged user namespaces allowed).
const namespaces = spawnSync('unshare', ['-rm', '-pf', 'true']).status === 0;
const noNamespaces = !namespaces && 'unshare cannot make a user namespace here (needs root or unprivileged user namespaces)';

describe('the temporary upload folder', () => {
  it('a folder a temporary-file cleaner removed is made again: the next upload past the memory limit is answered 200', async (t) => {
    const dir = tempDir(t);
    const { url } = await serve(t, readFile, { tempDir: dir, fileMemoryLimit: 1000 });
    const first = crypto.randomBytes(50_000);
    assert.deepEqual((await request(url + '/', { method: 'POST', body: form(first) })).json, { size: first.length, sha: sha(first) });
    const [made] = foldersIn(dir);
    assert.match(made, new RegExp(`^funcrun-uploads-${process.pid}-[A-Za-z0-9]{6}$`), 'the name carries the process id');
    // What tmpreaper or systemd-tmpfiles does to a folder it finds idle.
    fs.rmSync(path.join(dir, made), { recursive: true });
    const second = crypto.randomBytes(50_000);
    const res = await request(url + '/', { method: 'POST', body: form(second) });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { size: second.length, sha: sha(second) });
    const [again] = foldersIn(dir);
    assert.notEqual(again, made);
    assert.equal(fs.statSync(path.join(dir, again)).mode & 0o777, 0o700);
    assert.deepEqual(filesUnder(dir), [], 'its file removed, as any');
  });

  describe('uploadDiskLimit: the bytes of temporary files held at once, across requests', () => {
    it('an upload that would pass it is 503 with Retry-After while another holds the files; once that one ends, uploads pass again', async (t) => {
      const dir = tempDir(t);
      let release;
      const held = new Promise((resolve) => (release = resolve));
      let calledBack;
      const called = new Promise((resolve) => (calledBack = resolve));
      const { url } = await serve(
        t,
        async (context) => {
          if (context.query.hold) {
            calledBack();
            await held;
          }
          return readFile(context);
        },
        { tempDir: dir, fileMemoryLimit: 1000, uploadDiskLimit: 300_000 },
      );
      const first = crypto.randomBytes(200_000);
      const holding = request(url + '/?hold=1', { method: 'POST', body: form(first) });
      await called;
      const refused = await request(url + '/', { method: 'POST', body: form(crypto.randomBytes(200_000)) });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json.code, 'FUNCRUN_UPLOAD_DISK_FULL');
      assert.match(refused.headers.get('retry-after'), /^[1-9]\d*$/);
      assert.equal(filesUnder(dir).length, 1, "the refused upload's file is removed before its answer; the first's stays");
      release();
      assert.deepEqual((await holding).json, { size: first.length, sha: sha(first) });
      // The first's bytes are given back once its file is removed: the same upload now passes, twice over.
      for (let i = 0; i < 2; i++) {
        const bytes = crypto.randomBytes(200_000);
        assert.deepEqual((await request(url + '/', { method: 'POST', body: form(bytes) })).json, { size: bytes.length, sha: sha(bytes) });
      }
      assert.deepEqual(filesUnder(dir), []);
    });

    it('bytes of requests that fail are given back too: a client gone mid-file, a file over its limit', async (t) => {
      const dir = tempDir(t);
      const { url, port } = await serve(t, readFile, { tempDir: dir, fileMemoryLimit: 1000, uploadDiskLimit: 300_000, fileSizeLimit: 250_000 });
      const gone = uploadOpen(t, port, { sent: 200_000 });
      await eventually(() => filesUnder(dir).length === 1, 'the file spilled');
      gone.destroy();
      await eventually(() => filesUnder(dir).length === 0, 'its file removed');
      assert.equal((await request(url + '/', { method: 'POST', body: form(crypto.randomBytes(260_000)) })).json.code, 'FUNCRUN_FILE_TOO_LARGE');
      const bytes = crypto.randomBytes(240_000);
      assert.deepEqual((await request(url + '/', { method: 'POST', body: form(bytes) })).json, { size: bytes.length, sha: sha(bytes) });
    });

    it('a file returned as the answer holds its bytes until the answer is done with, however slowly its client reads', async (t) => {
      const dir = tempDir(t);
      let answering = 0;
      const { url, port } = await serve(
        t,
        (context) => {
          answering++;
          return context.files[0].stream();
        },
        { tempDir: dir, fileMemoryLimit: 1000, uploadDiskLimit: 41_000_000 },
      );
      // A client that sends the file and never reads its answer: the file, removed from the
      // folder, stays on the disk behind the stream that sends it.
      const probe = new Request('http://x/', { method: 'POST', body: form(crypto.randomBytes(40_000_000)) });
      const payload = Buffer.from(await probe.arrayBuffer());
      const socket = require('node:net').connect(port, '127.0.0.1');
      t.after(() => socket.destroy());
      socket.on('error', () => {});
      socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-type: ${probe.headers.get('content-type')}\r\ncontent-length: ${payload.length}\r\n\r\n`);
      socket.write(payload);
      socket.pause();
      await eventually(() => answering === 1 && filesUnder(dir).length === 0, 'the file answered, and removed from the folder');
      const refused = await request(url + '/', { method: 'POST', body: form(crypto.randomBytes(2_000_000)) });
      assert.equal(refused.status, 503, 'the stuck answer still holds its 40 MB of the budget');
      assert.equal(refused.json.code, 'FUNCRUN_UPLOAD_DISK_FULL');
      socket.destroy();
      let passed;
      for (let i = 0; i < 100 && passed === undefined; i++) {
        const res = await request(url + '/', { method: 'POST', body: form(crypto.randomBytes(2_000_000)) });
        if (res.status === 200) passed = res;
        else await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(passed, 'once its client is gone, the budget is whole again');
    });

    it('files held in memory do not count against it', async (t) => {
      const { url } = await serve(t, (context) => ({ files: context.files.length }), { tempDir: tempDir(t), fileMemoryLimit: 10_000, uploadDiskLimit: 5000 });
      const f = new FormData();
      for (let i = 0; i < 5; i++) f.append('f', new Blob([Buffer.alloc(9000)]), `${i}.bin`);
      assert.deepEqual((await request(url + '/', { method: 'POST', body: f })).json, { files: 5 });
    });
  });

  it(
    'a full disk (ENOSPC, a 256 KiB tmpfs) is 503 with Retry-After, never a 500; once the file is removed there is room again',
    { skip: noNamespaces },
    async (t) => {
      const mount = tempDir(t);
      const folder = project({ 'index.js': `module.exports = async (context) => ({ size: (await context.files[0].bytes()).length });` });
      t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
      const port = await freePort();
      // The tmpfs exists only in the server's own mount namespace, over `mount`, its TMPDIR.
      const child = spawn(
        'unshare',
        [
          '-rm',
          'sh',
          '-c',
          'mount -t tmpfs -o size=256k funcrun-spec "$0" && exec "$@"',
          mount,
          process.execPath,
          SERVE,
          folder,
          '--port',
          String(port),
          '--host',
          '127.0.0.1',
        ],
        { env: { ...process.env, TMPDIR: mount, FUNC_FILE_MEMORY_LIMIT: '1000', FUNC_LOG_LEVEL: 'error' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (out += c));
      t.after(() => child.kill('SIGKILL'));
      await waitUntilListening(port, { child, out: { stdout: out, stderr: '' } });
      const url = `http://127.0.0.1:${port}`;
      const full = await request(url + '/', { method: 'POST', body: form(crypto.randomBytes(400_000)) });
      assert.equal(full.status, 503, full.text);
      assert.equal(full.json.code, 'FUNCRUN_UPLOAD_DISK_FULL');
      assert.match(full.headers.get('retry-after'), /^[1-9]\d*$/);
      assert.match(out, /ENOSPC/, 'the reason is in the log');
      // 200 KB fits only once the refused upload's partial file (which filled the disk) is gone.
      assert.deepEqual((await request(url + '/', { method: 'POST', body: form(crypto.randomBytes(200_000)) })).json, { size: 200_000 });
    },
  );

  describe('folders left by a process that was killed are removed when a later server first needs its own', () => {
    // A function that holds its request forever: its upload's file stays until the process dies.
    const HOLDING = 'module.exports = () => new Promise(() => {});';

    async function killedWithFile(t, dir) {
      const folder = project({ 'index.js': HOLDING });
      t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
      const server = await runServing([folder], { env: { TMPDIR: dir, FUNC_FILE_MEMORY_LIMIT: '1000', FUNC_LOG_LEVEL: 'warn' } });
      t.after(() => server.stop('SIGKILL'));
      return { server, folder };
    }

    it("a dead process's folder goes; a live process's, links, files and other names stay", async (t) => {
      const dir = tempDir(t);
      // Both make their folders while both live (each sweeps then, and finds the other alive).
      const { server: dead } = await killedWithFile(t, dir);
      uploadOpen(t, dead.port);
      await eventually(() => filesUnder(dir).length === 1, "the first one's file spilled");
      const [orphan] = foldersIn(dir);
      assert.match(orphan, new RegExp(`^funcrun-uploads-${dead.child.pid}-`));
      const { server: live } = await killedWithFile(t, dir);
      uploadOpen(t, live.port);
      await eventually(() => filesUnder(dir).length === 2, "the second one's file spilled");
      const [liveFolder] = foldersIn(dir).filter((name) => name !== orphan);
      assert.match(liveFolder, new RegExp(`^funcrun-uploads-${live.child.pid}-`));
      dead.child.kill('SIGKILL');
      await dead.exited;

      // Named as the dead process's would be, but none of them a folder it made.
      const outside = tempDir(t);
      fs.writeFileSync(path.join(outside, 'keep.txt'), 'mine');
      const kept = [
        `funcrun-uploads-${dead.child.pid}-linked`,
        `funcrun-uploads-${dead.child.pid}-afile0`,
        'funcrun-uploads-Ab12Cd',
        `funcrun-uploads-${dead.child.pid}-x`,
      ];
      fs.symlinkSync(outside, path.join(dir, kept[0]));
      fs.writeFileSync(path.join(dir, kept[1]), 'a file');
      fs.mkdirSync(path.join(dir, kept[2]));
      fs.mkdirSync(path.join(dir, kept[3]));
      // Another user's folder, when this process can make one.
      if (process.getuid() === 0) {
        kept.push(`funcrun-uploads-${dead.child.pid}-others`);
        fs.mkdirSync(path.join(dir, kept.at(-1)));
        fs.chownSync(path.join(dir, kept.at(-1)), 4242, 4242);
      }

      // Nothing is swept before the first file past the memory limit.
      const { url } = await serve(t, readFile, { tempDir: dir, fileMemoryLimit: 1000 });
      assert.equal((await request(url + '/', { method: 'POST', body: form(Buffer.alloc(500)) })).json.size, 500);
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(fs.existsSync(path.join(dir, orphan)), 'no scan while no folder is needed');

      const bytes = crypto.randomBytes(50_000);
      assert.deepEqual((await request(url + '/', { method: 'POST', body: form(bytes) })).json, { size: bytes.length, sha: sha(bytes) });
      await eventually(() => !fs.existsSync(path.join(dir, orphan)), "the dead process's folder removed");
      assert.ok(fs.existsSync(path.join(dir, liveFolder)), "the live process's folder is kept");
      assert.equal(filesUnder(path.join(dir, liveFolder)).length, 1, 'with its file');
      for (const name of kept) assert.ok(fs.lstatSync(path.join(dir, name)), `${name} is kept`);
      assert.equal(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8'), 'mine', 'a link is never followed');
    });

    it('a restarted container: funcrun is pid 1 again, and the folder its killed predecessor (pid 1 too) left goes', { skip: noNamespaces }, async (t) => {
      const dir = tempDir(t);
      const folder = project({
        'index.js': `module.exports = async (context) => context.query.hold ? new Promise(() => {}) : ({ size: context.files[0].size });`,
      });
      t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
      // Each run in a pid namespace of its own, where node is pid 1; killing unshare kills it.
      const asPidOne = async () => {
        const port = await freePort();
        const child = spawn('unshare', ['-rpf', '--kill-child', process.execPath, SERVE, folder, '--port', String(port), '--host', '127.0.0.1'], {
          env: { ...process.env, TMPDIR: dir, FUNC_FILE_MEMORY_LIMIT: '1000', FUNC_LOG_LEVEL: 'warn' },
          stdio: 'ignore',
        });
        const exited = new Promise((resolve) => child.on('close', resolve));
        t.after(() => child.kill('SIGKILL'));
        await waitUntilListening(port, { child, out: { stdout: '', stderr: '' } });
        return { port, child, exited };
      };
      const first = await asPidOne();
      uploadOpen(t, first.port);
      await eventually(() => filesUnder(dir).length === 1, 'the file spilled');
      const [orphan] = foldersIn(dir);
      assert.match(orphan, /^funcrun-uploads-1-/);
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await asPidOne();
      const res = await request(`http://127.0.0.1:${second.port}/`, { method: 'POST', body: form(Buffer.alloc(5000)) });
      assert.deepEqual(res.json, { size: 5000 });
      await eventually(() => !fs.existsSync(path.join(dir, orphan)), "the predecessor's folder removed");
      const [own] = foldersIn(dir);
      assert.match(own, /^funcrun-uploads-1-/, 'its own folder, made after it started, is kept');
      // And it is in use: another upload held open spills into it.
      uploadOpen(t, second.port);
      await eventually(() => filesUnder(path.join(dir, own)).length === 1, 'the held file spilled into its own folder');
    });
  });
});
