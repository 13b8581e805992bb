'use strict';
// The code caches of the bundle and the YAML parser (src/boot/code-cache.ts): written in the compile
// cache's folder after a start's first parse of func.yaml and its first answer, read by the next
// start, holding compiled code and never func.yaml's values, and giving the same copy of the file
// that require() gives; `funcrun cache` writes them for an image without running the function.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort, project, request, run, runServing, waitUntilListening } = require('./helpers');

const lib = path.join(__dirname, '..', 'lib');
const SECRET = 'v4lue-0f-a-s3cret-9c1e';

function functionWithSecret() {
  return project({
    'func.yaml': `name: cached\nrun:\n  envs:\n    - name: API_TOKEN\n      value: ${SECRET}\n`,
    'index.js': "module.exports = { handle: () => ({ token: process.env.API_TOKEN === undefined ? 'unset' : 'set' }) };\n",
  });
}

function cacheFolder(t) {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-code-cache-'));
  t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/** Starts the function with `env`, checks it answers with func.yaml's variable set, waits for the caches in `cache` (if given), and stops it. */
async function startOnce(t, folder, env, cache) {
  const proc = await runServing([folder], { env });
  try {
    const answer = await request(proc.url, {});
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, { token: 'set' });
    // The bundle's cache is written just after the first answer.
    for (let tries = 0; cache !== undefined && cacheFileIn(cache, 'runtime.js') === undefined; tries++) {
      assert.ok(tries < 100, 'the bundle’s cache is written after the first answer');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await proc.stop();
  }
}

/** `promise`, or a failure naming `what` when it takes longer than a start ever should: a hang, not a slow machine. */
function withinBound(promise, what, ms = 20_000) {
  let timer;
  const bound = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms)));
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** The cache file of `name` (node's, in its folder for this node and its flags), or undefined. */
function cacheFileIn(folder, name = 'yaml.js') {
  return filesUnder(folder).find((file) => path.basename(file) === `${name}.${process.version}-${process.arch}.v8cache`);
}

/** Every file under `folder`, by path. */
function filesUnder(folder) {
  return fs
    .readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

/** Removes what was kept of func.yaml (spec/func-yaml-cache.spec.js), so that the next start parses it with the YAML parser. */
function forgetFuncYaml(cache) {
  for (const file of filesUnder(cache).filter((name) => /^func-yaml\..*\.json$/.test(path.basename(name)))) fs.rmSync(file);
}

/** A function with a secret in its func.yaml, started once with a cache folder of its own: the cache files that start wrote. */
async function firstStart(t) {
  const cache = cacheFolder(t);
  const folder = functionWithSecret();
  t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
  await startOnce(t, folder, { NODE_COMPILE_CACHE: cache }, cache);
  return { cache, folder, files: ['yaml.js', 'runtime.js'].map((name) => cacheFileIn(cache, name)) };
}

describe('the code caches', () => {
  it("a start writes them beside node's compile cache, the next start reads them as they are, and no cached file holds func.yaml's values", async (t) => {
    const { cache, folder, files } = await firstStart(t);
    const first = files.map((file) => fs.statSync(file));
    for (const stat of first) assert.ok(stat.size > 10_000, `a cache of compiled code: ${stat.size} bytes`);
    // A cache V8 refused would be written again (a new file, renamed over the old one).
    await startOnce(t, folder, { NODE_COMPILE_CACHE: cache }, cache);
    files.forEach((file, i) => {
      const second = fs.statSync(file);
      assert.equal(second.ino, first[i].ino, `the second start kept the first start’s ${path.basename(file)}`);
      assert.equal(second.mtimeMs, first[i].mtimeMs);
    });
    for (const cached of filesUnder(cache)) {
      const bytes = fs.readFileSync(cached);
      for (const encoding of ['utf8', 'utf16le', 'latin1'])
        assert.equal(bytes.indexOf(Buffer.from(SECRET, encoding)), -1, `${cached} holds the value (${encoding})`);
      assert.equal(bytes.indexOf(Buffer.from(Buffer.from(SECRET).toString('base64').slice(0, 16))), -1, `${cached} holds the value (base64)`);
    }
  });

  it('an ESM function is imported by the bundle loaded with its cache', async (t) => {
    const cache = cacheFolder(t);
    const folder = project({ 'package.json': '{"type":"module"}', 'index.js': 'export const handle = () => ({ esm: true });\n', 'func.yaml': 'name: esm\n' });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    for (const start of ['first', 'second']) {
      const proc = await runServing([folder], { env: { NODE_COMPILE_CACHE: cache } });
      try {
        assert.deepEqual((await request(proc.url, {})).json, { esm: true }, `${start} start`);
        // The second start reads the cache the first one wrote after its answer.
        for (let tries = 0; start === 'first' && cacheFileIn(cache, 'runtime.js') === undefined; tries++) {
          assert.ok(tries < 100, 'the bundle’s cache is written');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        await proc.stop();
      }
    }
  });

  it('a cache V8 refuses (damaged, or made by another node) is replaced, and the start goes on', async (t) => {
    const { cache, folder, files } = await firstStart(t);
    const garbage = Buffer.alloc(4096, 0x5a);
    for (const file of files) fs.writeFileSync(file, garbage);
    forgetFuncYaml(cache);
    await startOnce(t, folder, { NODE_COMPILE_CACHE: cache });
    // The bundle's is written again just after the first answer.
    for (let tries = 0; fs.readFileSync(files[1]).equals(garbage); tries++) {
      assert.ok(tries < 100, 'the damaged cache of the bundle is replaced');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const file of files) {
      const written = fs.readFileSync(file);
      assert.notDeepEqual(written, garbage);
      assert.ok(written.length > 10_000);
    }
    assert.deepEqual(
      filesUnder(cache).filter((name) => /\.v8cache\.\d+$/.test(name)),
      [],
      'no partial file left behind',
    );
  });

  // A start that read what is at a cache's path unbounded would block on a FIFO, or fill its memory
  // from /dev/zero or a huge file; this bound is far above a start's own.
  const PEAK_RSS_LIMIT = 256 * 1024 * 1024;
  for (const [kind, put] of [
    ['a FIFO', (file) => execFileSync('mkfifo', [file])],
    ['a link to /dev/zero', (file) => fs.symlinkSync('/dev/zero', file)],
    [
      'a file of 1 GiB (sparse)',
      (file) => {
        fs.writeFileSync(file, '');
        fs.truncateSync(file, 1024 ** 3);
      },
    ],
  ]) {
    it(
      `${kind} at a cache's path is no cache: the start serves without reading it, then replaces it with a cache`,
      { skip: process.platform !== 'linux' && 'Linux: mkfifo, /dev/zero and /proc' },
      async (t) => {
        const { cache, folder, files } = await firstStart(t);
        for (const file of files) {
          fs.rmSync(file);
          put(file);
        }
        forgetFuncYaml(cache);
        const port = await freePort();
        const proc = run([folder, '--port', String(port), '--host', '127.0.0.1'], { env: { NODE_COMPILE_CACHE: cache } });
        t.after(() => proc.child.kill('SIGKILL'));
        await withinBound(waitUntilListening(port, proc), 'the start');
        proc.url = `http://127.0.0.1:${port}`;
        try {
          const answer = await withinBound(request(proc.url, {}), 'the answer');
          assert.equal(answer.status, 200);
          assert.deepEqual(answer.json, { token: 'set' });
          // Replaced once the parser has parsed func.yaml and the bundle has sent its first answer.
          for (let tries = 0; !files.every((file) => fs.lstatSync(file).isFile() && fs.statSync(file).size < 10 * 1024 * 1024); tries++) {
            assert.ok(tries < 100, `both caches are written over ${kind}`);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          const peak = Number(/^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${proc.child.pid}/status`, 'utf8'))[1]) * 1024;
          assert.ok(peak < PEAK_RSS_LIMIT, `peak RSS ${peak} bytes`);
        } finally {
          await proc.stop();
        }
      },
    );
  }

  it('a file changed to another of the same length runs as it is now, not as its cache was made', (t) => {
    const cache = cacheFolder(t);
    const file = path.join(cache, 'module.js');
    const script = `const c = require(${JSON.stringify(path.join(lib, 'boot', 'code-cache.js'))}); c.useCodeCache(${JSON.stringify(cache)});
      const m = c.requireCached(${JSON.stringify(file)}); c.keepCompiled(${JSON.stringify(file)}); console.log(m.value);`;
    const run = () => execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim();
    fs.writeFileSync(file, 'module.exports = { value: 1 };\n');
    assert.equal(run(), '1');
    assert.equal(run(), '1', 'from its cache');
    fs.writeFileSync(file, 'module.exports = { value: 2 };\n');
    assert.equal(run(), '2');
    assert.equal(run(), '2', 'from its new cache');
  });

  it("a cache whose V8 data was damaged is not used (V8 checks the data's length, not its bytes), and is written again", (t) => {
    const cache = cacheFolder(t);
    const file = path.join(cache, 'module.js');
    const cacheFile = path.join(cache, `module.js.${process.version}-${process.arch}.v8cache`);
    const script = `const c = require(${JSON.stringify(path.join(lib, 'boot', 'code-cache.js'))}); c.useCodeCache(${JSON.stringify(cache)});
      const m = c.requireCached(${JSON.stringify(file)}); c.keepCompiled(${JSON.stringify(file)}); console.log(m.value);`;
    const run = () => execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim();
    fs.writeFileSync(file, "module.exports = { value: 'kept-as-written' };\n");
    assert.equal(run(), 'kept-as-written');
    // One byte of V8's data changed: the string as V8 keeps it, after the code the file holds.
    const kept = fs.readFileSync(cacheFile);
    const at = kept.indexOf('kept-as-written', 4 + kept.readUInt32LE(0));
    assert.ok(at > 0, 'V8 keeps the string in its data');
    kept[at] = 'K'.charCodeAt(0);
    fs.writeFileSync(cacheFile, kept);
    assert.equal(run(), 'kept-as-written');
    assert.notDeepEqual(fs.readFileSync(cacheFile), kept, 'the damaged cache is replaced');
    assert.equal(run(), 'kept-as-written', 'from its new cache');
  });

  it('a cache that cannot be written (a folder in its place) leaves no partial file behind', (t) => {
    const cache = cacheFolder(t);
    const file = path.join(cache, 'module.js');
    fs.writeFileSync(file, 'module.exports = { value: 1 };\n');
    fs.mkdirSync(path.join(cache, `module.js.${process.version}-${process.arch}.v8cache`));
    const script = `const c = require(${JSON.stringify(path.join(lib, 'boot', 'code-cache.js'))}); c.useCodeCache(${JSON.stringify(cache)});
      const m = c.requireCached(${JSON.stringify(file)}); c.keepCompiled(${JSON.stringify(file)}); console.log(m.value);`;
    for (let start = 0; start < 2; start++) assert.equal(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim(), '1');
    assert.deepEqual(fs.readdirSync(cache).sort(), ['module.js', `module.js.${process.version}-${process.arch}.v8cache`]);
  });

  it("in funcrun's own folder (lib/.cache) they sit in node's folder for this node, its flags and its user, as under NODE_COMPILE_CACHE", (t) => {
    // A copy of the two files, so that its lib/.cache is the test's own.
    const copy = cacheFolder(t);
    fs.mkdirSync(path.join(copy, 'boot'));
    for (const name of ['compile-cache.js', 'code-cache.js']) fs.copyFileSync(path.join(lib, 'boot', name), path.join(copy, 'boot', name));
    const file = path.join(copy, 'module.js');
    fs.writeFileSync(file, 'module.exports = { value: 1 };\n');
    const script = `require(${JSON.stringify(path.join(copy, 'boot', 'compile-cache.js'))}); const c = require(${JSON.stringify(path.join(copy, 'boot', 'code-cache.js'))});
      c.requireCached(${JSON.stringify(file)}); c.keepCompiled(${JSON.stringify(file)}); console.log(require('node:module').getCompileCacheDir());`;
    const env = { ...process.env };
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    const nodeFolder = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', env }).trim();
    assert.notEqual(nodeFolder, path.join(copy, '.cache'), "node's folder is one inside the folder it is given");
    assert.deepEqual(
      filesUnder(path.join(copy, '.cache')).filter((name) => name.endsWith('.v8cache')),
      [path.join(nodeFolder, `module.js.${process.version}-${process.arch}.v8cache`)],
    );
  });

  it('with NODE_DISABLE_COMPILE_CACHE=1 none is read or written', async (t) => {
    const cache = cacheFolder(t);
    const folder = functionWithSecret();
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    await startOnce(t, folder, { NODE_COMPILE_CACHE: cache, NODE_DISABLE_COMPILE_CACHE: '1' });
    assert.deepEqual(
      filesUnder(cache).filter((file) => file.endsWith('.v8cache')),
      [],
    );
  });

  it('a file loaded through it is the copy require() gives, whichever comes first', (t) => {
    const cache = cacheFolder(t);
    const codeCache = JSON.stringify(path.join(lib, 'boot', 'code-cache.js'));
    const yaml = JSON.stringify(path.join(lib, 'yaml.js'));
    for (const order of ['cached first', 'require first']) {
      const script = `const c = require(${codeCache}); c.useCodeCache(${JSON.stringify(cache)});
        const [a, b] = ${order === 'cached first' ? `[c.requireCached(${yaml}), require(${yaml})]` : `[require(${yaml}), c.requireCached(${yaml})]`};
        console.log(JSON.stringify({ same: a === b, parsed: a.parse('a: [1, 2]') }));`;
      const out = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' });
      assert.deepEqual(JSON.parse(out), { same: true, parsed: { a: [1, 2] } }, order);
    }
  });
});

describe('funcrun cache', () => {
  const cli = path.join(lib, 'tools', 'cli.js');
  const cacheCommand = (cwd, env) => spawnSync(process.execPath, [cli, 'cache'], { cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });

  it("writes the caches a start then reads as they are, runs none of the project's code, and holds no value of its settings or the environment", async (t) => {
    const cache = cacheFolder(t);
    const folder = functionWithSecret();
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    // The project's code would leave a file behind if it ran.
    const marker = path.join(folder, 'loaded');
    fs.appendFileSync(path.join(folder, 'index.js'), `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`);
    const made = cacheCommand(folder, { NODE_COMPILE_CACHE: cache, FUNC_SECRET_SETTING: SECRET });
    assert.equal(made.status, 0, made.stderr);
    const files = ['yaml.js', 'runtime.js'].map((name) => cacheFileIn(cache, name));
    assert.ok(
      files.every((file) => file !== undefined),
      `both caches: ${filesUnder(cache).join(', ')}`,
    );
    assert.equal(made.stdout, `funcrun: the code caches are in ${path.dirname(files[0])}\n`);
    assert.equal(fs.existsSync(marker), false, "the project's code did not run");
    for (const cached of filesUnder(cache)) {
      const bytes = fs.readFileSync(cached);
      for (const encoding of ['utf8', 'utf16le', 'latin1']) assert.equal(bytes.indexOf(Buffer.from(SECRET, encoding)), -1, `${cached} (${encoding})`);
    }
    // A start of the project reads them as they are: a cache V8 refused would be written again.
    const before = files.map((file) => fs.statSync(file));
    await startOnce(t, folder, { NODE_COMPILE_CACHE: cache });
    files.forEach((file, i) => assert.equal(fs.statSync(file).ino, before[i].ino, `the start kept ${path.basename(file)}`));
  });

  it('fails with exit code 1, saying why, where the caches cannot be written', (t) => {
    const cache = cacheFolder(t);
    const off = cacheCommand(lib, { NODE_COMPILE_CACHE: cache, NODE_DISABLE_COMPILE_CACHE: '1' });
    assert.equal(off.status, 1);
    assert.match(off.stderr, /^funcrun: node's compile cache is off \(NODE_DISABLE_COMPILE_CACHE\) or its folder cannot be written/);
    assert.deepEqual(filesUnder(cache), []);
    const refused = spawnSync(process.execPath, [cli, 'cache', 'now'], { encoding: 'utf8' });
    assert.equal(refused.status, 2, refused.stderr);
  });

  it('refuses a func.yaml whose run.envs hold a value serve would refuse: exit code 2, before the image is built to crash at its start', (t) => {
    const cache = cacheFolder(t);
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-cache-envs-'));
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    fs.writeFileSync(path.join(folder, 'index.js'), 'module.exports = () => 1;\n');
    const funcYaml = (value) => `specVersion: 0.36.0\nname: f\nruntime: node\nrun:\n  envs:\n    - name: FUNC_LOG_LEVEL\n      value: ${value}\n`;
    fs.writeFileSync(path.join(folder, 'func.yaml'), funcYaml('loud'));
    const refused = cacheCommand(folder, { NODE_COMPILE_CACHE: cache });
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /^funcrun: .*unknown log level 'loud'/);
    // A reference is resolved where the function runs: not checked here.
    fs.writeFileSync(path.join(folder, 'func.yaml'), funcYaml("'{{ env:LEVEL }}'"));
    assert.equal(cacheCommand(folder, { NODE_COMPILE_CACHE: cache }).status, 0);
  });
});
