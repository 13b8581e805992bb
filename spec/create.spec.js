'use strict';
// `funcrun create`, then the project's own plain `npm install`, `npm test` and `npm start`, as a
// newcomer runs them on a machine where funcrun is not on the registry. npm talks to a loopback
// registry holding this checkout's installed packages (and no funcrun), so nothing is linked
// and nothing leaves the machine.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { HTTP, CloudEvent } = require('cloudevents');
const { freePort, waitUntilListening } = require('./helpers');
const { startRegistry } = require('./registry');

const ROOT = path.join(__dirname, '..');
const CLI = path.join(ROOT, 'lib', 'tools', 'cli.js');
const { version: VERSION } = require('../package.json');
const TARBALL = `funcrun-${VERSION}.tgz`;

const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-create-'));

/** A scratch folder to `npm install` a package into: with a package.json of its own, so that npm does not walk up to a parent's. */
function installFolder() {
  const folder = scratch();
  fs.writeFileSync(path.join(folder, 'package.json'), '{ "private": true }\n');
  return folder;
}

/** Runs a command to completion: { code, stdout, stderr }. */
function exec(command, args, { cwd, env }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * `npm start` in its own process group on a free port, for the test `t`; stop() sends SIGTERM to
 * the group once (a test may stop it itself to see how it ends; `t.after` stops it otherwise).
 */
async function npmStart(t, folder, env) {
  const port = await freePort();
  const child = spawn('npm', ['start'], { cwd: folder, env: { ...env, PORT: String(port), FUNC_HOST: '127.0.0.1' }, detached: true });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  child.stderr.on('data', (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  let stopping;
  const stop = () => {
    if (stopping === undefined) {
      stopping = exited;
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid, 'SIGTERM');
    }
    return stopping;
  };
  t.after(stop);
  await waitUntilListening(port, { child, out });
  return { url: `http://127.0.0.1:${port}`, out, stop };
}

/** The packages a lockfile installed that did not come from `registry` or the project's own tarball. */
function foreign(folder, registry) {
  const lock = JSON.parse(fs.readFileSync(path.join(folder, 'package-lock.json'), 'utf8'));
  return Object.entries(lock.packages)
    .filter(([key, entry]) => key !== '' && !(entry.resolved ?? '').startsWith(registry.url) && entry.resolved !== `file:${TARBALL}`)
    .map(([key, entry]) => `${key} ${entry.resolved ?? (entry.link ? 'linked' : 'no resolved')}`);
}

let registry;
before(async () => {
  registry = await startRegistry();
});
after(() => registry.close());

// The six projects are independent (own folders): their installs and tests, the slow part, overlap.
describe('funcrun create, then npm install, npm test and npm start', { concurrency: true }, () => {
  const expected = {
    node: ['func.yaml', 'index.js', 'package.json', 'README.md', 'test/unit.js', 'test/integration.js'],
    typescript: ['func.yaml', 'package.json', 'src/index.ts', 'test/unit.ts', 'test/integration.ts', 'tsconfig.json', 'tsconfig.build.json', 'README.md'],
  };

  for (const language of ['node', 'typescript']) {
    for (const template of ['http', 'cloudevents', 'fetch']) {
      it(`${language} ${template}`, async (t) => {
        const parent = scratch();
        const name = `my-${language}-${template}`;
        const folder = path.join(parent, name);
        const env = registry.env;

        // create, from a checkout: funcrun is packed into the project and depended on as a file.
        const created = await exec(process.execPath, [CLI, 'create', name, '--language', language, '--template', template], { cwd: parent, env });
        assert.equal(created.code, 0, created.stderr);
        assert.match(created.stdout, new RegExp(`\\nNext: cd ${name} && npm install && npm test && npm start\\n`));
        assert.match(created.stdout, new RegExp(`\\nThen, for an image: docker build -t ${name} \\.\\n$`));
        for (const file of [...expected[language], 'Dockerfile', '.dockerignore', '.gitignore', TARBALL]) {
          assert.ok(fs.existsSync(path.join(folder, file)), file);
          if (file !== TARBALL) assert.match(created.stdout, new RegExp(`\\n  ${file.replace('.', '\\.')}\\n`), file);
        }
        for (const file of ['Dockerfile', '.dockerignore']) {
          assert.equal(fs.readFileSync(path.join(folder, file), 'utf8'), fs.readFileSync(path.join(ROOT, 'examples', 'deploy', file), 'utf8'), file);
        }
        const yaml = require('yaml').parse(fs.readFileSync(path.join(folder, 'func.yaml'), 'utf8'));
        assert.equal(yaml.name, name);
        assert.equal(yaml.runtime, language);
        assert.equal(yaml.invoke, template === 'cloudevents' ? 'cloudevent' : 'http');
        if (template === 'fetch') {
          // A fetch handler: no handle; in TypeScript typed by funcrun's types and the DOM library's Request and Response.
          const source = fs.readFileSync(path.join(folder, language === 'node' ? 'index.js' : 'src/index.ts'), 'utf8');
          assert.match(source, /async fetch\(request, env, ctx\)|async fetch\(request: Request, env: FetchEnv, ctx: FetchContext\): Promise<Response>/);
          assert.doesNotMatch(source, /\bhandle\b/);
          assert.match(fs.readFileSync(path.join(folder, language === 'node' ? 'test/unit.js' : 'test/unit.ts'), 'utf8'), /createFetchContext\(\)/);
          if (language === 'typescript')
            assert.match(fs.readFileSync(path.join(folder, 'tsconfig.json'), 'utf8'), /"lib": \["ES2022", "DOM", "DOM.Iterable"\]/);
        }
        assert.deepEqual(yaml.run.envs, [{ name: 'FUNC_LOG_LEVEL', value: 'info' }]);
        assert.deepEqual(yaml.deploy.healthEndpoints, { liveness: '/health/liveness', readiness: '/health/readiness' });
        // The probe test asks where the probe is (funcrun config health moves it), not the default path.
        const integration = fs.readFileSync(path.join(folder, language === 'node' ? 'test/integration.js' : 'test/integration.ts'), 'utf8');
        if (template !== 'cloudevents') assert.match(integration, /fetch\(running\.url \+ running\.probes\.readiness\)/);
        assert.doesNotMatch(integration, /\/health\//);
        const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'));
        assert.equal(manifest.dependencies.funcrun, `file:${TARBALL}`);
        assert.equal(manifest.scripts.start, 'funcrun serve .');

        // npm install, plain: funcrun from the tarball, everything else from the registry.
        const install = await exec('npm', ['install'], { cwd: folder, env });
        assert.equal(install.code, 0, install.stdout + install.stderr);
        const installed = path.join(folder, 'node_modules', 'funcrun');
        assert.ok(!fs.lstatSync(installed).isSymbolicLink(), 'funcrun is installed, not linked');
        assert.equal(JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')).version, VERSION);
        assert.deepEqual(foreign(folder, registry), []);

        // npm test: the project's own runner (TypeScript straight from its source, no build).
        const test = await exec('npm', ['test'], { cwd: folder, env });
        assert.equal(test.code, 0, test.stdout + test.stderr);
        assert.match(test.stdout, /[#ℹ] pass 4\n/);
        assert.match(test.stdout, /[#ℹ] fail 0\n/);
        assert.ok(!fs.existsSync(path.join(folder, 'build')), 'npm test built nothing');

        if (language === 'typescript') {
          const typecheck = await exec('npm', ['run', 'typecheck'], { cwd: folder, env });
          assert.equal(typecheck.code, 0, typecheck.stdout + typecheck.stderr);
        }

        // npm start: serves the function (TypeScript from its source: nothing is built).
        const running = await npmStart(t, folder, env);
        if (template !== 'cloudevents') {
          const res = await fetch(running.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":"hello"}' });
          assert.equal(res.status, 200);
          assert.deepEqual(await res.json(), { received: { message: 'hello' } });
        } else {
          const { headers, body } = HTTP.binary(new CloudEvent({ type: `dev.example.${name}`, source: '/spec', data: { message: 'hello' } }));
          const res = await fetch(running.url, { method: 'POST', headers, body });
          assert.equal(res.status, 200);
          const answer = HTTP.toEvent({ headers: Object.fromEntries(res.headers), body: await res.text() });
          assert.equal(answer.type, `dev.example.${name}.response`);
          assert.deepEqual(answer.data, { received: { message: 'hello' } });
        }
        assert.equal((await fetch(running.url + '/health/readiness')).status, 200);
        // How it stops is part of the case: npm passes the signal on to the runtime and then ends by it itself.
        const exit = await running.stop();
        assert.ok(exit.code === 0 || exit.signal === 'SIGTERM', `${JSON.stringify(exit)} ${running.out.stdout}${running.out.stderr}`);
        const lines = running.out.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line));
        assert.ok(
          lines.some((line) => line.msg === 'stopped'),
          running.out.stdout,
        );
        assert.ok(!lines.some((line) => line.level >= 50), running.out.stdout);

        if (language === 'typescript' && template !== 'cloudevents') {
          // npm run build: what the image does; npm start then serves the build. It compiles the
          // function alone: no test in build/ (nor in the image), while typecheck checks the tests.
          const unit = path.join(folder, 'test', 'unit.ts');
          const tests = fs.readFileSync(unit, 'utf8');
          fs.writeFileSync(unit, `${tests}\nexport const wrong: number = 'not a number';\n`);
          const checked = await exec('npm', ['run', 'typecheck'], { cwd: folder, env });
          assert.notEqual(checked.code, 0, 'typecheck checks the tests');
          assert.match(checked.stdout + checked.stderr, /test\/unit\.ts\(\d+,\d+\): error TS2322/);
          const build = await exec('npm', ['run', 'build'], { cwd: folder, env });
          assert.equal(build.code, 0, build.stdout + build.stderr);
          fs.writeFileSync(unit, tests);
          assert.equal(manifest.main, 'build/index.js');
          assert.ok(fs.existsSync(path.join(folder, manifest.main)));
          const built = fs.readdirSync(path.join(folder, 'build'), { recursive: true }).map((f) => f.split(path.sep).join('/'));
          assert.deepEqual(built.sort(), ['index.js']);
          assert.match(fs.readFileSync(path.join(folder, '.dockerignore'), 'utf8'), /^test$/m);
          const again = await npmStart(t, folder, { ...env, FUNC_LOG_LEVEL: 'debug' });
          const res = await fetch(again.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"built":true}' });
          assert.deepEqual(await res.json(), { received: { built: true } });
          const loaded = again.out.stdout
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l))
            .find((l) => l.msg === 'loaded the function');
          assert.equal(loaded?.file, path.join(folder, manifest.main));
        }
      });
    }
  }
});

describe('funcrun create: how the project depends on funcrun', () => {
  it('once funcrun is installed from a registry, a project depends on a version range and installs it from there', async (t) => {
    const published = scratch();
    const pack = await exec('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', published, ROOT], { cwd: ROOT, env: registry.env });
    assert.equal(pack.code, 0, pack.stderr);
    const withFuncrun = await startRegistry({ published: { funcrun: path.join(published, TARBALL) } });
    t.after(() => withFuncrun.close());
    const env = withFuncrun.env;
    // The way a user gets the command: installed from the registry.
    const tools = installFolder();
    const install = await exec('npm', ['install', 'funcrun'], { cwd: tools, env });
    assert.equal(install.code, 0, install.stdout + install.stderr);
    const cli = path.join(tools, 'node_modules', 'funcrun', 'lib', 'tools', 'cli.js');
    const parent = scratch();
    const created = await exec(process.execPath, [cli, 'create', 'fn'], { cwd: parent, env });
    assert.equal(created.code, 0, created.stderr);
    const folder = path.join(parent, 'fn');
    assert.equal(JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8')).dependencies.funcrun, `^${VERSION}`);
    assert.ok(!fs.readdirSync(folder).some((f) => f.endsWith('.tgz')), 'nothing packed');
    assert.doesNotMatch(fs.readFileSync(path.join(folder, 'README.md'), 'utf8'), /\.tgz/);
    assert.ok(fs.existsSync(path.join(folder, 'Dockerfile')), 'the installed package carries the deploy files');
    const projectInstall = await exec('npm', ['install'], { cwd: folder, env });
    assert.equal(projectInstall.code, 0, projectInstall.stdout + projectInstall.stderr);
    const lock = JSON.parse(fs.readFileSync(path.join(folder, 'package-lock.json'), 'utf8'));
    assert.equal(lock.packages['node_modules/funcrun'].resolved, `${withFuncrun.url}funcrun/-/${TARBALL}`);
    const test = await exec('npm', ['test'], { cwd: folder, env });
    assert.equal(test.code, 0, test.stdout + test.stderr);
  });

  it('--funcrun sets the dependency as given; pack packs; an empty one is a usage error', async () => {
    const parent = scratch();
    const range = await exec(process.execPath, [CLI, 'create', 'ranged', '--funcrun', '^0.1.0'], { cwd: parent, env: registry.env });
    assert.equal(range.code, 0, range.stderr);
    assert.equal(JSON.parse(fs.readFileSync(path.join(parent, 'ranged', 'package.json'), 'utf8')).dependencies.funcrun, '^0.1.0');
    assert.ok(!fs.existsSync(path.join(parent, 'ranged', TARBALL)));
    const packed = await exec(process.execPath, [CLI, 'create', 'packed', '--funcrun', 'pack'], { cwd: parent, env: registry.env });
    assert.equal(packed.code, 0, packed.stderr);
    assert.ok(fs.existsSync(path.join(parent, 'packed', TARBALL)));
    const empty = await exec(process.execPath, [CLI, 'create', 'empty', '--funcrun', ' '], { cwd: parent, env: registry.env });
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /--funcrun is empty/);
    assert.ok(!fs.existsSync(path.join(parent, 'empty')));
  });

  it('a copy installed from a tarball at some address is not a registry install: it packs', async (t) => {
    const published = scratch();
    const pack = await exec('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', published, ROOT], { cwd: ROOT, env: registry.env });
    assert.equal(pack.code, 0, pack.stderr);
    const server = require('node:http').createServer((req, res) => res.end(fs.readFileSync(path.join(published, TARBALL))));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const tools = installFolder();
    const url = `http://127.0.0.1:${server.address().port}/downloads/${TARBALL}`;
    const install = await exec('npm', ['install', url], { cwd: tools, env: registry.env });
    assert.equal(install.code, 0, install.stdout + install.stderr);
    const parent = scratch();
    const created = await exec(process.execPath, [path.join(tools, 'node_modules', 'funcrun', 'lib', 'tools', 'cli.js'), 'create', 'fn'], {
      cwd: parent,
      env: registry.env,
    });
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(fs.readFileSync(path.join(parent, 'fn', 'package.json'), 'utf8')).dependencies.funcrun, `file:${TARBALL}`);
    assert.ok(fs.existsSync(path.join(parent, 'fn', TARBALL)));
  });

  it('the Next: line quotes what the shell would split, and keeps a leading dash from being an option', async () => {
    const parent = scratch();
    const quoted = await exec(process.execPath, [CLI, 'create', "my fn's", '--funcrun', '^0.1.0'], { cwd: parent, env: registry.env });
    assert.equal(quoted.code, 0, quoted.stderr);
    assert.match(quoted.stdout, /\nNext: cd 'my fn'\\''s' && npm install/);
    const dashed = await exec(process.execPath, [CLI, 'create', '--funcrun', '^0.1.0', '--', '-dash'], { cwd: parent, env: registry.env });
    assert.equal(dashed.code, 0, dashed.stderr);
    assert.match(dashed.stdout, /\nNext: cd \.\/-dash && npm install/);
    assert.ok(fs.existsSync(path.join(parent, '-dash', 'package.json')));
  });

  it('when npm pack fails, nothing is written, so the same command can run again', async () => {
    const parent = scratch();
    // A PATH with node and no npm.
    const bin = scratch();
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    const res = await exec(process.execPath, [CLI, 'create', 'fn'], { cwd: parent, env: { ...registry.env, PATH: bin } });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /could not pack funcrun into the project with npm pack/);
    assert.ok(!fs.existsSync(path.join(parent, 'fn')) || fs.readdirSync(path.join(parent, 'fn')).length === 0);
    const again = await exec(process.execPath, [CLI, 'create', 'fn'], { cwd: parent, env: registry.env });
    assert.equal(again.code, 0, again.stderr);
  });

  it('a file where the folder should be: one line saying so', async () => {
    const parent = scratch();
    fs.writeFileSync(path.join(parent, 'taken'), '');
    const res = await exec(process.execPath, [CLI, 'create', 'taken'], { cwd: parent, env: registry.env });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /taken is not a folder/);
  });

  it('a name YAML would read as a number or a keyword (0x1f, 123, true) is written quoted, so func.yaml keeps it as text', async () => {
    const { readFuncYaml } = require('../lib/start/func-yaml.js');
    for (const folder of ['0x1f', '123', 'true']) {
      const parent = scratch();
      const res = await exec(process.execPath, [CLI, 'create', folder, '--funcrun', '^0.1.0'], { cwd: parent, env: registry.env });
      assert.equal(res.code, 0, res.stderr);
      assert.equal(readFuncYaml(path.join(parent, folder)).name, folder);
    }
  });

  it('refuses a folder that is not empty', async () => {
    const parent = scratch();
    fs.mkdirSync(path.join(parent, 'full'));
    fs.writeFileSync(path.join(parent, 'full', 'keep.txt'), 'mine');
    const res = await exec(process.execPath, [CLI, 'create', 'full'], { cwd: parent, env: registry.env });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /is not empty/);
    assert.deepEqual(fs.readdirSync(path.join(parent, 'full')), ['keep.txt']);
  });
});
