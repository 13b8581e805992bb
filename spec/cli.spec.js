'use strict';
// The funcrun command, run as a user runs it.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { serve, startServer, project, freePort, waitUntilListening, request } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const CLI = path.join(ROOT, 'lib', 'tools', 'cli.js');

/** Runs `funcrun ...args` to completion: { code, stdout, stderr }. */
function funcrun(args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-cli-'));

describe('funcrun', () => {
  it('--help lists the commands; each command has --help', async () => {
    const top = await funcrun(['--help']);
    assert.equal(top.code, 0);
    for (const command of ['create', 'invoke', 'config', 'serve']) assert.match(top.stdout, new RegExp(`\\n  ${command}`));
    for (const args of [
      ['create', '--help'],
      ['invoke', '--help'],
      ['config', '--help'],
      ['config', 'envs', '--help'],
      ['config', 'envs', 'add', '-h'],
      ['config', 'health', '--help'],
      ['serve', '--help'],
    ]) {
      const res = await funcrun(args);
      assert.equal(res.code, 0, args.join(' '));
      assert.match(res.stdout, new RegExp(`^Usage: funcrun ${args[0]}`));
    }
    // Durations as the docs write them.
    assert.match((await funcrun(['serve', '--help'])).stdout, /\[FUNC_GRACE_PERIOD, else 10s\]/);
    assert.match(
      (await funcrun(['create', '--help'])).stdout,
      /^Usage: funcrun create <folder> .*\[--template http\|cloudevents\|fetch\] \[--funcrun <spec>\]\n/,
    );
  });

  it('--version, -V and version print the package version', async () => {
    for (const args of [['--version'], ['-V'], ['version']]) {
      const res = await funcrun(args);
      assert.equal(res.code, 0, args.join(' '));
      assert.equal(res.stdout.trim(), require('../package.json').version, args.join(' '));
    }
  });

  it('bad use exits non-zero with one line', async () => {
    for (const args of [
      ['frobnicate'],
      ['create'],
      ['create', 'a', 'b'],
      ['create', 'x', '--language', 'cobol'],
      ['invoke', '--request-type', 'PUT'],
      ['config', 'envs', 'add'],
      ['config', 'nothing'],
      ['invoke', '--bogus'],
    ]) {
      const res = await funcrun(args, { cwd: scratch() });
      assert.equal(res.code, 2, args.join(' '));
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
      assert.match(res.stderr, /^funcrun: /);
    }
    const none = await funcrun([]);
    assert.notEqual(none.code, 0);
  });

  it('a mistyped command, action or value is answered with the nearest one', async () => {
    for (const [args, expected] of [
      [['sever', '.'], "unknown command 'sever': did you mean serve? (funcrun --help lists the commands)"],
      [['--prot', '8080'], "unknown command '--prot': did you mean funcrun serve --port? (funcrun serve --help lists the options)"],
      [['config', 'envs', 'ad', '--name', 'X'], "unknown config envs action 'ad': did you mean add? (expected add, remove or list)"],
      [['config', 'helth'], "unknown config 'helth': did you mean health? (expected envs or health)"],
      [['create', 'x', '--template', 'cloudevent'], "unknown --template 'cloudevent': did you mean cloudevents? (expected http, cloudevents or fetch)"],
      [['create', 'x', '--template', 'fecth'], "unknown --template 'fecth': did you mean fetch? (expected http, cloudevents or fetch)"],
      [['invoke', '--format', 'cloudevents'], "unknown --format 'cloudevents': did you mean cloudevent? (expected http or cloudevent)"],
      [['create', 'x', '--language', 'cobol'], "unknown --language 'cobol': expected node or typescript"],
    ]) {
      const res = await funcrun(args, { cwd: scratch() });
      assert.equal(res.code, 2, args.join(' '));
      assert.equal(res.stderr, `funcrun: ${expected}\n`);
    }
  });
});

describe('funcrun invoke', () => {
  let server;
  const received = [];
  before(async () => {
    server = await startServer((ctx, data) => {
      received.push({ method: ctx.method, path: ctx.path, query: { ...ctx.query }, headers: ctx.headers, data, event: ctx.cloudevent });
      if (ctx.query.fail) throw Object.assign(new Error('no such thing'), { statusCode: 404 });
      if (ctx.cloudevent) return ctx.cloudEventResponse({ echoed: data }).type('dev.example.answer').source('/answer');
      return { echoed: Buffer.isBuffer(data) ? data.toString('hex') : data };
    });
  });
  after(() => server.close());
  const last = () => received.at(-1);

  it('follows a redirect on its own origin with the body (307), never one to another origin; control characters are shown escaped', async (t) => {
    const elsewhere = [];
    const other = await serve(t, (ctx) => (elsewhere.push(ctx.path), 'moved'));
    const redirecting = await serve(t, (ctx, data) => {
      if (ctx.path === '/here') return { statusCode: 307, headers: { location: '/there' } };
      if (ctx.path === '/away') return { statusCode: 307, headers: { location: `${other.url}/stolen` } };
      if (ctx.path === '/there') return { got: data };
      return { headers: { 'content-type': 'text/plain' }, body: 'clear\u001b[2J\rscreen\nnext line' };
    });
    const followed = await funcrun(['invoke', '--target', `${redirecting.url}/here`, '-d', '{"secret":"s3"}']);
    assert.equal(followed.code, 0, followed.stderr);
    assert.match(followed.stdout, /"got": \{\n\s+"secret": "s3"/);
    const away = await funcrun(['invoke', '--target', `${redirecting.url}/away`, '-d', '{"secret":"s3"}']);
    assert.equal(away.code, 1);
    assert.match(away.stdout, /^HTTP 307 /);
    assert.match(away.stdout, /\(redirect to another origin \(http:\/\/127\.0\.0\.1:\d+\) not followed\)$/m);
    assert.deepEqual(elsewhere, []);
    const raw = await funcrun(['invoke', '--target', `${redirecting.url}/text`]);
    assert.ok(raw.stdout.includes('clear\\u001b[2J\\u000dscreen\nnext line'), JSON.stringify(raw.stdout));
  });

  it('credentials in --target are sent as Basic authorization and never printed', async () => {
    const target = server.url.replace('http://', 'http://ann:p%40ss-s3cret@');
    const result = await funcrun(['invoke', '--target', target, '-d', '{"a":1}']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(last().headers.authorization, `Basic ${Buffer.from('ann:p@ss-s3cret').toString('base64')}`);
    const refused = await funcrun(['invoke', '--target', 'http://ann:s3cret@127.0.0.1:1/']);
    const bad = await funcrun(['invoke', '--target', 'http://ann:s3cret@[::1/']);
    for (const out of [result, refused, bad]) assert.ok(!`${out.stdout}${out.stderr}`.includes('s3cret'), `${out.stdout}${out.stderr}`);
    assert.equal(refused.code, 1);
  });

  it('POSTs --data as JSON and prints status, content type and body', async () => {
    const res = await funcrun(['invoke', '--target', server.url, '--data', '{"name":"Ann"}']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^HTTP 200 OK\ncontent-type: application\/json; charset=utf-8\n/);
    assert.match(res.stdout, /"echoed": \{\n\s+"name": "Ann"/);
    assert.deepEqual(last().data, { name: 'Ann' });
  });

  it('-d, --content-type, --request-type GET with a query in the target, and the default data', async () => {
    await funcrun(['invoke', '--target', server.url, '-d', 'plain words', '--content-type', 'text/plain']);
    assert.equal(last().data, 'plain words');
    await funcrun(['invoke', '--target', `${server.url}/things?a=1&b=2`, '--request-type', 'GET']);
    assert.equal(last().method, 'GET');
    assert.equal(last().path, '/things');
    assert.deepEqual(last().query, { a: '1', b: '2' });
    await funcrun(['invoke', '--target', server.url]);
    assert.deepEqual(last().data, { message: 'Hello World' });
  });

  it("--request-type GET sends --data as the query string, after the target's own, and says so on stderr", async () => {
    const json = await funcrun([
      'invoke',
      '--target',
      `${server.url}/purchase?via=cli`,
      '--request-type',
      'GET',
      '-d',
      '{"customerId":7,"productId":"a b","gift":true}',
    ]);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(json.stderr, 'funcrun: GET sends no body: --data is sent as the query string (?customerId=7&productId=a+b&gift=true)\n');
    assert.equal(last().method, 'GET');
    assert.equal(last().path, '/purchase');
    assert.deepEqual(last().query, { via: 'cli', customerId: '7', productId: 'a b', gift: 'true' });
    assert.equal(last().data, undefined);
    const pairs = await funcrun(['invoke', '--target', server.url, '--request-type', 'get', '-d', 'name=Ann%20Lee&tag=x&tag=y']);
    assert.equal(pairs.code, 0, pairs.stderr);
    assert.match(pairs.stderr, /\(\?name=Ann%20Lee&tag=x&tag=y\)\n$/);
    assert.deepEqual(last().query, { name: 'Ann Lee', tag: ['x', 'y'] });
  });

  it('--request-type GET percent-encodes the control characters of name=value pairs, and its note is escaped and cut', async () => {
    const res = await funcrun(['invoke', '--target', server.url, '--request-type', 'GET', '-d', 'a=1\nb=2\t\u0085&c=\u007f']);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(last().query, { a: '1\nb=2\t\u0085', c: '\u007f' });
    assert.equal(res.stderr, 'funcrun: GET sends no body: --data is sent as the query string (?a=1%0Ab=2%09%C2%85&c=%7F)\n');
    const long = await funcrun(['invoke', '--target', server.url, '--request-type', 'GET', '-d', `a=${'x'.repeat(5000)}`]);
    assert.equal(long.code, 0, long.stderr);
    assert.equal(long.stderr, `funcrun: GET sends no body: --data is sent as the query string (?a=${'x'.repeat(58)}...)\n`);
    assert.equal(last().query.a.length, 5000);
  });

  it('--request-type GET refuses what has no query form: nested JSON, plain text, --file, --content-type; exit 2, nothing sent', async () => {
    const before = received.length;
    const folder = project({ 'data.bin': 'x' });
    for (const [extra, message] of [
      [
        ['-d', '{"order":{"id":7}}'],
        /^funcrun: --data "\{\\"order\\":\{\\"id\\":7\}\}" cannot be a query string, and --request-type GET sends no body: give name=value pairs/,
      ],
      [['-d', '[1,2]'], /cannot be a query string/],
      [['-d', 'plain words'], /cannot be a query string/],
      [['-d', '{"a":null}'], /cannot be a query string/],
      [['-d', '{"a":1e400}'], /cannot be a query string/],
      [['-d', '{"":"v"}'], /cannot be a query string/],
      [['-d', '=x'], /cannot be a query string/],
      [['-d', `\u001b[2J\u009b${'y'.repeat(500)}`], /^funcrun: --data "\\u001b\[2J\\u009by{55}\.\.\." cannot be a query string/],
      [['--file', path.join(folder, 'data.bin')], /^funcrun: --file .*data\.bin is a body, and --request-type GET sends none: send it with POST$/],
      [['-d', 'a=1', '--content-type', 'text/plain'], /^funcrun: --content-type does not go with --request-type GET: GET sends no body$/],
    ]) {
      const res = await funcrun(['invoke', '--target', server.url, '--request-type', 'GET', ...extra]);
      assert.equal(res.code, 2, extra.join(' '));
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
      assert.match(res.stderr.trim(), message);
    }
    assert.equal(received.length, before);
  });

  it('--file sends the file as it is', async () => {
    const folder = project({ 'data.bin': Buffer.from([0, 1, 254]) });
    await funcrun(['invoke', '--target', server.url, '--file', path.join(folder, 'data.bin'), '--content-type', 'application/octet-stream']);
    assert.deepEqual([...last().data], [0, 1, 254]);
  });

  it('--format cloudevent sends a binary event and prints the answer event', async () => {
    const res = await funcrun([
      'invoke',
      '--target',
      server.url,
      '--format',
      'cloudevent',
      '--id',
      'evt-1',
      '--source',
      '/cli',
      '--type',
      'dev.example.ask',
      '-e',
      'tenant=acme',
      '-e',
      'region=eu',
      '--data',
      '{"q":1}',
    ]);
    assert.equal(res.code, 0, res.stderr);
    const event = last().event;
    assert.equal(event.id, 'evt-1');
    assert.equal(event.source, '/cli');
    assert.equal(event.type, 'dev.example.ask');
    assert.equal(event.tenant, 'acme');
    assert.equal(event.region, 'eu');
    assert.deepEqual(last().data, { q: 1 });
    assert.match(res.stdout, /CloudEvent:\n(.*\n)* {2}type: dev\.example\.answer\n/);
    assert.match(res.stdout, /Data:\n\{\n {2}"echoed": \{\n {4}"q": 1/);
  });

  it('event attributes are percent-encoded beyond printable ASCII, and " and %, as the HTTP binding says: the function gets each as given', async () => {
    const given = { id: 'order "7"', source: '/shop%20eu', type: 'dev.example.café', note: '日本 100%' };
    const res = await funcrun([
      'invoke',
      '--target',
      server.url,
      '-f',
      'cloudevent',
      '--id',
      given.id,
      '--source',
      given.source,
      '--type',
      given.type,
      '-e',
      `note=${given.note}`,
    ]);
    assert.equal(res.code, 0, res.stderr);
    const { id, source, type, note } = last().event;
    assert.deepEqual({ id, source, type, note }, given);
    assert.equal(last().headers['ce-note'], '%E6%97%A5%E6%9C%AC%20100%25');
  });

  it('a CR or LF in a value sent as a header (-e, --id, --source, --type, --content-type) is bad use: exit code 2, one line naming the option, nothing sent', async () => {
    const before = received.length;
    for (const [args, message] of [
      [['-f', 'cloudevent', '-e', 'note=a\r\nx-injected: 1'], 'invalid --extension "note=a\\r\\nx-injected: 1": a header value cannot hold CR or LF'],
      [['-f', 'cloudevent', '--extension', 'note=a\nb'], 'invalid --extension "note=a\\nb": a header value cannot hold CR or LF'],
      [['-f', 'cloudevent', '--id', 'a\rb'], 'invalid --id "a\\rb": a header value cannot hold CR or LF'],
      [['-f', 'cloudevent', '--source', '/a\r\n'], 'invalid --source "/a\\r\\n": a header value cannot hold CR or LF'],
      [['-f', 'cloudevent', '--type', 'a\nb'], 'invalid --type "a\\nb": a header value cannot hold CR or LF'],
      [['--content-type', 'text/plain\r\nx-injected: 1'], 'invalid --content-type "text/plain\\r\\nx-injected: 1": a header value cannot hold CR or LF'],
      [['--content-type', 'text/日本'], 'invalid --content-type "text/日本": a header value holds Latin-1 characters only'],
    ]) {
      const res = await funcrun(['invoke', '--target', server.url, ...args]);
      assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
      assert.equal(res.stderr, `funcrun: ${message}\n`);
      assert.equal(res.stdout, '');
    }
    assert.equal(received.length, before, 'the function saw no request');
  });

  it("the format defaults to func.yaml's invoke; a new id each time", async () => {
    const folder = project({ 'func.yaml': 'name: f\ninvoke: cloudevent\n' });
    await funcrun(['invoke', '--target', server.url], { cwd: folder });
    const first = last().event;
    assert.equal(first.type, 'funcrun.invoke');
    await funcrun(['invoke', '--target', server.url, '--path', folder]);
    assert.notEqual(last().event.id, first.id);
  });

  it('a status above 299 exits 1, after printing the answer', async () => {
    const res = await funcrun(['invoke', '--target', `${server.url}/?fail=1`]);
    assert.equal(res.code, 1);
    assert.match(res.stdout, /^HTTP 404 Not Found/);
    assert.match(res.stderr, /answered 404/);
  });

  it('a function that cannot be reached exits 1 with a clear message, and what to do', async () => {
    const port = await freePort();
    const res = await funcrun(['invoke', '--target', `http://127.0.0.1:${port}`]);
    assert.equal(res.code, 1);
    assert.match(
      res.stderr,
      new RegExp(`^funcrun: cannot reach http://127\\.0\\.0\\.1:${port}: ECONNREFUSED \\(nothing listens there: start the function first`),
    );
  });

  it('a --file that is not there, or a folder, is said in words: exit 2', async () => {
    const dir = scratch();
    for (const [file, why] of [
      ['missing.txt', 'no such file'],
      ['.', 'it is a folder'],
    ]) {
      const res = await funcrun(['invoke', '--target', server.url, '--file', file], { cwd: dir });
      assert.equal(res.code, 2);
      assert.equal(res.stderr, `funcrun: cannot read --file ${file}: ${why}\n`);
    }
  });

  it('with --format, a malformed func.yaml does not stop the request; without it, it is bad use (exit 2)', async () => {
    const dir = scratch();
    fs.writeFileSync(path.join(dir, 'func.yaml'), 'name: [\n');
    const sent = await funcrun(['invoke', '--target', server.url, '--format', 'http', '--path', dir]);
    assert.equal(sent.code, 0, sent.stderr);
    const refused = await funcrun(['invoke', '--target', server.url, '--path', dir]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^funcrun: .*func\.yaml:\d+: /);
  });
});

describe('funcrun config', () => {
  const original = [
    '# my function',
    'name: cfg # the name',
    'runtime: node',
    'run:',
    '  envs:',
    '    # keep this comment',
    '    - name: EXISTING',
    '      value: one',
    'deploy: {}',
    '',
  ].join('\n');
  const folder = () => project({ 'func.yaml': original });

  it('envs add appends, keeping comments and order; add again updates in place', async () => {
    const dir = folder();
    assert.equal((await funcrun(['config', 'envs', 'add', '--name', 'FUNC_LOG_LEVEL', '--value', 'debug', '--path', dir])).code, 0);
    assert.equal((await funcrun(['config', 'envs', 'add', '--name', 'EXISTING', '--value', 'two'], { cwd: dir })).code, 0);
    const text = fs.readFileSync(path.join(dir, 'func.yaml'), 'utf8');
    assert.match(text, /^# my function\nname: cfg # the name\nruntime: node\n/);
    assert.match(text, /# keep this comment/);
    assert.deepEqual(require('yaml').parse(text).run.envs, [
      { name: 'EXISTING', value: 'two' },
      { name: 'FUNC_LOG_LEVEL', value: 'debug' },
    ]);
    const list = await funcrun(['config', 'envs', 'list', '--path', dir]);
    assert.equal(list.stdout, 'EXISTING=two\nFUNC_LOG_LEVEL=debug\n');
  });

  it('envs remove takes a variable out; removing one that is not there is bad use (exit 2)', async () => {
    const dir = folder();
    assert.equal((await funcrun(['config', 'envs', 'remove', '--name', 'EXISTING', '--path', dir])).code, 0);
    assert.equal(require('yaml').parse(fs.readFileSync(path.join(dir, 'func.yaml'), 'utf8')).run.envs.length, 0);
    const again = await funcrun(['config', 'envs', 'remove', '--name', 'EXISTING', '--path', dir]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /no variable EXISTING in run\.envs/);
  });

  it('refuses values funcrun would refuse as bad use (exit code 2), and leaves the file alone', async () => {
    const dir = folder();
    for (const [name, value, message] of [
      ['FUNC_LOG_LEVEL', 'loud', /unknown log level 'loud'/],
      ['LIVENESS_URL', 'alive', /expected a path starting with '\/'/],
      ['1bad', 'x', /invalid variable name/],
      ['FROM_SECRET', '{{ secret:whole }}', /must be '\{\{ env:NAME \}\}', '\{\{ secret:NAME:KEY \}\}'/],
      ['FUNC_BODY_LIMIT', 'huge', /invalid FUNC_BODY_LIMIT/],
    ]) {
      const res = await funcrun(['config', 'envs', 'add', '--name', name, '--value', value, '--path', dir]);
      assert.equal(res.code, 2, name);
      assert.match(res.stderr, message);
    }
    assert.equal(fs.readFileSync(path.join(dir, 'func.yaml'), 'utf8'), original);
  });

  it('entries without a name (a whole secret or config map) are listed as what they import; add and remove by name leave them alone', async () => {
    const withImports = original
      .replace('    - name: EXISTING', "    - value: '{{ secret:mysecret }}'\n    - name: EXISTING")
      .replace('deploy: {}', "    - value: '{{ configMap:settings }}'\ndeploy: {}");
    const dir = project({ 'func.yaml': withImports });
    const list = await funcrun(['config', 'envs', 'list', '--path', dir]);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(
      list.stdout,
      [
        '{{ secret:mysecret }} (every key of secret mysecret, set by the platform)',
        'EXISTING=one',
        '{{ configMap:settings }} (every key of config map settings, set by the platform)',
        '',
      ].join('\n'),
    );
    assert.equal((await funcrun(['config', 'envs', 'add', '--name', 'ADDED', '--value', 'x', '--path', dir])).code, 0);
    assert.equal((await funcrun(['config', 'envs', 'remove', '--name', 'EXISTING', '--path', dir])).code, 0);
    assert.deepEqual(require('yaml').parse(fs.readFileSync(path.join(dir, 'func.yaml'), 'utf8')).run.envs, [
      { value: '{{ secret:mysecret }}' },
      { value: '{{ configMap:settings }}' },
      { name: 'ADDED', value: 'x' },
    ]);
  });

  it('health writes deploy.healthEndpoints, and with --env the matching run.envs', async () => {
    const dir = folder();
    assert.equal((await funcrun(['config', 'health', '--liveness', '/alive', '--readiness', '/ready', '--env', '--path', dir])).code, 0);
    const parsed = require('yaml').parse(fs.readFileSync(path.join(dir, 'func.yaml'), 'utf8'));
    assert.deepEqual(parsed.deploy.healthEndpoints, { liveness: '/alive', readiness: '/ready' });
    assert.deepEqual(parsed.run.envs.slice(1), [
      { name: 'LIVENESS_URL', value: '/alive' },
      { name: 'READINESS_URL', value: '/ready' },
    ]);
    const bad = await funcrun(['config', 'health', '--liveness', 'alive', '--path', dir]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /expected a path starting with '\/'/);
    // Paths that could never be asked for: a newline, a space, a route parameter, a bad escape.
    for (const [path, problem] of [
      ['/ready\nnow', /URL characters/],
      ['/re ady', /URL characters/],
      ['/ready/:any', /route parameter/],
      ['/a%zz', /%XX/],
    ]) {
      const refused = await funcrun(['config', 'health', '--readiness', path, '--path', dir]);
      assert.equal(refused.code, 2, path);
      assert.match(refused.stderr, problem, path);
    }
  });

  it('the file funcrun reads after config is what the server uses', async (t) => {
    const dir = project({ 'func.yaml': original, 'index.js': 'module.exports = () => "ok";' });
    await funcrun(['config', 'health', '--liveness', '/alive', '--path', dir]);
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve', dir, '--port', String(port), '--host', '127.0.0.1'], { stdio: 'ignore' });
    t.after(() => child.kill('SIGTERM'));
    await waitUntilListening(port, { child, out: { stdout: '', stderr: '' } });
    assert.equal((await request(`http://127.0.0.1:${port}/alive`)).text, 'OK');
  });

  it('a value that starts with a dash says how to write it', async () => {
    const res = await funcrun(['config', 'envs', 'add', '--name', 'FUNC_GRACE_PERIOD', '--value', '-1s', '--path', folder()]);
    assert.equal(res.code, 2);
    assert.equal(
      res.stderr,
      "funcrun: Option '--value' argument is ambiguous: a value that starts with a dash is written --value=<value> (funcrun config --help)\n",
    );
  });

  it('a malformed func.yaml is bad use (exit 2), naming its line', async () => {
    const dir = scratch();
    fs.writeFileSync(path.join(dir, 'func.yaml'), 'name: [\n');
    const res = await funcrun(['config', 'envs', 'add', '--name', 'A', '--value', '1', '--path', dir]);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /^funcrun: .*func\.yaml:\d+: /);
  });

  it('without func.yaml: an error naming where it looked (bad use, exit 2)', async () => {
    const dir = scratch();
    const res = await funcrun(['config', 'envs', 'list', '--path', dir]);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /^funcrun: no func\.yaml in .*: pass the function.s folder with --path, or write one/);
  });
});

describe('funcrun serve', () => {
  async function serving(args, cwd) {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, ...args, '--port', String(port), '--host', '127.0.0.1'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (c) => (out.stdout += c));
    child.stderr.on('data', (c) => (out.stderr += c));
    const exited = new Promise((resolve) => child.on('close', resolve));
    await waitUntilListening(port, { child, out });
    return { url: `http://127.0.0.1:${port}`, out, stop: () => (child.kill('SIGTERM'), exited) };
  }

  it('serves like node lib/serve.js, and `funcrun <folder>` still does', async () => {
    const dir = project({ 'index.js': 'module.exports = () => "served";' });
    for (const args of [['serve', dir], [dir]]) {
      const proc = await serving(args);
      assert.equal((await request(proc.url)).text, 'served');
      assert.equal(await proc.stop(), 0);
    }
  });

  it('--pretty writes human-readable lines', async () => {
    const dir = project({ 'index.js': 'module.exports = (ctx) => { ctx.log.info({ order: 7 }, "handled"); return "ok"; };' });
    const proc = await serving(['serve', dir, '--pretty']);
    await request(proc.url);
    await proc.stop();
    assert.match(proc.out.stdout, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}listening on http:\/\/127\.0\.0\.1:\d+ port=\d+/m);
    assert.match(proc.out.stdout, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[req 1\] handled order=7$/m);
  });

  it('--watch restarts the function when one of its files changes', async (t) => {
    const dir = project({ 'index.js': 'module.exports = () => "first";' });
    const proc = await serving(['serve', dir, '--watch']);
    t.after(() => proc.stop());
    assert.equal((await request(proc.url)).text, 'first');
    fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = () => "second";');
    let text = 'first';
    for (let i = 0; i < 100 && text !== 'second'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      text = await request(proc.url).then(
        (r) => r.text,
        () => text,
      );
    }
    assert.equal(text, 'second');
    assert.match(proc.out.stderr, /index\.js changed, restarting/);
  });
});
