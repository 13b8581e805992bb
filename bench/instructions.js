#!/usr/bin/env node
'use strict';
// npm run bench:instructions: the deterministic figures beside bench/run.js's noisy ones. Each
// server runs under valgrind's callgrind with collection off; after a warm-up (so V8 has optimised
// the hot path), collection is switched on for a fixed number of requests, sent one after another
// on one keep-alive connection, and the user-space instructions counted (every thread: V8's GC
// helpers included) are divided by that number. Bytes allocated on the JS heap per request come
// from the same window, read from V8's own GC trace (--trace-gc-nvp: each scavenge says how much
// was allocated since the one before), in a run without valgrind.
//   node bench/instructions.js [--requests 1000] [--warmup 3000] [--only json,event-reply]
const { spawn, execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { order, ce, freePort, untilUp } = require('./common');

const ROOT = path.join(__dirname, '..');
const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '3000' },
    only: { type: 'string' },
  },
});
const REQUESTS = Number(args.requests);
const WARMUP = Number(args.warmup);

const WORKLOADS = [
  { name: 'json', label: 'JSON POST', path: '/json', method: 'POST', headers: { 'content-type': 'application/json' }, body: order, target: 0.93 },
  { name: 'event-reply', label: 'CloudEvent, cloudEventResponse', path: '/event-reply', method: 'POST', headers: { ...ce, 'content-type': 'application/json' }, body: order, target: 0.85 },
  { name: 'query', label: 'GET with a query', path: '/query?name=ann&page=2', method: 'GET', headers: {} },
].filter((w) => !args.only || args.only.split(',').includes(w.name));

const SERVERS = {
  raw: (port) => [path.join(__dirname, 'raw.js'), { PORT: String(port) }],
  funcrun: (port) => [[path.join(ROOT, 'lib', 'serve.js'), path.join(__dirname, 'function'), '--port', String(port), '--host', '127.0.0.1'], {}],
};

/** Sends `count` requests one after another on one keep-alive connection; every answer must be 2xx. */
async function send(port, workload, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < count; i++) {
    await new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: workload.path, method: workload.method, headers: workload.headers, agent }, (res) => {
        if (res.statusCode >= 300) reject(new Error(`${workload.name}: HTTP ${res.statusCode}`));
        res.resume().on('end', resolve);
      });
      req.on('error', reject);
      req.end(workload.body);
    });
  }
  agent.destroy();
}

function serverArgv(name, port) {
  const [argv, env] = SERVERS[name](port);
  return { argv: Array.isArray(argv) ? argv : [argv], env: { ...process.env, ...env } };
}

async function instructions(name, workload) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-cg-'));
  const out = path.join(dir, 'callgrind.out');
  const { argv, env } = serverArgv(name, port);
  // JIT-compiled code rewrites itself: all-non-file makes valgrind notice.
  // Uninstrumented until the warm-up is done (valgrind then runs the server at a few times its
  // usual cost, not fifty), then zeroed, counted over the window, and dumped.
  const child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, ...argv], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  try {
    await untilUp(port, child, 50);
    await send(port, workload, WARMUP);
    const control = (...flags) => execFileSync('callgrind_control', [...flags, String(child.pid)], { stdio: 'ignore' });
    control('-i', 'on');
    // A few requests with instrumentation on first: the code is translated anew.
    await send(port, workload, 200);
    control('-z');
    await send(port, workload, REQUESTS);
    control('-d');
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.on('close', resolve));
  }
  // The dump asked for is <out>.1 (the one written at exit is <out> itself).
  const text = fs.readFileSync(`${out}.1`, 'utf8');
  const total = /^(?:summary|totals):\s+(\d+)/m.exec(text);
  fs.rmSync(dir, { recursive: true, force: true });
  if (total === null) throw new Error(`no callgrind total for ${name}: ${stderr.slice(-400)}`);
  return Number(total[1]) / REQUESTS;
}

async function allocated(name, workload) {
  const port = await freePort();
  const { argv, env } = serverArgv(name, port);
  const child = spawn(process.execPath, ['--trace-gc-nvp', ...argv], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  let stdout = '';
  child.stdout.on('data', (c) => (stdout += c));
  const sum = () => [...stdout.matchAll(/\ballocated=(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
  try {
    await untilUp(port, child, 50);
    await send(port, workload, WARMUP);
    const before = sum();
    // Enough requests that the allocation between the window's first and last scavenge dominates.
    await send(port, workload, REQUESTS * 10);
    await new Promise((r) => setTimeout(r, 100));
    return (sum() - before) / (REQUESTS * 10);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.on('close', resolve));
  }
}

async function main() {
  if (spawnSync('sh', ['-c', 'command -v valgrind && command -v callgrind_control']).status !== 0) {
    console.error('valgrind (with callgrind_control) is needed: apt-get install valgrind');
    process.exit(2);
  }
  const rows = [];
  for (const workload of WORKLOADS) {
    const ir = {};
    const bytes = {};
    for (const name of Object.keys(SERVERS)) {
      ir[name] = await instructions(name, workload);
      bytes[name] = await allocated(name, workload);
      console.error(`${workload.label}, ${name}: ${Math.round(ir[name])} instructions, ${Math.round(bytes[name])} bytes allocated per request`);
    }
    rows.push({ workload, ir, bytes });
  }
  const fmt = (n) => Math.round(n).toLocaleString('en-US');
  console.log(`Measured ${new Date().toISOString().slice(0, 10)}, Node.js ${process.version}, ${REQUESTS} requests after ${WARMUP} of warm-up, one keep-alive connection.`);
  console.log('');
  console.log('| workload | raw instructions / request | funcrun | raw / funcrun | target | raw bytes allocated / request | funcrun |');
  console.log('|---|---|---|---|---|---|---|');
  for (const { workload, ir, bytes } of rows) {
    const ratio = ir.raw / ir.funcrun;
    const target = workload.target === undefined ? '' : `≥ ${workload.target} ${ratio >= workload.target ? '(met)' : '(missed)'}`;
    console.log(`| ${workload.label} | ${fmt(ir.raw)} | ${fmt(ir.funcrun)} | **${ratio.toFixed(2)}** | ${target} | ${fmt(bytes.raw)} | ${fmt(bytes.funcrun)} |`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
