'use strict';
// Shared by the specs: a real server on 127.0.0.1, port 0, per case, and a sink for log lines.
const { serve: serveForTest, startFunction } = require('../lib/tools/testing.js');

/** Collects log lines; `entries()` parses each as JSON, so a line that is not JSON fails the test. */
function sink() {
  const lines = [];
  return {
    write(line) {
      lines.push(line);
    },
    lines,
    text: () => lines.join(''),
    entries: () => lines.map((line) => JSON.parse(line)),
  };
}

// funcrun/testing's options with the log kept in a sink, at the level start() itself resolves (an
// option, the environment, func.yaml, the module's, the compatibility default): an explicit
// `logLevel: undefined` takes the place of startFunction's `trace`.
function logged(options) {
  const log = sink();
  return { log, options: { logDestination: log, logLevel: undefined, ...options } };
}

/**
 * Serves `func` for the test `t` (funcrun/testing's serve): closed by `t.after` once the test ends.
 * Resolves to `{ url, port, server, log, close }`, `log` holding every line written.
 */
async function serve(t, func, options = {}) {
  const { log, options: withLog } = logged(options);
  return { ...(await serveForTest(t, func, withLog)), log };
}

/** The same for a server a whole `describe` shares: close it in that describe's `after`. */
async function startServer(func, options = {}) {
  const { log, options: withLog } = logged(options);
  return { ...(await startFunction(func, withLog)), log };
}

/** fetch, returning status, headers and the body as text (and JSON when it parses). */
async function request(url, init) {
  const res = await fetch(url, init);
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

module.exports = { serve, startServer, sink, request };

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const SERVE = path.join(__dirname, '..', 'lib', 'serve.js');

/** A fresh folder holding `files` ({ relative path: content }). */
function project(files) {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-spec-'));
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(folder, name)), { recursive: true });
    fs.writeFileSync(path.join(folder, name), content);
  }
  return folder;
}

/** A port that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs `node [...execArgv] lib/serve.js ...args` (or `script` in its place) as a user would. `env` is added to a clean copy of the
 * environment (without the FUNC_, PORT, LISTEN_ADDRESS and probe variables of the one running the specs).
 * Returns the child, its output so far, `exited` (resolves { code, signal }) and `stop(signal)`,
 * which sends the signal (SIGTERM) and resolves with `exited` (for `t.after(() => proc.stop())`).
 */
function run(args, { env = {}, cwd, execArgv = [], script = SERVE } = {}) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(FUNC_|PORT$|LISTEN_ADDRESS$|LIVENESS_URL$|READINESS_URL$)/.test(k)));
  const child = spawn(process.execPath, [...execArgv, script, ...args], { env: { ...base, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  child.stderr.on('data', (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const lines = () =>
    out.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  /** Resolves when a stdout line matches `test` (a function of the parsed line). */
  const waitFor = (test, what = 'log line') =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = lines().find(test);
        if (found) {
          cleanup();
          resolve(found);
        }
      };
      const onExit = () => {
        cleanup();
        reject(new Error(`exited before ${what}; stdout: ${out.stdout} stderr: ${out.stderr}`));
      };
      const cleanup = () => {
        child.stdout.off('data', check);
        child.off('close', onExit);
      };
      child.stdout.on('data', check);
      child.on('close', onExit);
      check();
    });
  const stop = (signal = 'SIGTERM') => {
    child.kill(signal);
    return exited;
  };
  return { child, out, exited, stop, lines, waitFor };
}

/** Runs serve.js on a free port and waits until it listens. */
async function runServing(args, options = {}) {
  const port = await freePort();
  const proc = run([...args, '--port', String(port), '--host', '127.0.0.1'], options);
  await waitUntilListening(port, proc);
  return { ...proc, port, url: `http://127.0.0.1:${port}` };
}

async function waitUntilListening(port, proc) {
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`exited with ${proc.child.exitCode}: ${proc.out.stderr}${proc.out.stdout}`);
    const up = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 25));
  }
}

module.exports.project = project;
module.exports.freePort = freePort;
module.exports.run = run;
module.exports.runServing = runServing;
module.exports.waitUntilListening = waitUntilListening;

// Large hostile inputs for the parsers' specs.
const MB = 1_000_000;
/** `unit` repeated to about `size` characters. */
const fill = (unit, size = MB) => unit.repeat(Math.ceil(size / unit.length));
/** `make(n)` for n = 0, 1, ... joined until the text reaches `size`. */
function grow(make, size = MB) {
  const parts = [];
  let length = 0;
  for (let n = 0; length < size; n++) {
    const part = make(n);
    parts.push(part);
    length += part.length;
  }
  return parts.join('');
}
module.exports.MB = MB;
module.exports.fill = fill;
module.exports.grow = grow;
