'use strict';
// funcrun serve --watch, run as a user runs it: however a file is saved (in place, renamed over,
// git checkout, moved in, deleted and created again, in a new folder, in a folder removed and made
// again), and however many times, the next request is answered by the new code; a broken save is
// survived (func.yaml's too); requests in flight finish first; node_modules, .git and the build output are not
// watched; a command line serve refuses ends it as it ends serve.
const { after, describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const helpers = require('./helpers');

const CLI = path.join(__dirname, '..', 'lib', 'tools', 'cli.js');
const PATIENCE_MS = 20_000;
const strips = Boolean(process.features.typescript);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Every folder a test makes, removed once the file's tests are done (and their processes killed).
const made = [];
after(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});
/** A fresh function folder holding `files` ({ relative path: content }). */
const project = (files) => {
  const dir = helpers.project(files);
  made.push(dir);
  return dir;
};
/** A fresh folder outside the function, where files are made before they are moved in. */
const elsewhere = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-elsewhere-'));
  made.push(dir);
  return dir;
};
const answering = (text) => `module.exports = () => ${JSON.stringify(text)};\n`;

/**
 * Runs `funcrun serve <dir> --watch` on a free port (PORT, FUNC_HOST) until the test ends. The
 * process group is killed after the test, whatever happened.
 */
async function watching(t, dir, { execArgv = [], watch = true, flags = [], variables = {} } = {}) {
  const port = await helpers.freePort();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(FUNC_|PORT$|LIVENESS_URL$|READINESS_URL$)/.test(k)));
  const child = spawn(process.execPath, [...execArgv, CLI, 'serve', dir, ...(watch ? ['--watch'] : []), ...flags], {
    env: { ...env, PORT: String(port), FUNC_HOST: '127.0.0.1', ...variables },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  child.stderr.on('data', (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  t.after(async () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await exited;
  });
  const url = `http://127.0.0.1:${port}`;
  const proc = {
    child,
    out,
    exited,
    url,
    /** The answer's text, or undefined when nothing answers. */
    answer: (query = '') =>
      fetch(url + query, { signal: AbortSignal.timeout(PATIENCE_MS) }).then(
        (r) => r.text(),
        () => undefined,
      ),
    /** The child's JSON log lines on stdout. */
    lines: () =>
      out.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l)),
    /** funcrun's own lines on stderr matching `pattern`. */
    said: (pattern) => out.stderr.split('\n').filter((l) => pattern.test(l)),
    /** Polls `condition` until it holds; fails after PATIENCE_MS, showing the output. */
    async until(condition, what) {
      const deadline = Date.now() + PATIENCE_MS;
      for (;;) {
        if (await condition()) return;
        if (Date.now() > deadline) assert.fail(`gave up waiting for ${what}\nstderr:\n${out.stderr}\nstdout:\n${out.stdout}`);
        await sleep(50);
      }
    },
    /** Waits until the function answers `text`. */
    answers: (text) => proc.until(async () => (await proc.answer()) === text, `the answer ${JSON.stringify(text)}`),
  };
  return proc;
}

/** The function's starts so far: the pid of each "listening on" line. */
const starts = (proc) =>
  proc
    .lines()
    .filter((l) => /^listening on /.test(l.msg))
    .map((l) => l.pid);

const GIT_CONFIG = ['-c', 'user.name=spec', '-c', 'user.email=spec@example.com', '-c', 'commit.gpgSign=false', '-c', 'tag.gpgSign=false'];
const git = (cwd, ...args) => execFileSync('git', [...GIT_CONFIG, ...args], { cwd, stdio: 'pipe' });

/** Serves a function answering v1 with --watch, then for each version saves it with `save` and waits for that answer. */
async function eachSaveSeen(t, versions, save) {
  const dir = project({ 'index.js': answering('v1') });
  const proc = await watching(t, dir);
  await proc.answers('v1');
  for (const version of versions) {
    await save(dir, version, proc);
    await proc.answers(version);
  }
}

describe('funcrun serve --watch sees every save, each style twice in a row', () => {
  it('an in-place write (truncate and write)', (t) =>
    eachSaveSeen(t, ['v2', 'v3'], (dir, version) => fs.writeFileSync(path.join(dir, 'index.js'), answering(version))));

  it("an editor's atomic save (a temp file in the folder, renamed over the original)", (t) =>
    eachSaveSeen(t, ['v2', 'v3', 'v4'], (dir, version) => {
      fs.writeFileSync(path.join(dir, '.index.js.tmp'), answering(version));
      fs.renameSync(path.join(dir, '.index.js.tmp'), path.join(dir, 'index.js'));
    }));

  it('git checkout of another version of the file (the function folder is the repository)', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    git(dir, 'init', '-q');
    git(dir, 'add', '.');
    git(dir, 'commit', '-qm', 'v1');
    git(dir, 'tag', 'v1');
    fs.writeFileSync(path.join(dir, 'index.js'), answering('v2'));
    git(dir, 'commit', '-qam', 'v2');
    git(dir, 'tag', 'v2');
    git(dir, 'checkout', '-q', 'v1', '--', 'index.js');
    const proc = await watching(t, dir);
    await proc.answers('v1');
    for (const version of ['v2', 'v1', 'v2']) {
      git(dir, 'checkout', '-q', version, '--', 'index.js');
      await proc.answers(version);
    }
  });

  it('a file moved in from another folder', (t) => {
    const outside = elsewhere();
    return eachSaveSeen(t, ['v2', 'v3', 'v4'], (dir, version) => {
      fs.writeFileSync(path.join(outside, 'index.js'), answering(version));
      fs.renameSync(path.join(outside, 'index.js'), path.join(dir, 'index.js'));
    });
  });

  it('a file deleted, then created again', (t) =>
    eachSaveSeen(t, ['v2', 'v3'], async (dir, version, proc) => {
      fs.unlinkSync(path.join(dir, 'index.js'));
      // Without its file the function cannot start: nothing answers until it is back.
      await proc.until(async () => (await proc.answer()) === undefined, 'the function to stop');
      fs.writeFileSync(path.join(dir, 'index.js'), answering(version));
    }));

  it('a new file in a new folder, which the function then requires, saved again and again', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    const helper = path.join(dir, 'lib', 'helper.js');
    const proc = await watching(t, dir);
    await proc.answers('v1');
    fs.mkdirSync(path.join(dir, 'lib'));
    fs.writeFileSync(helper, answering('helper 1'));
    fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = () => require("./lib/helper.js")();\n');
    await proc.answers('helper 1');
    fs.writeFileSync(helper, answering('helper 2'));
    await proc.answers('helper 2');
    // The folder removed and made again: the new one is watched too.
    fs.rmSync(path.join(dir, 'lib'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'lib'));
    fs.writeFileSync(helper, answering('helper 3'));
    await proc.answers('helper 3');
    fs.writeFileSync(helper, answering('helper 4'));
    await proc.answers('helper 4');
  });

  it('a new folder moved in whole, then replaced by another, its file saved after each', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    const outside = elsewhere();
    const helper = path.join(dir, 'lib', 'helper.js');
    /** A lib folder made outside the function, then renamed into it (replacing the one there). */
    const moveIn = (text, n) => {
      fs.mkdirSync(path.join(outside, `lib${n}`));
      fs.writeFileSync(path.join(outside, `lib${n}`, 'helper.js'), answering(text));
      if (fs.existsSync(path.join(dir, 'lib'))) fs.renameSync(path.join(dir, 'lib'), path.join(outside, `old${n}`));
      fs.renameSync(path.join(outside, `lib${n}`), path.join(dir, 'lib'));
    };
    const proc = await watching(t, dir);
    await proc.answers('v1');
    moveIn('helper 1', 1);
    fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = () => require("./lib/helper.js")();\n');
    await proc.answers('helper 1');
    fs.writeFileSync(helper, answering('helper 2'));
    await proc.answers('helper 2');
    moveIn('helper 3', 2);
    await proc.answers('helper 3');
    fs.writeFileSync(helper, answering('helper 4'));
    await proc.answers('helper 4');
  });
});

describe('funcrun serve --watch sees every save in a folder deleted and made again at once', () => {
  it('rm -rf lib, then lib made again with its file (as a build or a copy does), twice; then the file saved', async (t) => {
    const dir = project({ 'index.js': 'module.exports = () => require("./lib/helper.js")();\n', 'lib/helper.js': answering('helper 1') });
    const helper = path.join(dir, 'lib', 'helper.js');
    const proc = await watching(t, dir);
    await proc.answers('helper 1');
    for (const version of ['helper 2', 'helper 3']) {
      fs.rmSync(path.join(dir, 'lib'), { recursive: true });
      fs.mkdirSync(path.join(dir, 'lib'));
      fs.writeFileSync(helper, answering(version));
      await proc.answers(version);
    }
    for (const version of ['helper 4', 'helper 5']) {
      fs.writeFileSync(helper, answering(version));
      await proc.answers(version);
    }
  });

  it('lib moved out of the function and another made in its place, then its file saved', async (t) => {
    const dir = project({ 'index.js': 'module.exports = () => require("./lib/helper.js")();\n', 'lib/helper.js': answering('helper 1') });
    const outside = elsewhere();
    const helper = path.join(dir, 'lib', 'helper.js');
    const proc = await watching(t, dir);
    await proc.answers('helper 1');
    for (const [n, version] of ['helper 2', 'helper 3'].entries()) {
      fs.renameSync(path.join(dir, 'lib'), path.join(outside, `old${n}`));
      fs.mkdirSync(path.join(dir, 'lib'));
      fs.writeFileSync(helper, answering(version));
      await proc.answers(version);
    }
    fs.writeFileSync(helper, answering('helper 4'));
    await proc.answers('helper 4');
  });
});

describe('funcrun serve --watch through failures and reloads', () => {
  it('a save with a syntax error stops the function with its start error; the fixed save serves again', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    // Saved as editors do, renamed over the original: the fix is the save after a replacement.
    const save = (text) => {
      fs.writeFileSync(path.join(dir, '.index.js.tmp'), text);
      fs.renameSync(path.join(dir, '.index.js.tmp'), path.join(dir, 'index.js'));
    };
    // serve's start error, a JSON line on stderr (not a terminal) naming the file.
    const startErrors = () =>
      proc.out.stderr
        .split('\n')
        .filter(
          (l) =>
            l.startsWith('{"level":60') &&
            /SyntaxError: Unexpected end of input/.test(JSON.parse(l).msg) &&
            JSON.parse(l).msg.includes(path.join(dir, 'index.js')),
        );
    for (const [i, fixed] of ['v2', 'v3'].entries()) {
      save('module.exports = () => {\n');
      await proc.until(() => startErrors().length === i + 1, 'the start error');
      await proc.until(async () => (await proc.answer()) === undefined, 'the function to stop');
      save(answering(fixed));
      await proc.answers(fixed);
    }
    assert.equal(proc.said(/^funcrun: the function stopped \(exit code 1\)/).length, 2, proc.out.stderr);
  });

  it("a func.yaml saved with a syntax error, or with a value funcrun refuses, stops the function with serve's message; the save that fixes it serves again", async (t) => {
    const valid = 'specVersion: 0.36.0\nname: watched\nruntime: node\n';
    const dir = project({ 'index.js': answering('v1'), 'func.yaml': valid });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    const broken = [
      ['name: [watched\n', /func\.yaml:\d+: Flow sequence/],
      [valid + 'run:\n  envs:\n    - name: FUNC_LOG_LEVEL\n      value: loud\n', /invalid FUNC_LOG_LEVEL: unknown log level 'loud'/],
    ];
    for (const [i, [text, message]] of broken.entries()) {
      fs.writeFileSync(path.join(dir, 'func.yaml'), text);
      await proc.until(
        () => proc.said(/^funcrun: the function stopped \(exit code 2\); the next save starts it again$/).length === i + 1,
        'the function to stop',
      );
      assert.equal(proc.out.stderr.split('\n').filter((l) => l.startsWith('{"level":60') && message.test(JSON.parse(l).msg)).length, 1, proc.out.stderr);
      assert.equal(await proc.answer(), undefined);
      fs.writeFileSync(path.join(dir, 'index.js'), answering(`v${i + 2}`));
      fs.writeFileSync(path.join(dir, 'func.yaml'), valid);
      await proc.answers(`v${i + 2}`);
    }
  });

  it('a request in flight when a file is saved gets its whole answer from the old code; then the new code answers, started once', async (t) => {
    // The slow request waits for the drain to begin and for the test to let it go (a file in
    // node_modules, which is not watched).
    const slow = (version) => `const fs = require('node:fs');
module.exports = async (ctx) => {
  if (ctx.query.slow) {
    ctx.log.info('slow request started');
    for (let i = 0; i < 600 && !fs.existsSync(__dirname + '/node_modules/release'); i++) await new Promise((r) => setTimeout(r, 25));
    return ${JSON.stringify(version)} + ' after the wait';
  }
  return ${JSON.stringify(version)};
};
`;
    const dir = project({ 'index.js': slow('v1'), 'node_modules/.keep': '' });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    const inFlight = proc.answer('/?slow=1');
    await proc.until(() => proc.lines().some((l) => l.msg === 'slow request started'), 'the slow request to start');
    fs.writeFileSync(path.join(dir, 'index.js'), slow('v2'));
    await proc.until(() => proc.lines().some((l) => /^SIGTERM: draining/.test(l.msg)), 'the drain to begin');
    // Saved again while the old function drains: still one new function, reading the last save.
    fs.writeFileSync(path.join(dir, 'index.js'), slow('v3'));
    await proc.until(() => proc.said(/changed, restarting$/).length === 2, 'the second save to be seen');
    fs.writeFileSync(path.join(dir, 'node_modules', 'release'), '');
    assert.equal(await inFlight, 'v1 after the wait');
    await proc.answers('v3');
    const lines = proc.lines();
    const [first, second] = starts(proc);
    const stopped = lines.findIndex((l) => l.pid === first && l.msg === 'stopped');
    const restarted = lines.findIndex((l) => l.pid === second && /^listening on /.test(l.msg));
    assert.ok(stopped !== -1 && stopped < restarted, 'the old function stopped before the new one listened');
    assert.equal(starts(proc).length, 2, proc.out.stdout);
    assert.doesNotMatch(proc.out.stderr, /"level":60/, 'no second function failed to start beside the first');
  });

  it('says `watching <folder>` once at start, not at each restart', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    for (const version of ['v2', 'v3']) {
      fs.writeFileSync(path.join(dir, 'index.js'), answering(version));
      await proc.answers(version);
    }
    assert.deepEqual(proc.said(/^funcrun: watching /), [`funcrun: watching ${dir} (not node_modules, .git)`]);
    assert.equal(proc.said(/^funcrun: index\.js changed, restarting$/).length, 2, proc.out.stderr);
  });

  it('several files saved at once are one restart', async (t) => {
    const dir = project({
      'index.js': 'module.exports = () => require("./a.js") + require("./lib/b.js");\n',
      'a.js': 'module.exports = "a1";\n',
      'lib/b.js': 'module.exports = "b1";\n',
    });
    const proc = await watching(t, dir);
    await proc.answers('a1b1');
    fs.writeFileSync(path.join(dir, 'a.js'), 'module.exports = "a2";\n');
    fs.writeFileSync(path.join(dir, 'lib', 'b.js'), 'module.exports = "b2";\n');
    fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = () => "new " + require("./a.js") + require("./lib/b.js");\n');
    await proc.answers('new a2b2');
    // One more save: any stray restart of the three would have come before its own.
    fs.writeFileSync(path.join(dir, 'a.js'), 'module.exports = "a3";\n');
    await proc.answers('new a3b2');
    assert.equal(starts(proc).length, 3, proc.out.stderr + proc.out.stdout);
    assert.equal(proc.said(/changed, restarting$/).length, 2, proc.out.stderr);
  });

  it('node_modules and .git are not watched: an npm install and git commits restart nothing', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    git(dir, 'init', '-q');
    const proc = await watching(t, dir);
    await proc.answers('v1');
    for (let i = 0; i < 200; i++) {
      fs.mkdirSync(path.join(dir, 'node_modules', `dep${i}`, 'lib'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'node_modules', `dep${i}`, 'lib', 'index.js'), `module.exports = ${i};\n`);
      fs.writeFileSync(path.join(dir, 'node_modules', `dep${i}`, 'package.json'), '{}');
    }
    git(dir, 'add', '.');
    git(dir, 'commit', '-qm', 'one');
    // Longer than the settling delay, so that a restart they caused would be a restart of its own.
    await sleep(1000);
    fs.writeFileSync(path.join(dir, 'index.js'), answering('v2'));
    await proc.answers('v2');
    assert.deepEqual(proc.said(/changed, restarting$/), ['funcrun: index.js changed, restarting']);
    assert.equal(starts(proc).length, 2, proc.out.stderr + proc.out.stdout);
  });

  it('files other than code, JSON and YAML restart nothing: a log written in the folder, a swap file', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    for (let i = 0; i < 20; i++) {
      fs.appendFileSync(path.join(dir, 'out.log'), `line ${i}\n`);
      fs.writeFileSync(path.join(dir, '.index.js.swp'), `swap ${i}`);
      await sleep(20);
    }
    // Longer than the settling delay, so that a restart they caused would be a restart of its own.
    await sleep(1000);
    fs.writeFileSync(path.join(dir, 'func.yaml'), 'specVersion: 0.36.0\nname: watched\nruntime: node\n');
    await proc.until(() => proc.said(/changed, restarting$/).length > 0, 'the restart func.yaml causes');
    assert.deepEqual(proc.said(/changed, restarting$/), ['funcrun: func.yaml changed, restarting']);
  });

  for (const [layout, manifest, built] of [
    ['with "main": build/src/index.js', { main: 'build/src/index.js' }, ['build', 'src', 'index.js']],
    ['without "main" (its build in build/index.js)', {}, ['build', 'index.js']],
  ]) {
    it(
      `a TypeScript project's build output is not watched, ${layout}: a build restarts nothing`,
      { skip: !strips && 'this node does not strip types' },
      async (t) => {
        const dir = project({
          'package.json': JSON.stringify({ name: 'ts-fn', type: 'module', ...manifest }),
          'src/index.ts': 'export const handle = (): string => "v1";\n',
        });
        const proc = await watching(t, dir);
        await proc.answers('v1');
        fs.mkdirSync(path.join(dir, ...built.slice(0, -1)), { recursive: true });
        fs.writeFileSync(path.join(dir, ...built), 'export const handle = () => "built";\n');
        // Longer than the settling delay, so that a restart the build caused would be one of its own.
        await sleep(1000);
        fs.writeFileSync(path.join(dir, 'src', 'index.ts'), 'export const handle = (): string => "v2";\n');
        await proc.answers('v2');
        assert.deepEqual(proc.said(/changed, restarting$/), [`funcrun: ${path.join('src', 'index.ts')} changed, restarting`]);
        assert.deepEqual(proc.said(/^funcrun: watching /), [`funcrun: watching ${dir} (not node_modules, .git or build)`]);
      },
    );
  }

  it('a command line or a variable serve refuses ends funcrun at once with its message and exit code 2, as without --watch', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    for (const [flags, message, variables] of [
      [['--prot', '8080'], /--prot.*did you mean --port/],
      [['--grace-period', 'soon'], /grace/i],
      [[], /invalid FUNC_LOG_LEVEL: unknown log level 'loud'/, { FUNC_LOG_LEVEL: 'loud' }],
    ]) {
      const proc = await watching(t, dir, { flags, variables });
      assert.deepEqual(await proc.exited, { code: 2, signal: null }, proc.out.stderr);
      assert.match(proc.out.stderr, message);
      assert.deepEqual(starts(proc), []);
    }
  });

  it(
    'the watcher (chokidar) is loaded with --watch only: a plain funcrun serve starts without it',
    { skip: typeof require('node:module').registerHooks !== 'function' && 'this node has no module.registerHooks' },
    async (t) => {
      // Says each file of chokidar's package that funcrun's process loads, however it is reached.
      const hooks = project({
        'hook.js':
          "require('node:module').registerHooks({ load(url, context, next) { if (url.includes('/node_modules/chokidar/')) process.stderr.write('loaded ' + url + '\\n'); return next(url, context); } });\n",
      });
      const dir = project({ 'index.js': answering('v1') });
      for (const watch of [false, true]) {
        const proc = await watching(t, dir, { execArgv: ['--require', path.join(hooks, 'hook.js')], watch });
        await proc.answers('v1');
        const loaded = proc.said(/^loaded .*\/node_modules\/chokidar\//);
        if (watch)
          assert.ok(
            loaded.some((l) => l.endsWith('/node_modules/chokidar/index.js')),
            `the hook sees chokidar load with --watch: ${proc.out.stderr}`,
          );
        else assert.deepEqual(loaded, [], 'without --watch');
        proc.child.kill('SIGTERM');
        await proc.exited;
      }
    },
  );

  for (const signal of ['SIGTERM', 'SIGINT']) {
    it(`${signal} to funcrun stops the function and exits with its code`, async (t) => {
      const dir = project({ 'index.js': answering('v1') });
      const proc = await watching(t, dir);
      await proc.answers('v1');
      const [pid] = starts(proc);
      proc.child.kill(signal);
      assert.deepEqual(await proc.exited, { code: 0, signal: null });
      assert.ok(
        proc.lines().some((l) => l.pid === pid && l.msg === 'stopped'),
        proc.out.stdout,
      );
      assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    });
  }
});

/** A function answering `text`, or stuck for good in a synchronous loop for `?loop=1` (once it has logged so). */
const loopingOnAsk = (text) => `module.exports = (ctx) => {
  if (ctx.query.loop) {
    ctx.log.info('looping');
    for (;;);
  }
  return ${JSON.stringify(text)};
};
`;

/** Starts a request that gets the function stuck, and waits until it is. */
async function getStuck(proc) {
  void proc.answer('/?loop=1');
  await proc.until(() => proc.lines().some((l) => l.msg === 'looping'), 'the function to be stuck');
}

/** Whether a process of this id exists (a zombie counts: its parent has not reaped it). */
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

// A bound far above the time these take (a second or two), far below the hang they catch.
const BOUND_MS = 10_000;

/** funcrun's exit, or a failure once `ms` have passed: a hang, not a slow machine. */
async function exitWithin(proc, ms = BOUND_MS) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`funcrun did not exit within ${ms} ms\nstderr:\n${proc.out.stderr}`)), ms);
  });
  try {
    return await Promise.race([proc.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('funcrun serve --watch with a function stuck in a synchronous loop', () => {
  it("a handler stuck for good is killed once its grace period (func.yaml's FUNC_GRACE_PERIOD), and as long again for shutdown(), has passed: the save that fixes it is served", async (t) => {
    const funcYaml = 'specVersion: 0.36.0\nname: stuck\nruntime: node\nrun:\n  envs:\n    - name: FUNC_GRACE_PERIOD\n      value: 100ms\n';
    const dir = project({ 'index.js': loopingOnAsk('v1'), 'func.yaml': funcYaml });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    const [stuck] = starts(proc);
    await getStuck(proc);
    const saved = Date.now();
    fs.writeFileSync(path.join(dir, 'index.js'), loopingOnAsk('v2'));
    await proc.answers('v2');
    assert.ok(Date.now() - saved < BOUND_MS, `served ${Date.now() - saved} ms after the save`);
    assert.deepEqual(proc.said(/did not stop/), ['funcrun: the function did not stop within 1.2s of SIGTERM: killed (SIGKILL)']);
    assert.equal(alive(stuck), false);
  });

  it('a function stuck at load (a top-level loop) is killed the same way (--grace-period): the save that fixes it is served', async (t) => {
    // It says it is stuck through a file in node_modules, which is not watched.
    const dir = project({ 'index.js': "require('node:fs').writeFileSync(__dirname + '/node_modules/looping', '');\nfor (;;);\n", 'node_modules/.keep': '' });
    const proc = await watching(t, dir, { flags: ['--grace-period', '100ms'] });
    await proc.until(() => fs.existsSync(path.join(dir, 'node_modules', 'looping')), 'the function to be stuck at load');
    const saved = Date.now();
    fs.writeFileSync(path.join(dir, 'index.js'), answering('v2'));
    await proc.answers('v2');
    assert.ok(Date.now() - saved < BOUND_MS, `served ${Date.now() - saved} ms after the save`);
    assert.deepEqual(proc.said(/did not stop/), ['funcrun: the function did not stop within 1.2s of SIGTERM: killed (SIGKILL)']);
  });

  it('SIGTERM to funcrun with the function stuck (FUNC_GRACE_PERIOD): killed once its grace period has passed, twice; funcrun exits 3 and the function is gone', async (t) => {
    const dir = project({ 'index.js': loopingOnAsk('v1') });
    const proc = await watching(t, dir, { variables: { FUNC_GRACE_PERIOD: '100ms' } });
    await proc.answers('v1');
    const [stuck] = starts(proc);
    await getStuck(proc);
    proc.child.kill('SIGTERM');
    assert.deepEqual(await exitWithin(proc), { code: 3, signal: null });
    assert.deepEqual(proc.said(/did not stop/), ['funcrun: the function did not stop within 1.2s of SIGTERM: killed (SIGKILL)']);
    assert.equal(alive(stuck), false);
  });

  it('Ctrl-C twice (SIGINT to the process group, the second after the echo window): the function is killed at once, funcrun exits 3 and the function is gone', async (t) => {
    // The default grace period: the first Ctrl-C alone would wait 21 s before killing it.
    const dir = project({ 'index.js': loopingOnAsk('v1') });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    const [stuck] = starts(proc);
    await getStuck(proc);
    process.kill(-proc.child.pid, 'SIGINT');
    await sleep(500);
    process.kill(-proc.child.pid, 'SIGINT');
    assert.deepEqual(await exitWithin(proc, 5000), { code: 3, signal: null });
    assert.deepEqual(proc.said(/again/), ['funcrun: SIGINT again: killing the function (SIGKILL)']);
    assert.equal(alive(stuck), false, 'the function was reaped before funcrun exited');
  });

  it('a SIGINT passed on within milliseconds of the first (npm run dev under Ctrl-C) is one stop: the function drains and funcrun exits 0', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    const proc = await watching(t, dir);
    await proc.answers('v1');
    const [pid] = starts(proc);
    proc.child.kill('SIGINT');
    proc.child.kill('SIGINT');
    assert.deepEqual(await exitWithin(proc), { code: 0, signal: null });
    assert.ok(
      proc.lines().some((l) => l.pid === pid && l.msg === 'stopped'),
      proc.out.stdout,
    );
    assert.deepEqual(proc.said(/again/), []);
  });
});

describe('funcrun serve --watch and symbolic links', () => {
  it('links out of the folder (to / and to /usr) are not followed: the function is watched and served at once, and saves restart it', async (t) => {
    const dir = project({ 'index.js': 'module.exports = () => require("./lib/helper.js")();\n', 'lib/helper.js': answering('helper 1') });
    fs.symlinkSync('/', path.join(dir, 'root'));
    fs.symlinkSync('/usr', path.join(dir, 'usr'));
    // A link inside the folder to a folder inside it: what it points to is watched as itself.
    fs.symlinkSync(path.join(dir, 'lib'), path.join(dir, 'lib-link'));
    const started = Date.now();
    const proc = await watching(t, dir);
    await proc.answers('helper 1');
    assert.ok(Date.now() - started < BOUND_MS, `served ${Date.now() - started} ms after the start`);
    fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = () => "index " + require("./lib-link/helper.js")();\n');
    await proc.answers('index helper 1');
    fs.writeFileSync(path.join(dir, 'lib', 'helper.js'), answering('helper 2'));
    await proc.answers('index helper 2');
  });

  it('a folder given through a link to it is watched as the folder it is: a save restarts the function', async (t) => {
    const dir = project({ 'index.js': answering('v1') });
    const link = path.join(elsewhere(), 'function');
    fs.symlinkSync(dir, link);
    const proc = await watching(t, link);
    await proc.answers('v1');
    fs.writeFileSync(path.join(dir, 'index.js'), answering('v2'));
    await proc.answers('v2');
    assert.deepEqual(proc.said(/changed, restarting$/), ['funcrun: index.js changed, restarting']);
  });
});
