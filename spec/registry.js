'use strict';
// A loopback npm registry, so that a created project's plain `npm install` runs for real (npm
// resolving ranges, fetching tarballs, checking integrity, writing the lockfile) without leaving
// the machine. It holds the packages this checkout has installed (every copy under node_modules,
// an aliased one under its own name, links such as the workspace's funcrun excepted), plus any
// tarball a spec publishes to it.
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const MODULES = path.join(__dirname, '..', 'node_modules');

/** The folders under node_modules holding a real (not linked) copy of `name`, one level of nesting deep. */
function installedCopies(name) {
  const parents = [MODULES];
  for (const entry of fs.readdirSync(MODULES)) {
    const scoped = entry.startsWith('@') ? fs.readdirSync(path.join(MODULES, entry)).map((n) => `${entry}/${n}`) : [entry];
    for (const pkg of scoped) parents.push(path.join(MODULES, pkg, 'node_modules'));
  }
  const copies = parents
    .map((parent) => path.join(parent, name))
    .filter((dir) => fs.existsSync(path.join(dir, 'package.json')) && !fs.lstatSync(dir).isSymbolicLink());
  return [...copies, ...(aliased().get(name) ?? [])];
}

let aliases;
/**
 * Packages installed under another name (`"faas-js-runtime-4": "npm:faas-js-runtime@4.0.1"`, so
 * that a peer's version sits beside another copy), by their own name: the registry serves them as
 * the package they are. Top-level folders only; read once.
 */
function aliased() {
  if (aliases !== undefined) return aliases;
  aliases = new Map();
  for (const entry of fs.readdirSync(MODULES)) {
    const dir = path.join(MODULES, entry);
    if (entry.startsWith('.') || entry.startsWith('@') || fs.lstatSync(dir).isSymbolicLink()) continue;
    let name;
    try {
      ({ name } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')));
    } catch {
      continue;
    }
    if (typeof name === 'string' && name !== entry) aliases.set(name, [...(aliases.get(name) ?? []), dir]);
  }
  return aliases;
}

/**
 * Starts the registry on 127.0.0.1, port 0. `published` maps a package name to a tarball file
 * that the registry serves as that package (its package.json read from the tarball's folder).
 * Returns { url, requests, env, close }: `env` points npm at it with a private cache and no proxy.
 */
async function startRegistry({ published = {} } = {}) {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-registry-'));
  const tarballs = new Map(); // `${name}@${version}` -> { file, integrity, shasum }
  const requests = [];

  function addTarball(name, version, file) {
    const bytes = fs.readFileSync(file);
    const integrity = 'sha512-' + crypto.createHash('sha512').update(bytes).digest('base64');
    const shasum = crypto.createHash('sha1').update(bytes).digest('hex');
    tarballs.set(`${name}@${version}`, { file, integrity, shasum });
    return { integrity, shasum };
  }

  // The tarball npm would have fetched: the installed folder under package/, without nested node_modules.
  function packFolder(dir, manifest) {
    const file = path.join(scratch, `${manifest.name.replace('/', '+')}-${manifest.version}.tgz`);
    if (!fs.existsSync(file)) {
      execFileSync('tar', ['-czf', file, '--exclude=./node_modules', '--transform=s,^\\.,package,', '-C', dir, '.']);
    }
    return file;
  }

  function packument(name, base) {
    const versions = {};
    const add = (manifest, file) => {
      const { scripts: _scripts, devDependencies: _dev, ...published } = manifest;
      const { integrity, shasum } = addTarball(name, manifest.version, file);
      const tarball = `${base}/${name}/-/${name.split('/').pop()}-${manifest.version}.tgz`;
      versions[manifest.version] = { ...published, name, dist: { tarball, integrity, shasum } };
    };
    if (published[name] !== undefined) {
      const manifest = JSON.parse(execFileSync('tar', ['-xzOf', published[name], 'package/package.json'], { encoding: 'utf8' }));
      add(manifest, published[name]);
    } else {
      for (const dir of installedCopies(name)) {
        const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
        if (manifest.name === name && versions[manifest.version] === undefined) add(manifest, packFolder(dir, manifest));
      }
    }
    const all = Object.keys(versions);
    if (all.length === 0) return undefined;
    const latest = all.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1);
    return { name, 'dist-tags': { latest }, versions };
  }

  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const url = decodeURIComponent(req.url.split('?')[0]);
    const base = `http://127.0.0.1:${server.address().port}`;
    const send = (status, body, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    try {
      const tarball = /^\/((?:@[^/]+\/)?[^/]+)\/-\/[^/]+-(\d[^/]*)\.tgz$/.exec(url);
      if (tarball !== null) {
        const found = tarballs.get(`${tarball[1]}@${tarball[2]}`);
        return found ? send(200, fs.readFileSync(found.file), 'application/octet-stream') : send(404, '{}');
      }
      const name = url.slice(1);
      const doc = /^(@[a-z0-9._-]+\/)?[a-z0-9._-]+$/.test(name) ? packument(name, base) : undefined;
      return doc ? send(200, JSON.stringify(doc)) : send(404, JSON.stringify({ error: 'not found' }));
    } catch (err) {
      return send(500, JSON.stringify({ error: String(err) }));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;

  // The environment for npm: this registry only, a private cache, no user config and no proxy.
  const userconfig = path.join(scratch, 'npmrc');
  fs.writeFileSync(userconfig, '');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|NODE_TEST_CONTEXT$|https?_proxy$|no_proxy$)/i.test(k)));
  Object.assign(env, {
    npm_config_registry: url,
    npm_config_userconfig: userconfig,
    npm_config_cache: path.join(scratch, 'cache'),
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  });
  return {
    url,
    requests,
    env,
    close: () => new Promise((resolve) => server.close(resolve)).then(() => fs.rmSync(scratch, { recursive: true, force: true })),
  };
}

module.exports = { startRegistry };
