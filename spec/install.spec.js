'use strict';
// The checkout as a newcomer installs and packs it: `npm ci` (and `npm install`) on a supported
// Node line warns of no package's engines, and the tarball `npm pack` writes into the checkout
// (step 1 of docs/migrating.md) is not left for git to show.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const manifest = require('../package.json');

describe('installing the checkout', () => {
  it('npm ci on this Node line warns of no engine: every package the lock installs accepts it', (t) => {
    // The lock and the manifests only, in a folder of their own: npm resolves the whole tree from
    // the lock (nothing fetched: offline, the registry unreachable) and says what it would add.
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-install-'));
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    for (const file of ['package.json', 'package-lock.json', ...manifest.workspaces.map((w) => `${w}/package.json`)]) {
      fs.mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, file), path.join(folder, file));
    }
    fs.writeFileSync(path.join(folder, 'npmrc'), '');
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|NODE_TEST_CONTEXT$)/i.test(k)));
    Object.assign(env, {
      npm_config_userconfig: path.join(folder, 'npmrc'),
      npm_config_cache: path.join(folder, 'cache'),
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_update_notifier: 'false',
    });
    const args = ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'];
    const ci = spawnSync('npm', args, { cwd: folder, env, encoding: 'utf8', timeout: 120_000 });
    assert.equal(ci.status, 0, ci.stderr);
    // The dry run lists what it would install: the whole tree, the peer's nested packages included.
    assert.match(ci.stdout, /^add faas-js-runtime-4 4\.0\.1$/m);
    assert.match(ci.stdout, /^add cloudevents 10\./m);
    assert.doesNotMatch(`${ci.stdout}${ci.stderr}`, /EBADENGINE|Unsupported engine/);
  });

  it("every package with an install script is decided in package.json's allowScripts: npm 11 lists none to review", () => {
    // npm 11 skips a dependency's install scripts unless allowScripts says otherwise, and ends
    // every install with a list of those not decided.
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    const scripted = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript === true && !entry.link)
      .map(([at]) => at.slice(at.lastIndexOf('node_modules/') + 'node_modules/'.length))
      .filter((name) => name !== '');
    assert.ok(scripted.length > 0, 'the lock records install scripts');
    assert.deepEqual(
      scripted.filter((name) => !(name in (manifest.allowScripts ?? {}))),
      [],
    );
  });

  it("the faas-js-runtime peer's cloudevents is the checkout's own (package.json overrides)", () => {
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    assert.equal(manifest.overrides.cloudevents, '$cloudevents');
    const copies = Object.keys(lock.packages).filter((p) => p === 'node_modules/cloudevents' || p.endsWith('/node_modules/cloudevents'));
    assert.deepEqual(copies, ['node_modules/cloudevents']);
  });
});

describe('packing the checkout', () => {
  it('the tarball npm pack writes into the checkout is ignored by git', (t) => {
    const tarball = `funcrun-${manifest.version}.tgz`;
    const git = spawnSync('git', ['check-ignore', '--no-index', '-q', tarball], { cwd: ROOT });
    if (git.error !== undefined || !fs.existsSync(path.join(ROOT, '.git'))) return t.skip('not a git checkout');
    assert.equal(git.status, 0, `${tarball} is not ignored`);
    // Only at the root: a tarball a fixture holds elsewhere is still seen.
    assert.equal(spawnSync('git', ['check-ignore', '--no-index', '-q', `spec/${tarball}`], { cwd: ROOT }).status, 1);
    assert.match(execFileSync('git', ['check-ignore', '--no-index', '-v', tarball], { cwd: ROOT, encoding: 'utf8' }), /^\.gitignore:\d+:\/funcrun-\*\.tgz\t/);
  });

  it('the package holds the pages its README, --help and warnings name, and the deploy files the docs copy from it', () => {
    const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' }))[0].files.map(
      (f) => f.path,
    );
    const pages = fs.readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md'));
    for (const page of pages) assert.ok(packed.includes(`docs/${page}`), `docs/${page}`);
    // README's links to docs/ resolve in node_modules/funcrun, as serve --help's and the compatibility warning's do.
    for (const [, link] of fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/\]\((docs\/[\w-]+\.md)/g)) assert.ok(packed.includes(link), link);
    for (const file of ['Dockerfile', '.dockerignore', 'service.yaml']) assert.ok(packed.includes(`examples/deploy/${file}`), file);
  });
});
