#!/usr/bin/env node
'use strict';
// npm run bench: funcrun against a raw node:http server doing the same work, measured in the
// same run, alternating, on one core for the servers and the other for the load generator.
//   node bench/run.js [--duration 5] [--rounds 3] [--connections 64] [--peers] [--only json,query] [--markdown]
// Load: wrk when it is installed, else autocannon (a dev dependency). The method is told in
// bench/README.md, which --markdown writes (bench/readme.js).
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { order, ce, structuredEvent, batchWorkload, honoWorkloads, honoFuncrunEnv, freePort, untilUp, installPeers } = require('./common');
const { readme, withSummary } = require('./readme');

const ROOT = path.join(__dirname, '..');
const OPTIONS = {
  duration: { type: 'string', default: '5', doc: 'seconds of each load run' },
  rounds: { type: 'string', default: '3', doc: 'load runs per server and workload' },
  connections: { type: 'string', default: '64', doc: 'connections the load generator keeps open' },
  peers: { type: 'boolean', default: false, doc: "add faas-js-runtime and Google's Functions Framework" },
  only: { type: 'string', doc: 'the workloads to run, by name: `--only json,query`' },
  'cold-runs': { type: 'string', default: '9', doc: 'starts per server for the cold start median' },
  instructions: { type: 'boolean', default: false, doc: 'add the instructions per request under callgrind (`bench/instructions.js`, needs valgrind)' },
  markdown: { type: 'boolean', default: false, doc: "write bench/README.md: the method and this run's tables, and add its key figures to bench/history.json" },
  note: { type: 'string', doc: "with --markdown, a note on this run's row of key figures" },
};
const { values: args } = parseArgs({
  options: Object.fromEntries(Object.entries(OPTIONS).map(([name, { doc: _doc, ...option }]) => [name, option])),
});
const DURATION = Number(args.duration);
const ROUNDS = Number(args.rounds);
const CONNECTIONS = Number(args.connections);

// funcrun's goals beside the workloads' own (each workload's `target`).
const COLD_START_TARGET = 1.1;
const RSS_TARGET_MB = 15;
// Event contracts and idempotency (memory store), as a share of funcrun without them.
const CONTRACTS_TARGET = 0.95;

const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const PIN = has('taskset') && os.cpus().length >= 2;
const pinned = (cpu, command, argv) => (PIN ? ['taskset', ['-c', String(cpu), command, ...argv]] : [command, argv]);
const LOADER = has('wrk') ? 'wrk' : 'autocannon';

const ALL_WORKLOADS = [
  { name: 'json', label: 'JSON POST', path: '/json', method: 'POST', headers: { 'content-type': 'application/json' }, body: order, target: 0.95 },
  { name: 'text', label: 'text POST', path: '/text', method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'a line of plain text to count' },
  {
    name: 'binary-event',
    label: 'binary CloudEvent',
    path: '/event',
    method: 'POST',
    headers: { ...ce, 'content-type': 'application/json' },
    body: order,
    target: 0.9,
    event: true,
  },
  {
    name: 'structured-event',
    label: 'structured CloudEvent',
    path: '/event',
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify(structuredEvent(1)),
    target: 0.9,
    event: true,
  },
  {
    ...batchWorkload,
    target: 0.9,
    event: true,
    // faas-js-runtime takes no batches.
    withoutPeers: true,
  },
  {
    name: 'event-reply',
    label: 'CloudEvent, cloudEventResponse',
    path: '/event-reply',
    method: 'POST',
    headers: { ...ce, 'content-type': 'application/json' },
    body: order,
    target: 0.9,
    event: true,
  },
  {
    name: 'event-return',
    label: 'CloudEvent, a returned CloudEvent',
    path: '/event-return',
    method: 'POST',
    headers: { ...ce, 'content-type': 'application/json' },
    body: order,
    target: 0.9,
    event: true,
  },
  {
    // Each request a new event (its own ce-id), so that idempotency runs its claim every time.
    name: 'unique-event',
    label: 'binary CloudEvent, a new id each',
    path: '/event',
    method: 'POST',
    headers: { ...ce, 'content-type': 'application/json' },
    body: order,
    uniqueIds: true,
    event: true,
  },
  {
    name: 'xml',
    label: 'XML POST',
    path: '/xml',
    method: 'POST',
    headers: { 'content-type': 'application/xml' },
    body: '<order><customer>1</customer><product>2</product></order>',
  },
  { name: 'query', label: 'GET with a query', path: '/query?name=ann&page=2', method: 'GET', headers: {}, target: 0.95 },
  // A Hono app (bench/function-hono) served by funcrun and by Hono's own Node adapter: measured
  // against each other, not against raw (with --peers, which installs the adapter).
  ...honoWorkloads,
];
const chosen = (w) => !args.only || args.only.split(',').includes(w.name);
const WORKLOADS = ALL_WORKLOADS.filter((w) => !w.hono && chosen(w));
const HONO_WORKLOADS = ALL_WORKLOADS.filter((w) => w.hono && chosen(w));
// funcrun serving a Hono app, as a share of @hono/node-server serving it.
const HONO_TARGET = 1;

// The servers: command lines by name. Peers are installed into a scratch folder with --peers.
function servers(peersDir) {
  const list = {
    raw: (port) => ['node', [path.join(__dirname, 'raw.js')], { PORT: String(port) }],
    // Every server listens on every address, as raw does: a host given (--host 127.0.0.1) would cost
    // node's listen a lookup of it and the first run of its IPv6 pattern, some 10 ms of a start.
    funcrun: (port) => ['node', [path.join(ROOT, 'lib', 'serve.js'), path.join(__dirname, 'function'), '--port', String(port)], {}],
  };
  if (peersDir) {
    // It serves `/` only: a process per workload, its requests sent to `/`.
    list['faas-js-runtime'] = Object.assign(
      (port, workload) => [
        'node',
        [
          path.join(peersDir, 'node_modules', 'faas-js-runtime', 'bin', 'cli.js'),
          path.join(__dirname, 'peers', 'faas.js'),
          '--port',
          String(port),
          '--log-level',
          'warn',
        ],
        { BENCH_WORKLOAD: workload?.name ?? 'json' },
      ],
      { perWorkload: true },
    );
    list['functions-framework'] = (port) => [
      'node',
      [
        path.join(peersDir, 'node_modules', '@google-cloud', 'functions-framework', 'build', 'src', 'main.js'),
        '--target=handle',
        `--source=${path.join(__dirname, 'peers', 'gcf.js')}`,
        `--port=${port}`,
      ],
      {},
    ];
  }
  // funcrun with an event contract and idempotency (memory store), against funcrun without them.
  list['funcrun-contracts'] = Object.assign(
    (port) => ['node', [path.join(ROOT, 'lib', 'serve.js'), path.join(__dirname, 'function-contracts'), '--port', String(port)], {}],
    { only: 'unique-event', noColdStart: true },
  );
  // The same raw server again, measured like funcrun: how far apart two identical servers come out.
  list.control = Object.assign((port) => ['node', [path.join(__dirname, 'raw.js')], { PORT: String(port) }], { only: 'json' });
  return list;
}

// Preloaded into the servers of the load runs, with V8's gc() exposed: on SIGUSR2 it collects their
// garbage before their RSS is read again (rssAfterLoad). Not into the cold starts: a flag given to
// node makes funcrun's code caches another folder (boot/code-cache.ts), started cold.
const SETTLE = path.join(__dirname, 'settle.js');

/** A server started on core 0; with `settle`, node runs it with bench/settle.js preloaded. */
async function startServer(make, workload, { settle = false } = {}) {
  const port = await freePort();
  const [command, argv, env] = make(port, workload);
  const preload = settle && command === 'node' ? ['--expose-gc', '--require', SETTLE] : [];
  const [cmd, full] = pinned(0, command, [...preload, ...argv]);
  const child = spawn(cmd, full, {
    env: { ...process.env, ...env, ...(preload.length > 0 ? { BENCH_SETTLE_FD: '3' } : {}) },
    stdio: preload.length > 0 ? ['ignore', 'ignore', 'ignore', 'pipe'] : 'ignore',
  });
  await untilUp(port, child);
  return { port, child, rootOnly: make.perWorkload === true, stop: () => new Promise((resolve) => (child.once('exit', resolve), child.kill('SIGKILL'))) };
}

function luaScript(workload) {
  const file = path.join(os.tmpdir(), `funcrun-bench-${workload.name}.lua`);
  const lines = [`wrk.method = ${JSON.stringify(workload.method)}`];
  if (workload.body) lines.push(`wrk.body = ${JSON.stringify(workload.body)}`);
  for (const [k, v] of Object.entries(workload.headers)) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  if (workload.uniqueIds)
    lines.push('local n = 0', 'request = function()', '  n = n + 1', '  wrk.headers["ce-id"] = "b-" .. n', '  return wrk.format()', 'end');
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

// One load run: { rps, p50, p99 } (latency in ms).
function load(server, workload, seconds) {
  const target = server.rootOnly ? `/${workload.path.includes('?') ? workload.path.slice(workload.path.indexOf('?')) : ''}` : workload.path;
  const url = `http://127.0.0.1:${server.port}${target}`;
  if (LOADER === 'wrk') {
    const [cmd, argv] = pinned(1, 'wrk', ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-s', luaScript(workload), url]);
    const out = execFileSync(cmd, argv, { encoding: 'utf8' });
    const ms = (label) => {
      const m = new RegExp(`^\\s+${label}%\\s+([\\d.]+)(us|ms|s)$`, 'm').exec(out);
      return m ? Number(m[1]) * { us: 0.001, ms: 1, s: 1000 }[m[2]] : NaN;
    };
    const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out);
    if (errors) throw new Error(`${workload.name}: ${errors[1]} responses were not 2xx`);
    return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]), p50: ms('50'), p99: ms('99') };
  }
  const headerArgs = Object.entries(workload.headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]);
  const [cmd, argv] = pinned(1, process.execPath, [
    require.resolve('autocannon/autocannon.js'),
    '-c',
    String(CONNECTIONS),
    '-d',
    String(seconds),
    '-m',
    workload.method,
    ...headerArgs,
    ...(workload.body ? ['-b', workload.body] : []),
    '--json',
    url,
  ]);
  const result = JSON.parse(execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  if (result.non2xx > 0) throw new Error(`${workload.name}: ${result.non2xx} responses were not 2xx`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function rssKb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
}

/**
 * A loaded server's RSS in KB, { asLeft, collected }: as the load left it, then after V8's
 * last-resort collection (bench/settle.js), read once the server says it is done. As left, it says
 * where V8's heuristics stood when the load stopped: how far the young generation had grown (V8
 * doubles it from 1 MB as the survivors of its scavenges add up, and keeps the pages when it
 * shrinks it), how much garbage the old generation held before its next collection. Identical
 * loads read raw and funcrun 3 to 40 MB apart that way. Collected, it is what the process keeps.
 */
async function rssAfterLoad(server) {
  const asLeft = rssKb(server.child.pid);
  const pipe = server.child.stdio[3];
  if (!pipe) return { asLeft, collected: NaN };
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('a server did not collect its garbage within 10 s')), 10_000);
    pipe.once('data', () => (clearTimeout(timer), resolve()));
  });
  server.child.kill('SIGUSR2');
  await done;
  return { asLeft, collected: rssKb(server.child.pid) };
}

// Process start to the first 2xx, over a fresh connection each try.
async function coldStart(make) {
  const port = await freePort();
  const [command, argv, env] = make(port);
  const [cmd, full] = pinned(0, command, argv);
  const started = process.hrtime.bigint();
  const child = spawn(cmd, full, { env: { ...process.env, ...env }, stdio: 'ignore' });
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/health/readiness`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error('exited during cold start');
    await new Promise((r) => setTimeout(r, 2));
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  await new Promise((resolve) => (child.once('exit', resolve), child.kill('SIGKILL')));
  return ms;
}

// The Hono rows' two servers: the same app (bench/function-hono) served by funcrun and by
// @hono/node-server, both listening on every address.
function honoServers(peersDir) {
  return {
    '@hono/node-server': (port) => ['node', [path.join(__dirname, 'peers', 'hono-node-server.js')], { PORT: String(port), BENCH_PEERS: peersDir }],
    funcrun: (port) => ['node', [path.join(ROOT, 'lib', 'serve.js'), path.join(__dirname, 'function-hono'), '--port', String(port)], honoFuncrunEnv],
  };
}

/** Each Hono workload's rounds, the two servers back to back in alternating order: { workload: { server: [run] } }. */
async function measureHono(peersDir) {
  const makers = honoServers(peersDir);
  const running = {};
  const results = {};
  try {
    for (const name of Object.keys(makers)) running[name] = await startServer(makers[name]);
    for (const workload of HONO_WORKLOADS) {
      results[workload.name] = {};
      for (const name of Object.keys(makers)) {
        load(running[name], workload, 1); // warm up
        results[workload.name][name] = [];
      }
      for (let round = 0; round < ROUNDS; round++) {
        const turn = round % 2 === 0 ? Object.keys(makers) : Object.keys(makers).reverse();
        for (const name of turn) results[workload.name][name].push(load(running[name], workload, DURATION));
      }
      process.stderr.write(`${workload.label}: done\n`);
    }
  } finally {
    for (const name of Object.keys(running)) await running[name].stop();
  }
  return results;
}

/** The Hono rows' table and their verdicts. */
function honoTable(results) {
  const lines = [
    `| Hono app (\`bench/function-hono\`) | @hono/node-server req/s | funcrun req/s | funcrun / @hono/node-server (rounds' range) | target | p50 (ms) | p99 (ms) |`,
    '|---|---|---|---|---|---|---|',
  ];
  const verdicts = [];
  for (const workload of HONO_WORKLOADS) {
    const r = results[workload.name];
    const m = (name, key) => median(r[name].map((x) => x[key]));
    const pairs = r.funcrun.map((x, i) => x.rps / r['@hono/node-server'][i].rps);
    const ratio = median(pairs);
    verdicts.push({ what: workload.label, ok: ratio >= HONO_TARGET });
    lines.push(
      `| ${workload.label} | ${fmt(m('@hono/node-server', 'rps'))} | ${fmt(m('funcrun', 'rps'))} | **${fmt(ratio, 2)}** (${fmt(Math.min(...pairs), 2)}–${fmt(Math.max(...pairs), 2)}) | ≥ ${fmt(HONO_TARGET, 2)} | ${fmt(m('@hono/node-server', 'p50'), 2)} / ${fmt(m('funcrun', 'p50'), 2)} | ${fmt(m('@hono/node-server', 'p99'), 2)} / ${fmt(m('funcrun', 'p99'), 2)} |`,
    );
  }
  return { lines, verdicts };
}

const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—');

const HISTORY = path.join(__dirname, 'history.json');

/** The checkout's commit, marked when it has changes not committed. */
function commitOf() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const changed = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return changed ? `${commit}+` : commit;
  } catch {
    return 'unknown';
  }
}

/** Instructions per request, raw and funcrun, by workload, from bench/instructions.js's table rows. */
function instructionsOf(table) {
  const counts = {};
  for (const line of table.filter((l) => /^\| [A-Z]/.test(l) && !l.startsWith('| workload'))) {
    const [label, raw, funcrun] = line
      .split('|')
      .slice(1, 4)
      .map((cell) => cell.trim());
    counts[label] = { raw: Number(raw.replace(/,/g, '')), funcrun: Number(funcrun.replace(/,/g, '')) };
  }
  return counts;
}

async function main() {
  const peersDir = args.peers ? installPeers() : undefined;
  const makers = servers(peersDir);
  const names = Object.keys(makers);
  const running = {};
  for (const name of names) if (!makers[name].perWorkload) running[name] = await startServer(makers[name], undefined, { settle: true });
  const results = {};
  // RSS after load by server, in KB: { asLeft, collected } (a server per workload: the largest of its processes).
  const rss = {};
  const keepRss = async (name) => {
    const read = await rssAfterLoad(running[name]);
    rss[name] = { asLeft: Math.max(rss[name]?.asLeft ?? 0, read.asLeft), collected: Math.max(rss[name]?.collected ?? 0, read.collected) };
  };
  try {
    for (const workload of WORKLOADS) {
      results[workload.name] = {};
      for (const name of names) {
        if (name === 'functions-framework' && workload.event) continue; // its HTTP functions do not take CloudEvents
        if (name === 'faas-js-runtime' && workload.withoutPeers) continue;
        if (makers[name].only !== undefined && makers[name].only !== workload.name) continue;
        if (makers[name].perWorkload) running[name] = await startServer(makers[name], workload, { settle: true });
        load(running[name], workload, 1); // warm up
        results[workload.name][name] = [];
      }
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate who goes first, so drift in the machine falls on both.
        const turn = round % 2 === 0 ? names : [...names].reverse();
        for (const name of turn) {
          if (!results[workload.name][name]) continue;
          results[workload.name][name].push(load(running[name], workload, DURATION));
        }
      }
      for (const name of names) {
        if (!makers[name].perWorkload || !running[name]) continue;
        await keepRss(name);
        await running[name].stop();
        delete running[name];
      }
      process.stderr.write(`${workload.label}: done\n`);
    }
    for (const name of names) if (running[name]) await keepRss(name);
  } finally {
    for (const name of Object.keys(running)) await running[name].stop();
  }

  const hono = peersDir && HONO_WORKLOADS.length > 0 ? await measureHono(peersDir) : undefined;

  const cold = {};
  for (const name of names) {
    if (name === 'control' || makers[name].noColdStart) continue;
    const runs = [];
    for (let i = 0; i < Number(args['cold-runs']); i++) runs.push(await coldStart(makers[name]));
    cold[name] = median(runs);
  }

  const cpu = os.cpus()[0].model.replace(/\s+/g, ' ').trim();
  const lines = [];
  lines.push(
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpu}, ${os.cpus().length} cores, Node.js ${process.version}, ${os.platform()} ${os.release()}.`,
  );
  lines.push(
    `Load: ${LOADER}, ${CONNECTIONS} connections, ${ROUNDS} round${ROUNDS === 1 ? '' : 's'} of ${DURATION}s per server and workload, raw and funcrun back to back in alternating order (medians; the ratio is the median of each round's ratio)${PIN ? '; servers on core 0, load on core 1 (taskset)' : ''}.`,
  );
  lines.push('');
  const peerNames = names.filter((n) => n !== 'raw' && n !== 'funcrun' && n !== 'control' && n !== 'funcrun-contracts');
  lines.push(
    `| workload | raw node:http req/s | funcrun req/s | funcrun / raw (rounds' range) | target | p50 raw / funcrun (ms) | p99 raw / funcrun (ms) |${peerNames.map((p) => ` ${p} req/s |`).join('')}`,
  );
  lines.push(`|---|---|---|---|---|---|---|${peerNames.map(() => '---|').join('')}`);
  const verdicts = [];
  // The README's one table: throughput, ratio and the peers' throughput; then cold start and RSS.
  const summary = [
    `| workload | raw node:http req/s | funcrun req/s | funcrun / raw | target |${peerNames.map((p) => ` ${p} req/s |`).join('')}`,
    `|---|---|---|---|---|${peerNames.map(() => '---|').join('')}`,
  ];
  for (const workload of WORKLOADS) {
    const r = results[workload.name];
    const m = (name, key) => (r[name] ? median(r[name].map((x) => x[key])) : NaN);
    // Each round measured raw and funcrun back to back: the ratio of each pair cancels the
    // machine's drift between rounds, and their median is the figure.
    const pairs = r.funcrun.map((x, i) => x.rps / r.raw[i].rps);
    const ratio = median(pairs);
    const spread = `${fmt(Math.min(...pairs), 2)}–${fmt(Math.max(...pairs), 2)}`;
    const target = workload.target ? `≥ ${workload.target}` : '';
    if (workload.target) verdicts.push({ what: workload.label, ok: ratio >= workload.target });
    summary.push(
      `| ${workload.label} | ${fmt(m('raw', 'rps'))} | ${fmt(m('funcrun', 'rps'))} | ${fmt(ratio, 2)} | ${target} |${peerNames.map((p) => ` ${fmt(m(p, 'rps'))} |`).join('')}`,
    );
    lines.push(
      `| ${workload.label} | ${fmt(m('raw', 'rps'))} | ${fmt(m('funcrun', 'rps'))} | **${fmt(ratio, 2)}** (${spread}) | ${target} | ${fmt(m('raw', 'p50'), 2)} / ${fmt(m('funcrun', 'p50'), 2)} | ${fmt(m('raw', 'p99'), 2)} / ${fmt(m('funcrun', 'p99'), 2)} |${peerNames.map((p) => ` ${fmt(m(p, 'rps'))} |`).join('')}`,
    );
  }
  const control = results.json?.control;
  if (control) {
    const pairs = control.map((x, i) => x.rps / results.json.raw[i].rps);
    lines.push('');
    lines.push(
      `Measurement noise: a second, identical raw server measured the same way comes out at **${fmt(median(pairs), 2)}** of the first on JSON POST (rounds' range ${fmt(Math.min(...pairs), 2)}–${fmt(Math.max(...pairs), 2)}); read the ratios above with that margin.`,
    );
  }
  const contracts = results['unique-event']?.['funcrun-contracts'];
  if (contracts) {
    const pairs = contracts.map((x, i) => x.rps / results['unique-event'].funcrun[i].rps);
    verdicts.push({ what: 'contracts and idempotency', ok: median(pairs) >= CONTRACTS_TARGET });
    lines.push('');
    lines.push(
      `Event contracts and idempotency (\`bench/function-contracts\`: a JSON Schema for the event's type, \`idempotency: true\`, the memory store), on the workload whose events each have a new id: **${fmt(median(pairs), 2)}** of funcrun without them (rounds' range ${fmt(Math.min(...pairs), 2)}–${fmt(Math.max(...pairs), 2)}; ${fmt(median(contracts.map((x) => x.rps)))} req/s; target ≥ ${CONTRACTS_TARGET}).`,
    );
  }
  if (hono) {
    const table = honoTable(hono);
    lines.push('', ...table.lines);
    verdicts.push(...table.verdicts);
  }
  lines.push('');
  lines.push(`| | raw node:http | funcrun | funcrun vs raw | target |${peerNames.map((p) => ` ${p} |`).join('')}`);
  lines.push(`|---|---|---|---|---|${peerNames.map(() => '---|').join('')}`);
  const coldRatio = cold.funcrun / cold.raw;
  verdicts.push({ what: 'cold start', ok: coldRatio <= COLD_START_TARGET });
  lines.push(
    `| cold start, process start to first 2xx on a new connection (median of ${args['cold-runs']}; funcrun reads func.yaml) | ${fmt(cold.raw)} ms | ${fmt(cold.funcrun)} ms | ×${fmt(coldRatio, 2)} | ≤ ×${COLD_START_TARGET} |${peerNames.map((p) => ` ${fmt(cold[p])} ms |`).join('')}`,
  );
  summary.push(
    `| cold start, process start to the first 2xx (median of ${args['cold-runs']}) | ${fmt(cold.raw)} ms | ${fmt(cold.funcrun)} ms | ×${fmt(coldRatio, 2)} | ≤ ×${COLD_START_TARGET} |${peerNames.map((p) => ` ${fmt(cold[p])} ms |`).join('')}`,
  );
  const mb = (kb) => `${fmt(kb / 1024, 1)} MB`;
  const signed = (kb) => `${kb >= 0 ? '+' : '−'}${mb(Math.abs(kb))}`;
  const rssDelta = (rss.funcrun.collected - rss.raw.collected) / 1024;
  verdicts.push({ what: 'RSS after load', ok: rssDelta <= RSS_TARGET_MB });
  lines.push(
    `| RSS after the load above, garbage collected | ${mb(rss.raw.collected)} | ${mb(rss.funcrun.collected)} | ${signed(rss.funcrun.collected - rss.raw.collected)} | ≤ +${RSS_TARGET_MB} MB |${peerNames.map((p) => ` ${mb(rss[p]?.collected)} |`).join('')}`,
  );
  summary.push(lines.at(-1));
  lines.push(
    `| RSS as the load above left it, before the collection (no target) | ${mb(rss.raw.asLeft)} | ${mb(rss.funcrun.asLeft)} | ${signed(rss.funcrun.asLeft - rss.raw.asLeft)} | |${peerNames.map((p) => ` ${mb(rss[p]?.asLeft)} |`).join('')}`,
  );
  const figures = {
    date: new Date().toISOString().slice(0, 10),
    commit: commitOf(),
    node: process.version,
    loader: LOADER,
    coldStartMs: { raw: cold.raw, funcrun: cold.funcrun },
    // After a full garbage collection; asLeft: as the load left each server.
    rssMB: { raw: rss.raw.collected / 1024, funcrun: rss.funcrun.collected / 1024, collected: true },
    rssAsLeftMB: { raw: rss.raw.asLeft / 1024, funcrun: rss.funcrun.asLeft / 1024 },
  };
  if (args.instructions) {
    // Counted with the servers alone on the machine, after the load runs: its own table and verdicts.
    const counted = execFileSync(process.execPath, [path.join(__dirname, 'instructions.js'), ...(args.peers ? ['--peers'] : [])], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const table = counted.split('\n').filter((line) => line.startsWith('|') || line.startsWith('Measured') || line.startsWith('Instructions'));
    lines.push('', ...table.flatMap((line) => (line.startsWith('|') ? [line] : [line, ''])));
    figures.instructions = instructionsOf(table);
    for (const line of table.filter((l) => /\(met\)|\(missed\)/.test(l))) {
      verdicts.push({ what: `instructions, ${line.split('|')[1].trim()}`, ok: line.includes('(met)') });
    }
  }
  lines.push('');
  lines.push(`Targets: ${verdicts.map((v) => `${v.what} ${v.ok ? 'met' : 'MISSED'}`).join('; ')}.`);
  process.stdout.write(lines.join('\n') + '\n');
  if (args.markdown) {
    const targets = `${ALL_WORKLOADS.filter((w) => w.target)
      .map((w) => `${w.label} ≥ ${w.target} of raw`)
      .join(
        ', ',
      )}; the Hono rows ≥ ${HONO_TARGET} of @hono/node-server's; cold start ≤ ×${COLD_START_TARGET} raw's; RSS after load ≤ raw's + ${RSS_TARGET_MB} MB; instructions per request ≥ 0.95 of raw's`;
    const history = [...JSON.parse(fs.readFileSync(HISTORY, 'utf8')), { ...figures, ...(args.note ? { note: args.note } : {}) }];
    fs.writeFileSync(HISTORY, JSON.stringify(history, null, 2) + '\n');
    const file = path.join(__dirname, 'README.md');
    fs.writeFileSync(
      file,
      readme({ workloads: ALL_WORKLOADS, options: OPTIONS, targets, command: process.argv.slice(2).join(' '), results: lines.join('\n'), history }),
    );
    process.stderr.write(`wrote ${path.relative(process.cwd(), file)}\n`);
    const guide = path.join(ROOT, 'README.md');
    fs.writeFileSync(guide, withSummary(fs.readFileSync(guide, 'utf8'), `${lines[0]}\n\n${summary.join('\n')}`));
    process.stderr.write(`wrote the summary in ${path.relative(process.cwd(), guide)}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err.stack}\n`);
  process.exit(1);
});
