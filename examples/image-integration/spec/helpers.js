'use strict';
// The specs' own helpers, on funcrun's public entry points only: `funcrun/testing` serves a module
// in this process with a log sink; `run` starts the package as `npm start` does, with the
// `funcrun` command (`funcrun serve <folder>`), in a child process.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { startFunction, createLogSink } = require('funcrun/testing');

// The `funcrun` command as npm links it: the package's own `bin`.
const FUNCRUN = (() => {
  const manifest = require.resolve('funcrun/package.json');
  const { bin } = JSON.parse(fs.readFileSync(manifest, 'utf8'));
  return path.join(path.dirname(manifest), typeof bin === 'string' ? bin : bin.funcrun);
})();

/** Starts `func` on 127.0.0.1, port 0, logging at info (or `options.logLevel`) into `log`, a sink. */
async function serve(func, options = {}) {
  const log = createLogSink();
  const running = await startFunction(func, { logLevel: 'info', logDestination: log, ...options });
  return { ...running, log };
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
 * Runs `funcrun serve ...args` as `npm start` does. `env` is added to a copy of the environment
 * without the FUNC_ and probe variables of the one running the specs. Returns the child, its
 * output so far, and `exited` (resolves { code, signal }).
 */
function run(args, { env = {}, cwd } = {}) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(FUNC_|PORT$|LIVENESS_URL$|READINESS_URL$)/.test(k)));
  const child = spawn(process.execPath, [FUNCRUN, 'serve', ...args], { env: { ...base, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  child.stderr.on('data', (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, out, exited };
}

/** Runs the service on a free port and waits until it listens. */
async function runServing(args, options = {}) {
  const port = await freePort();
  const proc = run([...args, '--port', String(port), '--host', '127.0.0.1'], options);
  await waitUntilListening(port, proc);
  return { ...proc, port, url: `http://127.0.0.1:${port}` };
}

/** Resolves once `port` accepts a connection; rejects if `proc` (when given) exits first. */
async function waitUntilListening(port, proc) {
  for (;;) {
    if (proc && proc.child.exitCode !== null) throw new Error(`exited with ${proc.child.exitCode}: ${proc.out.stderr}${proc.out.stdout}`);
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

/**
 * Asks `url`'s liveness probe every 20 ms until `work` settles: resolves with each probe's time in
 * ms (how long the event loop kept it waiting) and what `work` resolved to. Every probe must be a 200.
 */
async function livenessWhile(url, work) {
  let done = false;
  work.finally(() => (done = true)).catch(() => undefined);
  const probes = [];
  do {
    const started = performance.now();
    const res = await request(`${url}/health/liveness`);
    probes.push(Math.round(performance.now() - started));
    if (res.status !== 200) throw new Error(`liveness answered ${res.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  } while (!done);
  return { probes, value: await work };
}

module.exports = { serve, request, freePort, run, runServing, waitUntilListening, livenessWhile };
