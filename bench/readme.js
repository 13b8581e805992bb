'use strict';
// bench/README.md, as `npm run bench -- --markdown` writes it: the method, from this file, then the
// tables of the run that wrote it. The page is never edited by hand: change this file, run the
// bench again.

/** The page's sections, in order (spec/bench-readme.spec.js checks the page has them). */
const HEADINGS = [
  'The servers',
  'The workloads',
  'How a run goes',
  'Noise and the control row',
  'Cold start and memory',
  'Running it',
  'Key figures, run by run',
  'The latest run',
];

const code = (text) => `\`${text}\``;

/**
 * The page. `workloads` and `options` are bench/run.js's tables; `command` the arguments the run
 * was given; `results` the lines it printed (machine, Node version, date, the tables).
 */
function readme({ workloads, options, targets, command, results, history }) {
  const [first, second, third, fourth, fifth, sixth, byRun, seventh] = HEADINGS;
  const workloadRows = workloads.map((w) => {
    const request = `${w.method} ${code(w.path)}${w.headers['content-type'] ? `, ${code(w.headers['content-type'])}` : ''}${w.headers['ce-id'] ? ', binary CloudEvent headers' : ''}`;
    return `| ${code(w.name)} | ${w.label} | ${request} | ${w.target ? `≥ ${w.target}` : ''} |`;
  });
  const optionRows = Object.entries(options).map(
    ([name, o]) => `| ${code(`--${name}`)} | ${o.default === undefined || o.type === 'boolean' ? '' : code(o.default)} | ${o.doc} |`,
  );
  return `# Benchmarks

Written by ${code('npm run bench -- --markdown')} (${code('bench/run.js')}; the text is ${code('bench/readme.js')}'s): the
method, then the tables of the run that wrote this page. Do not edit it by hand.

## ${first}

- **raw**: ${code('bench/raw.js')}, a plain ${code('node:http')} server doing by hand what the function does: read the
  body, check its content type and parse it (JSON, or XML with ${code('@xmldom/xmldom')}); for an event, read its
  required attributes (the ${code('ce-*')} headers, or the structured envelope's members, each event's in a batch);
  answer JSON, or an event with a fresh id and time as binary-mode headers. Where the function makes its
  answer with the CloudEvents SDK's constructor, so does this server. The floor every ratio is taken against.
- **funcrun**: ${code('node lib/serve.js bench/function')}, a function project (${code('func.yaml')}, ${code('FUNC_LOG_LEVEL=warn')})
  whose one handler answers each workload's path.
- **funcrun-contracts**: ${code('node lib/serve.js bench/function-contracts')}, the same handler with an event contract
  (a JSON Schema for ${code('dev.bench.order')}) and ${code('idempotency: true')} (the memory store), on the workload whose
  events each have a new ${code('ce-id')} (a claim and a kept answer per request), measured against funcrun.
- **control**: a second copy of the raw server, measured as funcrun is, on the JSON workload only (see below).
- With ${code('--peers')}: **faas-js-runtime** 4.0.1 (${code('bench/peers/faas.js')}; it serves ${code('/')} only, so a process is
  started per workload and its requests go to ${code('/')}) and Google's **functions-framework** 3
  (${code('bench/peers/gcf.js')}, an HTTP function: it takes no CloudEvents, so its event rows are empty), installed
  with npm into a scratch folder (${code('funcrun-bench-peers')} in the system's temporary folder) on first use.
- **Hono rows** (with ${code('--peers')}): one Hono app (${code('bench/function-hono')}: a JSON GET with a path parameter,
  a JSON POST echoed) served by funcrun as a fetch handler, with its probes, limits and JSON-lines logs on, and
  by Hono's own Node adapter ${code('@hono/node-server')} 2 (${code('bench/peers/hono-node-server.js')}); measured against
  each other, rounds alternating as above, not against raw. funcrun runs them with ${code('FUNC_LIGHT_WEB_GLOBALS=on')}
  (${code('bench/common.js')}): the light global ${code('Request')} and ${code('Response')} that ${code('@hono/node-server')} installs by
  default, and funcrun only when asked (${code('docs/fetch.md')}).
- Every server listens on every address (no host given), as a function in a container does. A host given
  costs node's listen a lookup of it and the first run of its IPv6 pattern, some 10 ms of a start on this machine.

## ${second}

Each server answers the same requests; the target is funcrun's throughput as a share of the raw
server's.

| name (${code('--only')}) | workload | request | target |
|---|---|---|---|
${workloadRows.join('\n')}

## ${third}

1. Every server is started once (faas-js-runtime once per workload) and warmed up with a 1 s load
   run per workload.
2. Each workload then gets ${code('--rounds')} rounds. In a round every server takes one load run of
   ${code('--duration')} seconds, one after another; the order is reversed every other round, so drift in the
   machine during a round falls on both sides.
3. Throughput and latency (p50, p99; the peers' throughput only) are the medians over the rounds. funcrun's ratio to raw is
   the median of each round's ratio: raw and funcrun measured back to back cancel the machine's
   drift between rounds. The range beside it is the rounds' lowest and highest ratio.
4. With ${code('taskset')} and two cores or more, the servers run on core 0 and the load generator on core 1,
   so the two do not compete for a core.
5. The load generator is wrk when it is installed (${code('-t1')}, ${code('--connections')} connections, a Lua script
   setting the method, headers and body), else autocannon (a dev dependency) with the same
   connections. wrk, written in C, drives a server harder than autocannon, a Node.js process: the two
   give different absolute figures (and RSS); compare runs made with the same one. A response
   that is not 2xx stops the run.

## ${fourth}

On a shared machine the same server measured twice in a row can differ by 10 to 20%. The control
row measures a second, identical raw server exactly as funcrun is measured: it should read 1.00,
and how far it reads from 1.00 (and its rounds' range) is the margin to read every ratio with. A
ratio inside that margin of its target is not a verdict either way. For counts that do not move
with the machine's load, ${code('npm run bench:instructions')} (${code('bench/instructions.js')}, needs valgrind; ${code('--instructions')}
adds its table to a run) counts each server's instructions per request under callgrind, after a warm-up on the same keep-alive connections and with every server's young generation at one fixed size (V8 grows it at moments of its own, which moved the count by up to 7%),
on a JSON POST and on a CloudEvent answered with ${code('cloudEventResponse')}; its Hono rows (with ${code('--peers')}, or
named: ${code('--only hono-get,hono-post')}) count the Hono app served by funcrun and by ${code('@hono/node-server')} (in raw's columns) the same way.

## ${fifth}

- **Cold start**: from spawning the server's process to the first 2xx answer from
  ${code('/health/readiness')}, polled every 2 ms on a new connection each time; the median of ${code('--cold-runs')}
  starts per server, pinned as above. funcrun reads the function's ${code('func.yaml')} on each start; its compile
  cache (${code('lib/.cache')}) and the YAML parser's code cache in it were filled by the starts before it.
- **RSS after load**: the server process's resident memory (${code('VmRSS')} in ${code('/proc/<pid>/status')}) after all
  the load above (a per-workload server: the largest of its processes, read before each stops), read
  twice: as the load left it, then after a full garbage collection, and the target is on the second.
  Every server of the load runs is started with ${code('node --expose-gc --require bench/settle.js')}, which on
  ${code('SIGUSR2')} runs V8's last-resort collection (the one a memory pressure notification runs: every
  generation collected, the young generation shrunk back, the pages V8 keeps for reuse released)
  and says when it is done; it does nothing else. As the load leaves it, RSS says where V8's
  heuristics stood when the load stopped: V8 doubles the young generation from 1 MB as the survivors
  of its scavenges add up (a server allocating more per request gets there sooner, and any server
  under sustained load does in the end), keeps the pages when it shrinks it, and lets the old
  generation fill with garbage up to its next collection. Identical loads read raw and funcrun 3 to
  40 MB apart that way (a memory reducer some seconds after the load can take funcrun below raw:
  its loop monitor's timer lets V8 find it idle). After the collection both keep their code,
  their live objects and what the C allocator keeps of its peaks (V8's compilers' memory among
  it), and the two read within a few MB of each other from run to run. The cold starts are not
  given the preload: a flag given to node makes funcrun's code caches another folder.

Targets: ${targets}.

## ${sixth}

${'```'}
npm run bench                         # print the tables
npm run bench -- --peers --markdown   # with the peers, and write this page
${'```'}

| option | default | what |
|---|---|---|
${optionRows.join('\n')}

## ${byRun}

${historyTable(history)}

## ${seventh}

${code(`npm run bench -- ${command}`.trim())}

${results}
`;
}

/**
 * The figures that do not swing with the machine's load, or swing least, of each run that wrote the
 * page (bench/history.json, newest last): so a change's cost shows as a step from one row to the next.
 */
function historyTable(history) {
  const ratio = (a, b) => (a && b ? (b / a).toFixed(2) : '—');
  const count = (n) => (n ? n.toLocaleString('en-US') : '—');
  const rows = history.map((run) => {
    const i = run.instructions ?? {};
    const pair = (w) => (i[w] ? `${count(i[w].raw)} / ${count(i[w].funcrun)} (${ratio(i[w].funcrun, i[w].raw)})` : '—');
    const collected = run.rssMB?.collected ? ', collected' : '';
    const rss = run.rssMB
      ? `${run.rssMB.raw.toFixed(1)} / ${run.rssMB.funcrun.toFixed(1)} (+${(run.rssMB.funcrun - run.rssMB.raw).toFixed(1)}${collected})`
      : '—';
    const cold = run.coldStartMs
      ? `${Math.round(run.coldStartMs.raw)} / ${Math.round(run.coldStartMs.funcrun)} (×${ratio(run.coldStartMs.raw, run.coldStartMs.funcrun)})`
      : '—';
    return `| ${run.date} | ${code(run.commit)} | ${run.node} | ${run.loader} | ${cold} | ${rss} | ${pair('JSON POST')} | ${pair('CloudEvent, cloudEventResponse')} | ${run.note ?? ''} |`;
  });
  return [
    'Each run written with `--markdown` adds a row (`bench/history.json`). Instructions are counted under callgrind, raw / funcrun (raw / funcrun as a ratio, higher is better for funcrun); cold start and RSS after load are raw / funcrun, read with the load generator and the machine of their run; RSS after a full garbage collection where the row says collected, before that as the load left it.',
    '',
    '| run | commit | Node | load | cold start ms, raw / funcrun | RSS after load MB, raw / funcrun | instructions, JSON POST | instructions, CloudEvent answer | note |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

// The README's summary of the latest run sits between these lines, written with bench/README.md.
const SUMMARY_START = '<!-- The summary of bench/README.md, written by npm run bench -- --markdown -->';
const SUMMARY_END = '<!-- End of the summary -->';

/** `page` (the README) with `summary` between the markers in place of the last one. */
function withSummary(page, summary) {
  const start = page.indexOf(SUMMARY_START);
  const end = page.indexOf(SUMMARY_END);
  if (start === -1 || end < start) throw new Error(`README.md has no summary markers: ${SUMMARY_START} ... ${SUMMARY_END}`);
  return `${page.slice(0, start + SUMMARY_START.length)}\n${summary}\n${page.slice(end)}`;
}

module.exports = { HEADINGS, readme, withSummary, SUMMARY_START, SUMMARY_END };
