'use strict';
// Where the server listens, as Knative func's images say it: LISTEN_ADDRESS (`[::]:8080` in every
// image func builds) before PORT, FUNC_PORT and FUNC_HOST, the flags before everything; `::` is
// node's every address. Real starts of `node lib/serve.js` on loopback (and `[::]`), on free ports.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const { freePort, project, run } = require('./helpers');

const folder = project({ 'index.js': 'module.exports = () => ({ body: { ok: true } });\n' });

/** Starts serve with `env` and `args`; resolves with the `listening on` line and the process. */
async function listening(t, env, args = []) {
  const proc = run([folder, ...args], { env });
  t.after(() => proc.stop('SIGKILL'));
  const line = await proc.waitFor((l) => /^listening on /.test(l.msg), 'the listening line');
  return { line, proc };
}

/** The function answers at `host` (an IP address) and `port`. */
async function answers(host, port) {
  const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${port}/`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { ok: true });
}

/** Whether this machine has an IPv6 loopback to listen on. */
function hasIPv6Loopback() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(0, '::1', () => server.close(() => resolve(true)));
  });
}

describe('LISTEN_ADDRESS', () => {
  let ipv6 = false;
  before(async () => {
    ipv6 = await hasIPv6Loopback();
  });
  after(() => fs.rmSync(folder, { recursive: true, force: true }));

  it('host:port: listens there, and the log line says where', async (t) => {
    const port = await freePort();
    const { line } = await listening(t, { LISTEN_ADDRESS: `127.0.0.1:${port}` });
    assert.equal(line.msg, `listening on http://127.0.0.1:${port}`);
    assert.equal(line.address, '127.0.0.1');
    assert.equal(line.port, port);
    await answers('127.0.0.1', port);
  });

  it('[IPv6]:port: the IPv6 loopback', async (t) => {
    if (!ipv6) return t.skip('no IPv6 loopback on this machine');
    const port = await freePort();
    const { line } = await listening(t, { LISTEN_ADDRESS: `[::1]:${port}` });
    assert.equal(line.msg, `listening on http://[::1]:${port}`);
    await answers('::1', port);
  });

  it("[::]:port, as func writes it: node's every address, reached over IPv4 too", async (t) => {
    const port = await freePort();
    const { line } = await listening(t, { LISTEN_ADDRESS: `[::]:${port}` });
    // `::` where the machine has IPv6 (both families), `0.0.0.0` where it has none: never a failed start.
    assert.ok(['::', '0.0.0.0'].includes(line.address), line.msg);
    assert.equal(line.msg, `listening on http://${line.address === '::' ? '[::]' : '0.0.0.0'}:${port}`);
    await answers('127.0.0.1', port);
    if (ipv6) await answers('::1', port);
  });

  it('comes before PORT, FUNC_PORT and FUNC_HOST', async (t) => {
    const [port, other] = [await freePort(), await freePort()];
    const { line } = await listening(t, { LISTEN_ADDRESS: `127.0.0.1:${port}`, PORT: String(other), FUNC_PORT: String(other), FUNC_HOST: '::1' });
    assert.equal(line.msg, `listening on http://127.0.0.1:${port}`);
  });

  it(':port gives the port alone: FUNC_HOST still says the host', async (t) => {
    const [port, other] = [await freePort(), await freePort()];
    const { line } = await listening(t, { LISTEN_ADDRESS: `:${port}`, PORT: String(other), FUNC_HOST: '127.0.0.1' });
    assert.equal(line.msg, `listening on http://127.0.0.1:${port}`);
  });

  it('the flags come before it, each for its own part', async (t) => {
    const [port, other] = [await freePort(), await freePort()];
    const byPort = await listening(t, { LISTEN_ADDRESS: `127.0.0.1:${other}` }, ['--port', String(port)]);
    assert.equal(byPort.line.msg, `listening on http://127.0.0.1:${port}`);
    const byHost = await listening(t, { LISTEN_ADDRESS: `[::]:${other}` }, ['--host', '127.0.0.1', '--port', String(await freePort())]);
    assert.equal(byHost.line.address, '127.0.0.1');
  });

  it('a host of :: from FUNC_HOST or --host is every address too, not a failed start where IPv6 is missing', async (t) => {
    const port = await freePort();
    const { line } = await listening(t, { FUNC_HOST: '::', PORT: String(port) });
    assert.ok(['::', '0.0.0.0'].includes(line.address), line.msg);
    await answers('127.0.0.1', port);
  });

  it('its port in use: the hint moves the port in LISTEN_ADDRESS, since PORT comes after it', async (t) => {
    const busy = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => busy.once('listening', resolve));
    t.after(() => busy.close());
    const { port } = busy.address();
    const proc = run([folder], { env: { LISTEN_ADDRESS: `127.0.0.1:${port}` } });
    assert.equal((await proc.exited).code, 1);
    const line = JSON.parse(proc.out.stderr);
    assert.equal(line.msg, `port ${port} is already in use`);
    assert.equal(line.hint, `serve on another port: LISTEN_ADDRESS=127.0.0.1:${port + 1} (or --port ${port + 1})`);
  });

  it('a host that does not resolve: the error names where the host was set, not the port', async () => {
    const port = String(await freePort());
    const fromFlag = run([folder, '--host', 'nonexistent.invalid'], { env: { LISTEN_ADDRESS: `:${port}` } });
    assert.equal((await fromFlag.exited).code, 1);
    const flagLine = JSON.parse(fromFlag.out.stderr.trim().split('\n').pop());
    assert.equal(flagLine.err.code, 'ENOTFOUND', fromFlag.out.stderr);
    assert.equal(flagLine.err.setBy, '--host');
    const fromVariable = run([folder, '--port', port], { env: { LISTEN_ADDRESS: 'nonexistent.invalid:1' } });
    assert.equal((await fromVariable.exited).code, 1);
    const variableLine = JSON.parse(fromVariable.out.stderr.trim().split('\n').pop());
    assert.equal(variableLine.err.code, 'ENOTFOUND', fromVariable.out.stderr);
    assert.equal(variableLine.err.setBy, 'LISTEN_ADDRESS');
  });

  it('a host longer than a host name can be stops the start, echoed cut', async () => {
    const proc = run([folder, '--host', 'h'.repeat(100_000)]);
    assert.equal((await proc.exited).code, 2);
    assert.ok(proc.out.stderr.length < 600, proc.out.stderr.slice(0, 300));
    assert.match(JSON.parse(proc.out.stderr).msg, /^invalid --host "h{80}…": longer than a host name can be/);
  });

  it('a malformed value stops the start with exit code 2 and a line naming LISTEN_ADDRESS', async () => {
    const cases = {
      8080: /a port alone has a colon before it \(:8080\)/,
      '::1:8080': /an IPv6 address goes in brackets/,
      '[nope]:8080': /"nope" is not an IPv6 address/,
      '127.0.0.1:': /not an address and port/,
      '127.0.0.1:65536': /the port is past 65535/,
      'a host:80': /"a host" is not a host name or an IPv4 address/,
      '[::1]': /not an address and port/,
      'http://0.0.0.0:1': /"http:\/\/0\.0\.0\.0:1": that is a URL, not an address/,
    };
    await Promise.all(
      Object.entries(cases).map(async ([value, why]) => {
        const proc = run([folder, '--port', '0'], { env: { LISTEN_ADDRESS: value, PORT: '0' } });
        const { code } = await proc.exited;
        assert.equal(code, 2, `${value}: ${proc.out.stderr}`);
        const lines = proc.out.stderr.trim().split('\n');
        assert.equal(lines.length, 1, proc.out.stderr);
        const { level, msg } = JSON.parse(lines[0]);
        assert.equal(level, 60);
        assert.ok(msg.startsWith(`invalid LISTEN_ADDRESS ${JSON.stringify(value)}: `), msg);
        assert.match(msg, why);
        assert.equal(proc.out.stdout, '', 'nothing listened');
      }),
    );
  });
});
