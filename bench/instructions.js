#!/usr/bin/env node
'use strict';
// npm run bench:instructions: the deterministic figures beside bench/run.js's noisy ones. Each
// server runs under valgrind's callgrind with collection off; after a warm-up, collection is
// switched on for a fixed number of requests, sent on a few keep-alive connections (each one
// request after another), and the user-space instructions counted (every thread: V8's GC helpers
// and optimising compiler included) are divided by that number. The warm-up is long on purpose:
// V8 goes on optimising node's and funcrun's code for some 40,000 requests, and with a few
// thousand the window counted mostly the compiler (2,000 warm-up requests: 120k of funcrun's
// 327k instructions per CloudEvent request were the optimising compiler's; 30,000: 13k of 160k). Bytes allocated on the JS heap per request come
// from the same window, read from V8's own GC trace (--trace-gc-nvp: each scavenge says how much
// was allocated since the one before), in a run without valgrind.
// The warm-up and the window share one pool of keep-alive connections: new connections before the
// window set off a wave of deoptimisation in both servers (node's socket code sees new maps), and
// the window then counted re-optimisation and slower code, differently from run to run (raw's
// CloudEvent answer 116k or 125k, funcrun's JSON 96k or 100k). With one pool no compiler work is
// left in the window and repeated runs agree within about 1%.
// Every server runs with its young generation at one fixed size (YOUNG). V8 otherwise grows it
// under load at moments of its own, and each scavenge has a fixed cost (walking the roots, some
// 10^5 instructions) spread over the requests between two scavenges: the same code read 82k or
// 85k on the JSON row, 115k or 123k on the CloudEvent answer, as the young generation had grown
// or not. Bytes allocated per request do not depend on it.
// The Hono rows (hono-get, hono-post) count the same app (bench/function-hono) served by funcrun and
// by its own Node adapter, @hono/node-server (installed as bench/run.js --peers does), in raw's place:
// with --peers, or when --only names them.
//   node bench/instructions.js [--requests 2000] [--warmup 30000] [--connections 4] [--peers] [--only json,event-reply,hono-get]
const { spawn, execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { order, ce, batchWorkload, honoWorkloads, honoFuncrunEnv, freePort, untilUp, installPeers } = require('./common');

const ROOT = path.join(__dirname, '..');
// The young generation's two halves at a fixed size (MB), the same for every server (see above).
const YOUNG = ['--min-semi-space-size=16', '--max-semi-space-size=16'];
const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '30000' },
    only: { type: 'string' },
    peers: { type: 'boolean', default: false },
    connections: { type: 'string', default: '4' },
  },
});
const REQUESTS = Number(args.requests);
const WARMUP = Number(args.warmup);
const CONNECTIONS = Number(args.connections);

const WORKLOADS = [
  { name: 'json', label: 'JSON POST', path: '/json', method: 'POST', headers: { 'content-type': 'application/json' }, body: order, target: 0.95 },
  {
    name: 'event-reply',
    label: 'CloudEvent, cloudEventResponse',
    path: '/event-reply',
    method: 'POST',
    headers: { ...ce, 'content-type': 'application/json' },
    body: order,
    target: 0.95,
  },
  batchWorkload,
  { name: 'query', label: 'GET with a query', path: '/query?name=ann&page=2', method: 'GET', headers: {} },
  // funcrun serving a Hono app against @hono/node-server serving it (the reference in raw's column).
  ...honoWorkloads,
].filter((w) => (args.only ? args.only.split(',').includes(w.name) : !w.hono || args.peers));

const SERVERS = {
  raw: (port) => [path.join(__dirname, 'raw.js'), { PORT: String(port) }],
  funcrun: (port) => [[path.join(ROOT, 'lib', 'serve.js'), path.join(__dirname, 'function'), '--port', String(port), '--host', '127.0.0.1'], {}],
};
// A Hono row's two servers, by the same names: its reference in raw's place.
const HONO_SERVERS = {
  raw: (port) => [path.join(__dirname, 'peers', 'hono-node-server.js'), { PORT: String(port), BENCH_PEERS: installPeers() }],
  funcrun: (port) => [
    [path.join(ROOT, 'lib', 'serve.js'), path.join(__dirname, 'function-hono'), '--port', String(port), '--host', '127.0.0.1'],
    honoFuncrunEnv,
  ],
};

/**
 * Sends `count` requests on the agent's CONNECTIONS keep-alive connections, each sending one after
 * another; every answer must be 2xx.
 */
async function send(agent, port, workload, count) {
  await Promise.all(
    Array.from({ length: CONNECTIONS }, (_, c) => sendOn(agent, port, workload, Math.floor(count / CONNECTIONS) + (c < count % CONNECTIONS ? 1 : 0))),
  );
}

/** The connections a server is warmed up and measured on. */
function pool() {
  return new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
}

async function sendOn(agent, port, workload, count) {
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
}

function serverArgv(name, port, workload) {
  const [argv, env] = (workload.hono ? HONO_SERVERS : SERVERS)[name](port);
  return { argv: Array.isArray(argv) ? argv : [argv], env: { ...process.env, ...env } };
}

async function instructions(name, workload) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-cg-'));
  const out = path.join(dir, 'callgrind.out');
  const { argv, env } = serverArgv(name, port, workload);
  // JIT-compiled code rewrites itself: all-non-file makes valgrind notice.
  // Uninstrumented until the warm-up is done (valgrind then runs the server at a few times its
  // usual cost, not fifty), then zeroed, counted over the window, and dumped.
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, ...YOUNG, ...argv],
    {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const agent = pool();
  try {
    await untilUp(port, child, 50);
    await send(agent, port, workload, WARMUP);
    const control = (...flags) => execFileSync('callgrind_control', [...flags, String(child.pid)], { stdio: 'ignore' });
    control('-i', 'on');
    // A few requests with instrumentation on first: the code is translated anew.
    await send(agent, port, workload, 200);
    control('-z');
    await send(agent, port, workload, REQUESTS);
    control('-d');
  } finally {
    agent.destroy();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.on('close', resolve));
  }
  // The dump asked for is <out>.1 (the one written at exit is <out> itself).
  const text = fs.readFileSync(`${out}.1`, 'utf8');
  const total = /^(?:summary|totals):\s+(\d+)/m.exec(text);
  if (total === null) throw new Error(`no callgrind total for ${name}: ${stderr.slice(-400)}`);
  const compiler = compilerInstructions(`${out}.1`);
  fs.rmSync(dir, { recursive: true, force: true });
  return { all: Number(total[1]) / REQUESTS, compiler: compiler / REQUESTS };
}

/**
 * The instructions V8's optimising compilers (Turbofan with Turboshaft, and Maglev) ran in the
 * window, by the functions' own cost: the figure compared is the rest. With the warm-up on the
 * window's connections it is next to none; a figure far from zero says the window was not steady.
 */
function compilerInstructions(file) {
  const report = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', file], { maxBuffer: 1 << 28 }).toString();
  let sum = 0;
  for (const line of report.split('\n')) {
    const m = /^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$/.exec(line);
    if (m !== null && /v8::internal::(?:compiler|maglev|turboshaft)::/.test(m[2]) && !m[2].includes('PROGRAM TOTALS')) sum += Number(m[1].replaceAll(',', ''));
  }
  return sum;
}

async function allocated(name, workload) {
  const port = await freePort();
  const { argv, env } = serverArgv(name, port, workload);
  const child = spawn(process.execPath, ['--trace-gc-nvp', ...argv], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  let stdout = '';
  child.stdout.on('data', (c) => (stdout += c));
  const sum = () => [...stdout.matchAll(/\ballocated=(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
  const agent = pool();
  try {
    await untilUp(port, child, 50);
    await send(agent, port, workload, WARMUP);
    const before = sum();
    // Enough requests that the allocation between the window's first and last scavenge dominates.
    await send(agent, port, workload, REQUESTS * 10);
    await new Promise((r) => setTimeout(r, 100));
    return (sum() - before) / (REQUESTS * 10);
  } finally {
    agent.destroy();
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
    const compiler = {};
    const bytes = {};
    for (const name of Object.keys(SERVERS)) {
      const counted = await instructions(name, workload);
      ir[name] = counted.all - counted.compiler;
      compiler[name] = counted.compiler;
      bytes[name] = await allocated(name, workload);
      console.error(
        `${workload.label}, ${name}: ${Math.round(ir[name])} instructions (and ${Math.round(compiler[name])} of the optimising compiler), ${Math.round(bytes[name])} bytes allocated per request`,
      );
    }
    rows.push({ workload, ir, compiler, bytes });
  }
  const fmt = (n) => Math.round(n).toLocaleString('en-US');
  console.log(
    `Measured ${new Date().toISOString().slice(0, 10)}, Node.js ${process.version}, ${REQUESTS} requests after ${WARMUP} of warm-up, ${CONNECTIONS} keep-alive connection${CONNECTIONS === 1 ? '' : 's'}.`,
  );
  console.log('');
  console.log(
    "Instructions exclude V8's optimising compiler (its share, raw / funcrun, in the last column). The Hono rows' reference, in raw's columns, is @hono/node-server serving the same app; funcrun serves it with FUNC_LIGHT_WEB_GLOBALS=on, the light globals @hono/node-server installs by default.",
  );
  console.log('');
  console.log('| workload | raw instructions / request | funcrun | raw / funcrun | target | raw bytes allocated / request | funcrun | compiler |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const { workload, ir, compiler, bytes } of rows) {
    const ratio = ir.raw / ir.funcrun;
    const target = workload.target === undefined ? '' : `≥ ${workload.target} ${ratio >= workload.target ? '(met)' : '(missed)'}`;
    console.log(
      `| ${workload.label} | ${fmt(ir.raw)} | ${fmt(ir.funcrun)} | **${ratio.toFixed(2)}** | ${target} | ${fmt(bytes.raw)} | ${fmt(bytes.funcrun)} | ${fmt(compiler.raw)} / ${fmt(compiler.funcrun)} |`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
