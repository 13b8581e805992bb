// `funcrun cache`: writes funcrun's code caches (code-cache.ts) and node's compile cache of what
// funcrun loads, for this node, its V8 flags and the user running it, so that an image can carry
// them (examples/deploy/Dockerfile runs it as the function's user while the image is built).
// It serves a function of its own on loopback, not the project's: building an image runs none of
// the function's code. The caches hold funcrun's code, and what the project's func.yaml says
// without the values of its variables (their places in the file).
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheFileOf, codeCacheFolder, keepCompiled, RUNTIME, YAML_PARSER } from '../boot/code-cache';
import { defaults, start, stop } from '../index';
import { readFuncYaml } from '../start/func-yaml';
import { forgetFuncYaml } from '../start/func-yaml-cache';
import { loadFunction, resolveEntry } from '../start/loader';
import { checkEnv } from './config-command';

// The requests a function behind a Knative Broker or a route answers most: their way through
// funcrun is the code a start then finds compiled.
const REQUESTS = [
  { method: 'GET', path: defaults.readinessPath, headers: {}, body: '' },
  { method: 'POST', path: '/', headers: { 'content-type': 'application/json' }, body: '{"message":"cache"}' },
  {
    method: 'POST',
    path: '/',
    headers: { 'content-type': 'application/json', 'ce-id': '1', 'ce-source': '/funcrun/cache', 'ce-type': 'funcrun.cache', 'ce-specversion': '1.0' },
    body: '{"message":"cache"}',
  },
];

/** Writes the caches; the folder they are in. Fails when this user cannot write them there. */
export async function writeCaches(cwd: string): Promise<string> {
  const folder = codeCacheFolder();
  if (folder === undefined) {
    throw new Error(
      `node's compile cache is off (NODE_DISABLE_COMPILE_CACHE) or its folder cannot be written by this user (uid ${process.getuid?.() ?? '?'}): ` +
        `the folder is NODE_COMPILE_CACHE, else ${join(__dirname, '..', '.cache')}`,
    );
  }
  const project = mkdtempSync(join(tmpdir(), 'funcrun-cache-'));
  try {
    // A project of its own, started by serve's steps: the entry, the module, the server, which reads
    // func.yaml (the YAML parser's cache is written once one has been parsed).
    writeFileSync(join(project, 'func.yaml'), 'specVersion: 0.36.0\nname: cache\nruntime: node\n');
    writeFileSync(join(project, 'index.js'), 'module.exports = (context, data) => data ?? {};\n');
    const entry = resolveEntry(project);
    const { module } = await loadFunction(entry.file);
    const server = await start(module, { port: 0, host: '127.0.0.1', config: entry.folder, logLevel: 'silent' });
    try {
      const { port } = server.address() as AddressInfo;
      for (const r of REQUESTS) await send(port, r);
    } finally {
      await stop(server, 1000);
    }
  } finally {
    rmSync(project, { recursive: true, force: true });
    forgetFuncYaml(join(project, 'func.yaml'));
  }
  keepCompiled(RUNTIME);
  // What the project's own func.yaml says, kept without its values (start/func-yaml-cache.ts): a
  // start of the image then needs no YAML parser. A malformed one fails here, as its start would,
  // and so does a value of run.envs that start would refuse: the image is not built to crash-loop.
  const funcYaml = existsSync(join(cwd, 'func.yaml')) ? readFuncYaml(cwd) : undefined;
  for (const { name, value } of funcYaml?.envs ?? []) if (name !== undefined) checkEnv(name, value);
  // The parts loaded on demand (lib/runtime-events.js, ...): node's compile cache keeps them as it
  // loads them, so a function that uses one finds it compiled too.
  const lib = join(__dirname, '..');
  for (const part of readdirSync(lib).filter((file) => /^runtime-[a-z]+\.js$/.test(file))) require(join(lib, part));
  // Written now, or by an earlier run for this same code: either way a start will find them.
  const missing = [RUNTIME, YAML_PARSER].map((file) => cacheFileOf(file, folder)).filter((file) => !existsSync(file));
  if (missing.length > 0) throw new Error(`could not write ${missing.join(' and ')}`);
  return folder;
}

function send(port: number, r: (typeof REQUESTS)[number]): Promise<void> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers: r.headers }, (res) => {
      res.resume();
      res.once('end', () => (res.statusCode! < 300 ? done() : fail(new Error(`${r.method} ${r.path} was answered ${res.statusCode}`))));
    });
    req.once('error', fail);
    req.end(r.body);
  });
}
