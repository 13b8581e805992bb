'use strict';
// `node lib/serve.js [path]` run as a user runs it: loading, options, func.yaml.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { project, run, runServing, request, freePort, waitUntilListening } = require('./helpers');

/** Serves `folderOrFile` with node lib/serve.js for the test `t`, and requests `pathname` once. */
async function answer(t, folderOrFile, pathname = '/', args = [], env = {}) {
  const proc = await runServing([folderOrFile, ...args], { env });
  t.after(() => proc.stop());
  return request(proc.url + pathname);
}

describe('loading a function', () => {
  const shapes = {
    'CommonJS module.exports = fn': { 'index.js': "module.exports = () => 'cjs function';" },
    'CommonJS module.exports = { handle }': { 'index.js': "module.exports = { handle: () => 'cjs object' };" },
    'CommonJS exports.handle': { 'index.js': "exports.handle = () => 'cjs exports';" },
    'ESM .mjs named export': { 'package.json': '{"main":"index.mjs"}', 'index.mjs': "export function handle() { return 'mjs named'; }" },
    'ESM "type": "module" default function': {
      'package.json': '{"type":"module"}',
      'index.js': "export default function () { return 'esm default'; }",
    },
    'ESM default object': { 'package.json': '{"type":"module"}', 'index.js': "export default { handle: () => 'esm default object' };" },
    'package.json main in a subfolder': { 'package.json': '{"main":"build/fn.js"}', 'build/fn.js': "module.exports = () => 'main';" },
    'TypeScript compiled to CommonJS (exports.default)': {
      'index.js': "'use strict'; Object.defineProperty(exports, '__esModule', { value: true }); exports.default = () => 'ts default';",
    },
    'TypeScript compiled with a named handle': {
      'index.js': "'use strict'; Object.defineProperty(exports, '__esModule', { value: true }); exports.handle = () => 'ts named';",
    },
  };
  const expected = {
    'CommonJS module.exports = fn': 'cjs function',
    'CommonJS module.exports = { handle }': 'cjs object',
    'CommonJS exports.handle': 'cjs exports',
    'ESM .mjs named export': 'mjs named',
    'ESM "type": "module" default function': 'esm default',
    'ESM default object': 'esm default object',
    'package.json main in a subfolder': 'main',
    'TypeScript compiled to CommonJS (exports.default)': 'ts default',
    'TypeScript compiled with a named handle': 'ts named',
  };
  for (const [name, files] of Object.entries(shapes)) {
    it(`serves ${name}`, async (t) => {
      const res = await answer(t, project(files));
      assert.equal(res.status, 200);
      assert.equal(res.text, expected[name]);
    });
  }

  it('serves a file given directly', async (t) => {
    const folder = project({ 'fn.mjs': "export const handle = () => 'a file';" });
    assert.equal((await answer(t, path.join(folder, 'fn.mjs'))).text, 'a file');
  });

  it('serves the current folder when no path is given', async () => {
    const folder = project({ 'index.js': "module.exports = () => 'cwd';" });
    const port = await freePort();
    const proc = run(['--port', String(port), '--host', '127.0.0.1'], { cwd: folder });
    await waitUntilListening(port, proc);
    assert.equal((await request(`http://127.0.0.1:${port}/`)).text, 'cwd');
    proc.child.kill('SIGTERM');
    await proc.exited;
  });

  const failures = {
    'a module without a handler': [{ 'index.js': 'module.exports = { nothing: 1 };' }, /index\.js: expected a handler/],
    'an ESM module without a handler': [{ 'index.mjs': 'export const x = 1;', 'package.json': '{"main":"index.mjs"}' }, /index\.mjs: expected a handler/],
    'a module with a syntax error': [{ 'index.js': 'module.exports = () => {' }, /index\.js:1:\d+: SyntaxError: Unexpected end of input/],
    'a module that throws when loaded': [{ 'index.js': "throw new Error('top-level boom');" }, /index\.js: failed to load: top-level boom/],
    'a folder without index.js': [{ 'other.js': '' }, /expected index\.js, or "main" in package\.json/],
    'a handle that is not a function': [{ 'index.js': 'module.exports = { handle: 5, routes: {} };' }, /'handle' must be a function/],
    'an invalid logLevel export': [{ 'index.js': "module.exports = { handle() {}, logLevel: 'loud' };" }, /'logLevel' is 'loud'/],
  };
  for (const [name, [files, message]] of Object.entries(failures)) {
    it(`${name}: exit code 1 and one error line naming the file`, async () => {
      const folder = project(files);
      const proc = run([folder, '--port', '0']);
      const { code } = await proc.exited;
      assert.equal(code, 1);
      const lines = proc.out.stderr.trim().split('\n');
      assert.equal(lines.length, 1, proc.out.stderr);
      const line = JSON.parse(lines[0]);
      assert.equal(line.level, 60);
      assert.match(line.msg, message);
      assert.ok(line.msg.includes(folder) || /index|src/.test(line.msg));
    });
  }

  it('a path that does not exist: exit code 1', async () => {
    const proc = run(['/no/such/function', '--port', '0']);
    assert.equal((await proc.exited).code, 1);
    assert.match(JSON.parse(proc.out.stderr).msg, /\/no\/such\/function: no such file or folder/);
  });

  it('an unknown option or a bad flag value: exit code 2, as for any command, with one line naming it', async () => {
    for (const [args, pattern] of [
      [['--frobnicate'], /frobnicate/],
      [['--bodyLimit', '2 parsecs'], /--bodyLimit '2 parsecs'/],
    ]) {
      const proc = run(args);
      assert.equal((await proc.exited).code, 2, args.join(' '));
      assert.match(proc.out.stderr, pattern);
      assert.equal(proc.out.stderr.trim().split('\n').length, 1);
    }
  });

  it('a closed stdout (serve | head) drops log lines: the function goes on answering and stops on SIGTERM', async () => {
    const dir = project({ 'index.js': 'module.exports = (ctx) => { ctx.log.info("a line"); return "still here"; };' });
    const proc = await runServing([dir]);
    proc.child.stdout.destroy();
    for (let i = 0; i < 5; i++) assert.equal((await request(proc.url)).text, 'still here');
    // Timers still run: the event loop is not stuck re-logging the failed write.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal((await request(proc.url)).text, 'still here');
    proc.child.kill('SIGTERM');
    const { code } = await proc.exited;
    assert.equal(code, 0);
    assert.equal(proc.out.stderr.match(/log lines are dropped/g)?.length, 1, proc.out.stderr);
  });

  it('--help prints the usage and exits 0', async () => {
    const proc = run(['--help']);
    assert.equal((await proc.exited).code, 0);
    assert.match(proc.out.stdout, /Usage: funcrun serve \[path\]/);
  });
});

describe('options from flags and environment', () => {
  const echo = project({
    'index.js': `module.exports = (ctx, data) => ({ seen: {
      raw: ctx.rawBody ? ctx.rawBody.length : null,
      size: Buffer.isBuffer(data) ? data.length : typeof data === 'string' ? data.length : null,
      env: process.env.FROM_YAML ?? null, kept: process.env.ALREADY_SET ?? null, ref: process.env.REFERENCED ?? null,
    } });`,
  });

  it('port: --port, else PORT, else FUNC_PORT', async () => {
    const [a, b, c] = [await freePort(), await freePort(), await freePort()];
    const cases = [
      [['--port', String(a)], { PORT: String(b), FUNC_PORT: String(c) }, a],
      [[], { PORT: String(b), FUNC_PORT: String(c) }, b],
      [[], { FUNC_PORT: String(c) }, c],
    ];
    for (const [args, env, expected] of cases) {
      const proc = run([echo, '--host', '127.0.0.1', ...args], { env });
      await waitUntilListening(expected, proc);
      const listening = await proc.waitFor((l) => l.msg.startsWith('listening'), 'the listening line');
      assert.equal(listening.port, expected);
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });

  it('a probe or metrics path that cannot work (a space, a newline, a route parameter) is bad use at start, whichever way it comes', async () => {
    for (const env of [{ READINESS_URL: '/ready now' }, { LIVENESS_URL: '/alive\nx' }, { FUNC_METRICS_PATH: '/metrics/:any' }]) {
      const proc = run([echo], { env });
      assert.equal((await proc.exited).code, 2, JSON.stringify(env));
      assert.match(proc.out.stderr, /expected a (path of URL characters|literal path)/);
    }
    const folder = project({ 'index.js': 'module.exports = () => 1;', 'func.yaml': 'deploy:\n  healthEndpoints:\n    liveness: "/alive/:x"\n' });
    const proc = run([folder, '--port', '0']);
    assert.equal((await proc.exited).code, 2);
    assert.match(proc.out.stderr, /deploy\.healthEndpoints\.liveness must be a path: expected a literal path/);
  });

  it("--version and -V print funcrun's version, as faas-js-runtime's command does", async () => {
    for (const flag of ['--version', '-V']) {
      const proc = run([flag]);
      assert.equal((await proc.exited).code, 0);
      assert.equal(proc.out.stdout, `${require('../package.json').version}\n`);
    }
  });

  it('an invalid port is bad use at start: exit code 2', async () => {
    const proc = run([echo], { env: { PORT: 'eighty' } });
    assert.equal((await proc.exited).code, 2);
    assert.match(proc.out.stderr, /invalid PORT 'eighty'/);
  });

  it('--bodyLimit and FUNC_BODY_LIMIT take bytes or units', async () => {
    for (const [args, env] of [
      [['--bodyLimit', '2kb'], {}],
      [[], { FUNC_BODY_LIMIT: '2kb' }],
      [['--bodyLimit', '2048'], {}],
    ]) {
      const proc = await runServing([echo, ...args], { env });
      const post = (n) => request(proc.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(n) });
      assert.equal((await post(2048)).status, 200);
      assert.equal((await post(2049)).status, 413);
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });

  it('--include-raw and FUNC_INCLUDE_RAW fill context.rawBody', async () => {
    for (const [args, env, expected] of [
      [['--include-raw'], {}, 3],
      [[], { FUNC_INCLUDE_RAW: 'true' }, 3],
      [[], {}, null],
    ]) {
      const proc = await runServing([echo, ...args], { env });
      const res = await request(proc.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'abc' });
      assert.equal(res.json.seen.raw, expected);
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });

  it('--log-level and FUNC_LOG_LEVEL set the level; the flag wins', async () => {
    const quiet = await runServing([echo], { env: { FUNC_LOG_LEVEL: 'warn' } });
    await request(quiet.url);
    quiet.child.kill('SIGTERM');
    await quiet.exited;
    assert.equal(quiet.lines().filter((l) => l.level < 40).length, 0, quiet.out.stdout);

    const debug = await runServing([echo, '--log-level', 'debug'], { env: { FUNC_LOG_LEVEL: 'warn' } });
    await request(debug.url + '/x');
    debug.child.kill('SIGTERM');
    await debug.exited;
    assert.ok(debug.lines().some((l) => l.level === 20 && l.msg === 'request completed'));
  });

  it('an unknown log level is bad use at start: exit code 2', async () => {
    const proc = run([echo], { env: { FUNC_LOG_LEVEL: 'chatty' } });
    assert.equal((await proc.exited).code, 2);
    assert.match(proc.out.stderr, /unknown log level 'chatty'/);
  });
});

describe('func.yaml', () => {
  const handler = `module.exports = () => ({ seen: { fromYaml: process.env.FROM_YAML ?? null, kept: process.env.ALREADY_SET ?? null, ref: process.env.REFERENCED ?? null, atLoad: globalThis.atLoad ?? null } });
globalThis.atLoad = process.env.FROM_YAML ?? null;`;

  it('run.envs are set when not already set, before the module loads', async () => {
    const folder = project({
      'index.js': handler,
      'func.yaml': [
        '# a comment',
        'name: envs',
        'runtime: node',
        'run:',
        '  envs:',
        '    - name: FROM_YAML',
        '      value: from func.yaml',
        '    - name: ALREADY_SET',
        '      value: from func.yaml',
        '    - name: REFERENCED',
        "      value: '{{ env:SOURCE_VAR }}'",
        '',
      ].join('\n'),
    });
    const proc = await runServing([folder], { env: { ALREADY_SET: 'from the environment', SOURCE_VAR: 'referenced value' } });
    const res = await request(proc.url);
    proc.child.kill('SIGTERM');
    await proc.exited;
    assert.deepEqual(res.json.seen, { fromYaml: 'from func.yaml', kept: 'from the environment', ref: 'referenced value', atLoad: 'from func.yaml' });
  });

  it('LIVENESS_URL and READINESS_URL in run.envs move the probes', async () => {
    const folder = project({
      'index.js': "module.exports = () => 'handler';",
      'func.yaml': 'run:\n  envs:\n  - name: LIVENESS_URL\n    value: /envs/live\n  - name: READINESS_URL\n    value: /envs/ready\n',
    });
    const proc = await runServing([folder]);
    assert.equal((await request(proc.url + '/envs/live')).text, 'OK');
    assert.equal((await request(proc.url + '/envs/ready')).text, 'OK');
    assert.equal((await request(proc.url + '/health/readiness')).text, 'handler');
    proc.child.kill('SIGTERM');
    await proc.exited;
  });

  it('FUNC_LOG_LEVEL in run.envs sets the log level', async () => {
    const folder = project({
      'index.js': "module.exports = (ctx) => { ctx.log.info('info line'); ctx.log.error('error line'); return 'ok'; };",
      'func.yaml': 'run:\n  envs:\n  - name: FUNC_LOG_LEVEL\n    value: error\n',
    });
    const proc = await runServing([folder]);
    await request(proc.url);
    proc.child.kill('SIGTERM');
    await proc.exited;
    const messages = proc.lines().map((l) => l.msg);
    assert.ok(messages.includes('error line'));
    assert.ok(!messages.includes('info line'));
  });

  const malformed = {
    'broken YAML': ['name: x\nrun:\n  envs: [unclosed\n', /func\.yaml:4: Flow sequence/],
    'envs that are not a list': ['run:\n  envs: FOO=bar\n', /func\.yaml:2: run\.envs must be a list/],
    'an env without a name whose value imports nothing': [
      'run:\n  envs:\n    - value: x\n',
      /func\.yaml:3: a run\.envs entry without a name imports every key of a secret or config map/,
    ],
    'a probe path without a leading slash': [
      'deploy:\n  healthEndpoints:\n    liveness: alive\n',
      /func\.yaml:3: deploy\.healthEndpoints\.liveness must be a path/,
    ],
    'a duplicated key': ['name: a\nname: b\n', /func\.yaml:2: /],
  };
  for (const [what, [text, message]] of Object.entries(malformed)) {
    it(`${what}: the start stops with the file and line, exit code 2`, async () => {
      const folder = project({ 'index.js': 'module.exports = () => 1;', 'func.yaml': text });
      const proc = run([folder, '--port', '0']);
      assert.equal((await proc.exited).code, 2);
      const line = JSON.parse(proc.out.stderr.trim());
      assert.match(line.msg, message);
      assert.ok(line.msg.startsWith(path.join(folder, 'func.yaml')), line.msg);
    });
  }
});
