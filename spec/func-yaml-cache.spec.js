'use strict';
// What a start read from func.yaml, kept beside the code caches (src/start/func-yaml-cache.ts): the
// next start of the same text reads it instead of loading the YAML parser; a changed or damaged
// file or record is read again; the record holds no value of run.envs, only where each is written.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { project, runServing } = require('./helpers');

const LIB = path.join(__dirname, '..', 'lib');
const SECRET = 'pl41n-s3cret-value-7d2a';

// Preloaded into the server: at exit, whether its process loaded the YAML parser.
const RECORDER = `process.on('exit', () => {
  require('node:fs').writeFileSync(process.env.LOADS_FILE, JSON.stringify(Object.keys(require.cache).some((f) => f.endsWith('yaml.js'))));
});\n`;

function setUp(t, funcYaml) {
  const folder = project({
    'func.yaml': funcYaml,
    'index.js': 'module.exports = { handle: () => ({ token: process.env.API_TOKEN, mode: process.env.MODE }) };\n',
    'recorder.cjs': RECORDER,
  });
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-func-yaml-cache-'));
  t.after(() => {
    fs.rmSync(folder, { recursive: true, force: true });
    fs.rmSync(cache, { recursive: true, force: true });
  });
  return { folder, cache };
}

/** One start: what the function answered and whether the YAML parser was loaded. */
async function start(folder, cache) {
  const loadsFile = path.join(cache, 'loads.json');
  const proc = await runServing([folder], {
    env: { NODE_COMPILE_CACHE: cache, LOADS_FILE: loadsFile },
    execArgv: ['--require', path.join(folder, 'recorder.cjs')],
  });
  let json;
  try {
    json = await (await fetch(proc.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json();
  } finally {
    await proc.stop();
  }
  return { answer: json, parsed: JSON.parse(fs.readFileSync(loadsFile, 'utf8')) };
}

function records(cache) {
  return fs
    .readdirSync(cache, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /^func-yaml\..*\.json$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name));
}

const yamlWith = (token, mode = 'fast') => `name: kept\nrun:\n  envs:\n    - name: API_TOKEN\n      value: ${token}\n    - name: MODE\n      value: ${mode}\n`;

describe('what func.yaml says, kept for the next start', () => {
  it('the second start of the same func.yaml reads the record, not the YAML parser, and gets the same values', async (t) => {
    const { folder, cache } = setUp(t, yamlWith(SECRET));
    const first = await start(folder, cache);
    assert.deepEqual(first, { answer: { token: SECRET, mode: 'fast' }, parsed: true });
    const [record] = records(cache);
    assert.ok(record !== undefined, 'a record is written');
    const second = await start(folder, cache);
    assert.deepEqual(second, { answer: { token: SECRET, mode: 'fast' }, parsed: false });
  });

  it('holds no value of run.envs, in any encoding: their places in the file', async (t) => {
    const { folder, cache } = setUp(t, yamlWith(SECRET));
    await start(folder, cache);
    const bytes = fs.readFileSync(records(cache)[0]);
    for (const encoding of ['utf8', 'utf16le', 'latin1', 'hex']) assert.equal(bytes.indexOf(Buffer.from(SECRET).toString(encoding)), -1, encoding);
    assert.equal(bytes.indexOf(Buffer.from(SECRET).toString('base64').slice(0, 16)), -1, 'base64');
    assert.equal(bytes.indexOf('fast'), -1, 'the other value');
  });

  it('a func.yaml changed to another text of the same length is read again, and its record replaced', async (t) => {
    const { folder, cache } = setUp(t, yamlWith(SECRET));
    await start(folder, cache);
    // A value of the same length, then a value whose quotes change what it is.
    fs.writeFileSync(path.join(folder, 'func.yaml'), yamlWith(SECRET.replace('7', '8')));
    assert.deepEqual(await start(folder, cache), { answer: { token: SECRET.replace('7', '8'), mode: 'fast' }, parsed: true });
    fs.writeFileSync(path.join(folder, 'func.yaml'), yamlWith(SECRET.replace('7', '8'), '"ab"'));
    assert.deepEqual(await start(folder, cache), { answer: { token: SECRET.replace('7', '8'), mode: 'ab' }, parsed: true });
    assert.deepEqual(await start(folder, cache), { answer: { token: SECRET.replace('7', '8'), mode: 'ab' }, parsed: false });
  });

  it('a damaged record is not used (a place changed by one digit): the file is read again', async (t) => {
    const { folder, cache } = setUp(t, yamlWith(SECRET));
    await start(folder, cache);
    const [record] = records(cache);
    const text = fs.readFileSync(record, 'utf8');
    const damaged = text.replace(/"at\\":\[(\d+)/, (all, n) => all.replace(n, String(Number(n) + 1)));
    assert.notEqual(damaged, text);
    fs.writeFileSync(record, damaged);
    assert.deepEqual(await start(folder, cache), { answer: { token: SECRET, mode: 'fast' }, parsed: true });
    for (const junk of ['', '{', 'null', '{"file":1}', '[]']) {
      fs.writeFileSync(record, junk);
      assert.deepEqual(await start(folder, cache), { answer: { token: SECRET, mode: 'fast' }, parsed: true }, junk);
    }
  });

  it('a record holding what no parse gives (a place outside the text, a bad name or probe path) is not used, however it was written', async (t) => {
    const { folder, cache } = setUp(t, yamlWith(SECRET));
    await start(folder, cache);
    const [record] = records(cache);
    const written = JSON.parse(fs.readFileSync(record, 'utf8'));
    const kept = JSON.parse(written.kept);
    // Its own digest made again, as whoever forges one would: the check below is of what it says.
    const digestOf = (text) => {
      let h1 = 0xdeadbeef;
      let h2 = 0x41c6ce57;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        h1 = Math.imul(h1 ^ c, 2654435761);
        h2 = Math.imul(h2 ^ c, 1597334677);
      }
      h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
      h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
      h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
      h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
      return 4294967296 * (2097151 & h2) + (h1 >>> 0);
    };
    const forged = (change) => {
      const json = JSON.stringify(change(structuredClone(kept)));
      fs.writeFileSync(record, JSON.stringify({ ...written, kept: json, check: digestOf(json) }));
    };
    forged((k) => k);
    assert.deepEqual(await start(folder, cache), { answer: { token: SECRET, mode: 'fast' }, parsed: false }, 'a record made again as funcrun makes it is used');
    for (const change of [
      (k) => ((k.envs[0].at = [-5, -1]), k),
      (k) => ((k.envs[0].at = [9999, 10000]), k),
      (k) => ((k.envs[0].at = ['a', 'b']), k),
      (k) => ((k.envs[0].name = '1 bad name'), k),
      (k) => ((k.liveness = 'noslash'), k),
      (k) => ((k.logLevel = 'loud'), k),
      (k) => ((k.envs = 'x'), k),
    ]) {
      forged(change);
      assert.deepEqual(await start(folder, cache), { answer: { token: SECRET, mode: 'fast' }, parsed: true }, String(change));
    }
  });

  it('a value not written as it reads (an escape) keeps no record: the file is parsed at every start', async (t) => {
    const { folder, cache } = setUp(t, yamlWith('"tab\\there"'));
    assert.deepEqual(await start(folder, cache), { answer: { token: 'tab\there', mode: 'fast' }, parsed: true });
    assert.deepEqual(records(cache), []);
    assert.deepEqual(await start(folder, cache), { answer: { token: 'tab\there', mode: 'fast' }, parsed: true });
  });

  it('funcrun cache keeps the record of the func.yaml in its folder, and none of its own project', async (t) => {
    const { folder, cache } = setUp(t, yamlWith(SECRET));
    const made = spawnSync(process.execPath, [path.join(LIB, 'tools', 'cli.js'), 'cache'], {
      cwd: folder,
      env: { ...process.env, NODE_COMPILE_CACHE: cache },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(made.status, 0, made.stderr);
    assert.equal(records(cache).length, 1, 'the project’s record alone');
    assert.deepEqual(await start(folder, cache), { answer: { token: SECRET, mode: 'fast' }, parsed: false });
  });
});
