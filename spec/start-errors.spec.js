'use strict';
// A function that does not start says why in words: where a syntax error is, what a module
// exported instead of a handler, which file an import meant, which option was meant, which
// port to use instead. JSON lines on stderr by default; readable text with --pretty (or on a
// terminal).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { project, run, runServing } = require('./helpers');
const { canRunTypeScript } = require('../lib/start/loader.js');
const { unsupportedNode } = require('../lib/start/exit.js');

// A network namespace of its own, where the code under test reaches loopback only (root, or unprivileged user namespaces).
const noNetworkNamespace = spawnSync('unshare', ['-rn', 'true']).status !== 0 && 'unshare cannot make a network namespace here';
const SERVE = path.join(__dirname, '..', 'lib', 'serve.js');

/** Runs serve on `files`; resolves { code, json (the stderr line parsed), text (with --pretty) }. */
async function failToStart(files, args = []) {
  const folder = project(files);
  const asJson = run([folder, '--port', '0', ...args]);
  const asText = run([folder, '--port', '0', '--pretty', ...args]);
  const [json, text] = [await asJson.exited, await asText.exited];
  const lines = asJson.out.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one JSON line: ${asJson.out.stderr}`);
  assert.equal(json.code, text.code);
  return { code: json.code, json: JSON.parse(lines[0]), text: asText.out.stderr, folder };
}

describe('a syntax error is reported at its file, line and column', () => {
  const broken = '\nmodule.exports = function handle() {\n  return { a: 1 b: 2 };\n};\n';
  it('CommonJS: file, line and column in the JSON line, and the line with a caret in the text', async () => {
    const { code, json, text } = await failToStart({ 'index.js': broken });
    assert.equal(code, 1);
    assert.equal(json.level, 60);
    assert.match(json.msg, /index\.js:3:17: SyntaxError: Unexpected identifier 'b'$/);
    assert.deepEqual([path.basename(json.file), json.line, json.column], ['index.js', 3, 17]);
    assert.match(text, /^funcrun: .*index\.js:3:17: SyntaxError: Unexpected identifier 'b'\n/);
    assert.match(text, /\n {4} {2}return \{ a: 1 b: 2 \};\n {4} {16}\^\n/);
  });

  it('ESM: the same, although node gives ESM syntax errors no place of their own', async () => {
    const { code, json } = await failToStart({ 'index.mjs': broken.replace('module.exports =', 'export'), 'package.json': '{"main":"index.mjs"}' });
    assert.equal(code, 1);
    assert.match(json.msg, /index\.mjs:3:17: SyntaxError/);
  });

  it('in a module the function requires: that module is named', async () => {
    const { json } = await failToStart({ 'index.js': "module.exports = require('./lib/helper.js');", 'lib/helper.js': broken });
    assert.match(json.msg, /lib\/helper\.js:3:17: SyntaxError/);
  });

  it('TypeScript run from its source: file, line and column', { skip: !canRunTypeScript() && 'this node cannot strip types' }, async () => {
    const { json } = await failToStart({
      'src/index.ts': 'export function handle(x: number) {\n  return { a: 1 b: 2 };\n}\n',
      'package.json': '{"type":"module"}',
    });
    assert.match(json.msg, /src\/index\.ts:2:17: SyntaxError/);
  });
});

describe('a module without a handler says what it exported instead', () => {
  const cases = {
    'a handler export is suggested as handle': [
      { 'index.js': 'module.exports = { handler() {}, port: 8080 };' },
      /found handler \(a function\), port \(a number\): did you mean handle\? Rename handler to handle$/,
    ],
    'a misspelled handle is suggested as handle': [
      { 'index.js': 'module.exports = { hadle() {} };' },
      /found hadle \(a function\): did you mean handle\? Rename hadle to handle$/,
    ],
    'an ESM default export without handle': [
      { 'index.mjs': 'export default { handleRequest() {} };', 'package.json': '{"main":"index.mjs"}' },
      /found a default export with handleRequest \(a function\): did you mean handle\?/,
    ],
    'a string exported': [{ 'index.js': "module.exports = 'handle';" }, /it exports a string \('handle'\)$/],
    'nothing exported': [{ 'index.js': 'const handle = () => 1;' }, /it exports nothing: module\.exports = \{ handle \}/],
    'handle that is a string': [{ 'index.js': "module.exports = { handle: 'yes' };" }, /handle is a string \('yes'\): it must be a function$/],
    'handle that is not a function beside routes': [
      { 'index.js': 'module.exports = { handle: 5, routes: {} };' },
      /'handle' must be a function, found a number \(5\)/,
    ],
  };
  for (const [name, [files, message]] of Object.entries(cases)) {
    it(name, async () => {
      const { code, json, text } = await failToStart(files);
      assert.equal(code, 1);
      assert.match(json.msg, message);
      assert.match(text, /^funcrun: /);
    });
  }

  it('an export one typo away from a part of the function (livness) is a warning at start', async (t) => {
    const proc = await runServing([project({ 'index.js': 'module.exports = { handle: () => "ok", livness: () => true };' })]);
    t.after(() => proc.child.kill('SIGKILL'));
    const warning = await proc.waitFor((l) => l.level === 40 && /livness/.test(l.msg));
    assert.match(warning.msg, /'livness' is exported, but funcrun reads 'liveness': did you mean liveness\?/);
  });
});

describe('an import of ./x.js where only ./x.ts exists names the .ts file', () => {
  it('TypeScript source importing a sibling by its .js name', { skip: !canRunTypeScript() && 'this node cannot strip types' }, async () => {
    const { code, json, text } = await failToStart({
      'package.json': '{"type":"module"}',
      'src/index.ts': "import { shout } from './shout.js';\nexport const handle = () => shout('hi');\n",
      'src/shout.ts': 'export const shout = (s: string): string => s.toUpperCase();\n',
    });
    assert.equal(code, 1);
    assert.match(json.hint, /^import '\.\/shout\.ts', not '\.\/shout\.js'/);
    assert.match(text, /\n {2}import '\.\/shout\.ts', not '\.\/shout\.js'/);
    // The resolver's stack is node's own: it says nothing the message does not.
    assert.doesNotMatch(text, /node:internal/);
  });
});

describe('a dependency whose entry file is missing is named as a package that is not built', () => {
  // As npm installs a file: dependency: node_modules/greeter is a link to the package's own folder,
  // whose package.json names lib/index.js, and only its TypeScript source is there.
  function linkedUnbuilt(functionFiles, greeterFiles) {
    const root = project({
      ...Object.fromEntries(Object.entries(functionFiles).map(([name, content]) => [`fn/${name}`, content])),
      ...Object.fromEntries(Object.entries(greeterFiles).map(([name, content]) => [`greeter/${name}`, content])),
    });
    fs.mkdirSync(path.join(root, 'fn', 'node_modules'));
    fs.symlinkSync(path.join(root, 'greeter'), path.join(root, 'fn', 'node_modules', 'greeter'), 'dir');
    return { root, fn: path.join(root, 'fn') };
  }
  const greeter = {
    'package.json': '{"name":"greeter","version":"1.0.0","main":"lib/index.js","scripts":{"build":"tsc"}}',
    'lib/index.ts': 'export const greet = (s: string): string => `hi ${s}`;\n',
  };
  const fnPackage = '{"name":"fn","dependencies":{"greeter":"file:../greeter"}}';

  async function startFails(folder) {
    const proc = run([folder, '--port', '0']);
    assert.equal((await proc.exited).code, 1);
    const lines = proc.out.stderr.trim().split('\n');
    assert.equal(lines.length, 1, proc.out.stderr);
    return JSON.parse(lines[0]);
  }

  it('required from CommonJS, with lib/index.ts beside the missing lib/index.js: the package, not an import the user never wrote', async () => {
    const { root, fn } = linkedUnbuilt(
      { 'package.json': fnPackage, 'index.js': "const { greet } = require('greeter');\nmodule.exports = () => greet('x');\n" },
      greeter,
    );
    const line = await startFails(fn);
    assert.equal(
      line.hint,
      `the package 'greeter' (${path.join(fn, 'node_modules', 'greeter')}) is not built: it has no lib/index.js, the file its package.json names; build it (npm run build in ${fs.realpathSync(path.join(root, 'greeter'))}), then start again`,
    );
    assert.doesNotMatch(line.hint, /import '/);
  });

  it('imported from ESM, through main and through exports: the same hint', async () => {
    for (const manifest of [greeter['package.json'], '{"name":"greeter","exports":{".":"./lib/index.js"},"scripts":{"build":"tsc"}}']) {
      const { fn } = linkedUnbuilt(
        {
          'package.json': fnPackage.replace('{', '{"type":"module",'),
          'index.js': "import { greet } from 'greeter';\nexport const handle = () => greet('x');\n",
        },
        { ...greeter, 'package.json': manifest },
      );
      const line = await startFails(fn);
      assert.match(
        line.hint,
        /^the package 'greeter' \(.*node_modules\/greeter\) is not built: it has no lib\/index\.js, the file its package\.json names; build it/,
      );
    }
  });

  it('a copied package with src/index.ts and no build: the same; with no sources at all, to install it again', async () => {
    const copied = project({
      'package.json': fnPackage,
      'index.js': "module.exports = require('greeter');\n",
      'node_modules/greeter/package.json': '{"name":"greeter","main":"lib/index.js"}',
      'node_modules/greeter/src/index.ts': 'export const handle = (): string => "hi";\n',
    });
    assert.match(
      (await startFails(copied)).hint,
      /^the package 'greeter' \(.*\) is not built: it has no lib\/index\.js, .*npm run build in .*node_modules\/greeter\)/,
    );
    fs.rmSync(path.join(copied, 'node_modules/greeter/src'), { recursive: true });
    assert.match(
      (await startFails(copied)).hint,
      /^the package 'greeter' \(.*\) has no lib\/index\.js, the file its package\.json names: install it again \(npm install\)$/,
    );
  });
});

describe('TypeScript mistakes node makes hard to read', () => {
  it(
    'a type imported as a value, in source node runs without types: import type is suggested',
    { skip: !canRunTypeScript() && 'this node cannot strip types' },
    async () => {
      const { code, json } = await failToStart({
        'package.json': '{"type":"module"}',
        'node_modules/runtime-types/package.json': '{"name":"runtime-types","main":"index.js"}',
        'node_modules/runtime-types/index.js': 'exports.greet = () => "hi";\n',
        'src/index.ts': "import { Context, greet } from 'runtime-types';\nexport const handle = (context: Context) => greet();\n",
      });
      assert.equal(code, 1);
      assert.match(json.msg, /src\/index\.ts:1:\d+: SyntaxError: Named export 'Context' not found/);
      assert.equal(
        json.hint,
        'if Context is a type, import it with import type { Context } (node runs the source without its types), or build the project (npm run build) and serve the build',
      );
    },
  );

  it("a TypeScript project's build served before it is built says to build it", async () => {
    const folder = project({ 'package.json': '{"name":"x"}', 'src/index.ts': 'export const handle = () => 1;\n' });
    const proc = run([path.join(folder, 'build', 'index.js'), '--port', '0']);
    assert.equal((await proc.exited).code, 1);
    assert.match(
      JSON.parse(proc.out.stderr.trim()).msg,
      /build\/index\.js: no such file or folder: it is the TypeScript project's build, made by npm run build/,
    );
  });
});

describe('the command line and the machine', () => {
  it('an unknown option names the nearest one and --help, exit code 2', async () => {
    const { code, json, text } = await failToStart({ 'index.js': 'module.exports = () => 1;' }, ['--prot', '8081']);
    assert.equal(code, 2);
    assert.equal(json.msg, "unknown option '--prot': did you mean --port? (funcrun serve --help lists the options)");
    assert.equal(text, "funcrun: unknown option '--prot': did you mean --port? (funcrun serve --help lists the options)\n");
  });

  it('two folders: bad use, exit code 2, one line without a stack', async () => {
    const { code, json } = await failToStart({ 'index.js': 'module.exports = () => 1;' }, ['extra']);
    assert.equal(code, 2);
    assert.match(json.msg, /^expected one folder, got 2: .* extra \(funcrun serve --help\)$/);
    assert.equal(json.err, undefined);
  });

  it('a package the function requires that is not installed: the hint says to install it, without a stack', async () => {
    for (const [source, name] of [
      ["module.exports = require('not-installed-pkg/sub');", 'not-installed-pkg'],
      ["import x from '@scope/not-installed'; export default () => x;", '@scope/not-installed'],
    ]) {
      const { code, json } = await failToStart({ [source.startsWith('import') ? 'index.mjs' : 'index.js']: source });
      assert.equal(code, 1);
      assert.equal(
        json.hint,
        `the package ${name} is not installed: run npm install in the function's folder (npm install ${name}, if package.json does not list it)`,
      );
      assert.equal(json.err, undefined, 'no stack');
    }
  });

  it('an address of no interface of this machine: said in words, with where to listen instead', { skip: noNetworkNamespace }, () => {
    // In a network namespace of its own, its loopback up (with no interface up, Linux binds any address): a documentation address is none of its interfaces.
    const folder = project({ 'index.js': 'module.exports = () => 1;' });
    const serving = spawnSync(
      'unshare',
      ['-rn', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh', process.execPath, SERVE, folder, '--port', '0', '--host', '192.0.2.1'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    assert.equal(serving.status, 1, serving.stderr);
    const json = JSON.parse(serving.stderr.trim());
    assert.equal(json.msg, 'cannot listen on 192.0.2.1: no network interface of this machine has that address');
    assert.match(json.hint, /LISTEN_ADDRESS=0\.0\.0\.0/);
    assert.equal(json.err, undefined);
  });

  it('a flag for a setting that has only a variable names the variable', async () => {
    const { code, json } = await failToStart({ 'index.js': 'module.exports = () => 1;' }, ['--file-size-limit', '200mb']);
    assert.equal(code, 2);
    assert.equal(
      json.msg,
      "unknown option '--file-size-limit': fileSizeLimit is set by the variable FUNC_FILE_SIZE_LIMIT (funcrun serve --help lists the options)",
    );
  });

  it('a port in use: the hint moves the port where it was set, with --port or PORT', async (t) => {
    const busy = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => busy.once('listening', resolve));
    t.after(() => busy.close());
    const { port } = busy.address();
    const folder = project({ 'index.js': 'module.exports = () => 1;' });
    const byFlag = run([folder, '--port', String(port), '--host', '127.0.0.1']);
    assert.equal((await byFlag.exited).code, 1);
    const line = JSON.parse(byFlag.out.stderr);
    assert.equal(line.msg, `port ${port} is already in use`);
    assert.equal(line.hint, `serve on another port: --port ${port + 1}`);
    const byVariable = run([folder, '--host', '127.0.0.1'], { env: { PORT: String(port) } });
    assert.equal((await byVariable.exited).code, 1);
    const viaEnv = JSON.parse(byVariable.out.stderr);
    assert.equal(viaEnv.hint, `serve on another port: PORT=${port + 1} (or --port ${port + 1})`);
  });

  it('a hostile setting value is echoed cut at 80 characters, control characters escaped', async () => {
    const folder = project({ 'index.js': 'module.exports = () => 1;' });
    const long = `\u001b[2J\u0085\u202e${'9'.repeat(100_000)}`;
    for (const [variable, start] of [
      ['PORT', "invalid PORT '\\u001b[2J\\u0085\\u202e"],
      ['FUNC_TIMEOUT', "invalid FUNC_TIMEOUT '\\u001b[2J\\u0085\\u202e"],
      ['FUNC_LOG_LEVEL', "invalid FUNC_LOG_LEVEL: unknown log level '\\u001b[2J\\u0085\\u202e"],
      ['LISTEN_ADDRESS', 'invalid LISTEN_ADDRESS "\\u001b[2J\\u0085\\u202e'],
    ]) {
      const proc = run([folder], { env: { [variable]: long } });
      assert.equal((await proc.exited).code, 2, variable);
      assert.ok(proc.out.stderr.length < 600, `${variable}: ${proc.out.stderr.length} bytes`);
      const { msg } = JSON.parse(proc.out.stderr);
      assert.ok(msg.startsWith(start), msg);
      assert.ok(msg.includes(`\\u202e${'9'.repeat(74)}…`), msg);
      assert.ok(!/[\u0000-\u001f\u0085\u202e]/.test(msg), msg);
    }
  });

  it('a node older than 22 gets one warning, and the function still starts', async (t) => {
    const folder = project({
      'index.js': 'module.exports = () => "old";',
      'old-node.js': "Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.19.0' } });",
    });
    const proc = await runServing([folder], { execArgv: ['--require', path.join(folder, 'old-node.js')] });
    t.after(() => proc.child.kill('SIGKILL'));
    const warnings = proc.out.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(warnings.length, 1, proc.out.stderr);
    assert.equal(warnings[0].level, 40);
    assert.match(warnings[0].msg, /^Node\.js 20\.19\.0 is not supported: funcrun runs on Node\.js 22 and 24/);
    // It names the fix for each way an image gets its node: func's two builders, and a Dockerfile.
    assert.match(warnings[0].msg, /Build on Node\.js 24 or 22: /);
    assert.match(warnings[0].msg, /BP_NODE_VERSION=24\.\* in func\.yaml's build\.buildEnvs \(the pack builder\)/);
    assert.match(
      warnings[0].msg,
      /build\.builderImages\.s2i: registry\.access\.redhat\.com\/ubi9\/nodejs-24-minimal \(the s2i builder, whose default image is Node\.js 20\)/,
    );
    assert.match(warnings[0].msg, /FROM node:24-alpine/);
    assert.match(unsupportedNode('18.20.4'), /^Node\.js 18\.20\.4 is not supported: .*docs\/deploying\.md#nodejs-lines\)$/);
    assert.match(fs.readFileSync(path.join(__dirname, '..', 'docs', 'deploying.md'), 'utf8'), /^## Node\.js lines$/m, 'the page the warning names');
    assert.equal(unsupportedNode('22.0.0'), undefined);
    assert.equal(unsupportedNode('24.11.1'), undefined);
  });
});
