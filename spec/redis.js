'use strict';
// A real redis-server for the specs (Debian's package), on 127.0.0.1 and a free port, keeping
// nothing on disk; stopped, and its folder removed, when the test ends.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('./helpers');

const SERVER = 'redis-server';
/** How long a start may take before the spec fails (a wide bound that catches a hang). */
const START_MS = 10_000;

/** Resolves when a PING on a new connection is answered with PONG (or NOAUTH, which is Redis too). */
function pong(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk;
      if (reply.includes('\r\n')) {
        socket.destroy();
        resolve(/^(\+PONG|-NOAUTH)/.test(reply));
      }
    });
    socket.on('error', () => resolve(false));
    socket.on('close', () => resolve(false));
  });
}

/**
 * Starts redis-server for the test `t`, with `--requirepass password` when given.
 * Resolves to `{ url, port, stop(), start() }`: `url` carries the password; stop() ends the
 * server, start() brings it back on the same port: empty, or, when `persistent`, with every write
 * it answered (an append-only file synced before each answer).
 */
async function startRedis(t, { password, persistent = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-redis-'));
  let child;
  let exited;
  let output = '';

  async function launch(port) {
    // Persistent: every write in the append-only file before it is answered, so a restart keeps it.
    const keeping = persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...keeping, '--dir', dir, '--protected-mode', 'no'];
    if (password !== undefined) args.push('--requirepass', password);
    output = '';
    child = spawn(SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    exited = new Promise((resolve) => {
      child.on('close', resolve);
      // Not installed: .ci/run installs Debian's redis-server.
      child.on('error', (err) => resolve((output += `${err.message}\n`)));
    });
    const deadline = Date.now() + START_MS;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        await exited; // Its output, whole.
        return false;
      }
      if (await pong(port)) return true;
      if (Date.now() > deadline) throw new Error(`redis-server did not answer within ${START_MS} ms: ${output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  let port;
  // The port was free a moment ago; another process may take it first: try another.
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    if (await launch(port)) break;
    if (attempt === 4 || !/Address already in use/i.test(output)) throw new Error(`redis-server did not start: ${output}`);
  }

  async function stop() {
    if (child.exitCode !== null || child.signalCode !== null) return;
    // At once, as a crash or a lost host would (a paused server too).
    child.kill('SIGKILL');
    await exited;
  }

  async function start() {
    await stop();
    // The same port: the client under test reconnects to it. A socket of the old server may hold it a moment.
    const deadline = Date.now() + START_MS;
    while (!(await launch(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server did not start again on ${port}: ${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  t.after(async () => {
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const credentials = password === undefined ? '' : `:${encodeURIComponent(password)}@`;
  return {
    url: `redis://${credentials}127.0.0.1:${port}`,
    port,
    stop,
    start,
    /** The running server's process (a spec may pause it with SIGSTOP to play a hung Redis). */
    get process() {
      return child;
    },
  };
}

/**
 * A loopback TCP proxy to Redis at `port`, for the test `t`, that can lose or hold back the reply to
 * one command: `loseReplyTo(name)` lets the next such command through to Redis and, when Redis
 * answers it, drops the answer and cuts the connection (Redis did the command; the client never
 * hears so); `delayReplyTo(name, ms)` holds that answer, and those after it, for `ms`;
 * `cutBefore(name)` cuts the connection instead of passing the command on (Redis never sees it);
 * `swallowReplyTo(name)` drops that answer and leaves the connection open (replies out of step). Commands are
 * recognised by their name in RESP (`SET`, `EVAL`), as node-redis writes them, one at a time here.
 */
async function redisProxy(t, port) {
  let fault;
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    let armed;
    // Replies in order: a held one holds back those after it.
    let replies = Promise.resolve();
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      if (fault !== undefined && chunk.includes(`\r\n${fault.name}\r\n`)) {
        armed = fault;
        fault = undefined;
        if (armed.kind === 'cut') return cut();
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      const now = armed;
      armed = undefined;
      if (now?.kind === 'lose') return cut();
      // Dropped, the connection left open: every later reply answers the command before it.
      if (now?.kind === 'swallow') return;
      const wait = now?.kind === 'delay' ? now.ms : 0;
      replies = replies.then(() => new Promise((resolve) => setTimeout(resolve, wait))).then(() => client.writable && client.write(chunk));
    });
    for (const socket of [client, upstream]) {
      socket.on('error', cut);
      socket.on('close', () => {
        sockets.delete(socket);
        cut();
      });
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return {
    url: `redis://127.0.0.1:${server.address().port}`,
    loseReplyTo: (name) => (fault = { kind: 'lose', name }),
    delayReplyTo: (name, ms) => (fault = { kind: 'delay', name, ms }),
    cutBefore: (name) => (fault = { kind: 'cut', name }),
    swallowReplyTo: (name) => (fault = { kind: 'swallow', name }),
    /** Whether the fault set has been used. */
    get used() {
      return fault === undefined;
    },
  };
}

module.exports = { startRedis, redisProxy };
