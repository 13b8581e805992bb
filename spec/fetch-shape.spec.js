'use strict';
// A module that exports `fetch` beside a handler of the other shapes is served by one of them: the
// start log says which, and why, in one warning line, once.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { serve, request, project, runServing } = require('./helpers');
const testing = require('funcrun/testing');

// An ES module with a default { fetch } and a named handle: both shapes, of which handle is served.
const BOTH_SHAPES_ESM = {
  'package.json': '{ "type": "module" }',
  'index.js': `
export function handle() { return 'from handle'; }
export default { fetch: () => new Response('from fetch') };
`,
};
const warnings = (entries) => entries.filter((line) => line.level === 40 && /fetch/.test(line.msg));

describe('a module with fetch beside another handler', () => {
  it('{ handle, fetch } through start(): handle is served, and one warning says so and why', async (t) => {
    const server = await serve(t, {
      handle: () => 'from handle',
      fetch: () => new Response('from fetch'),
    });
    assert.equal((await request(server.url)).text, 'from handle');
    const lines = warnings(server.log.entries());
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.match(
      lines[0].msg,
      /exports both handle and fetch: handle is served, and fetch is never called \(a fetch handler has no handle or functions beside fetch\); export one of them$/,
    );
  });

  it('named functions beside fetch: the functions are served, and the warning names them', async (t) => {
    const server = await serve(t, {
      functions: { hello: () => 'from a named function' },
      fetch: () => new Response('from fetch'),
    });
    assert.equal((await request(`${server.url}/hello`)).json, 'from a named function');
    const lines = warnings(server.log.entries());
    assert.equal(lines.length, 1);
    assert.match(lines[0].msg, /both functions and fetch: functions is served/);
  });

  it('a function exported with a fetch method: fetch is served, and the warning says the function is never called', async (t) => {
    const fn = () => 'from the function';
    fn.fetch = () => new Response('from fetch');
    const server = await serve(t, fn);
    assert.equal((await request(server.url)).text, 'from fetch');
    const lines = warnings(server.log.entries());
    assert.equal(lines.length, 1);
    assert.match(lines[0].msg, /the exported function has a fetch method: fetch is served, and the exported function is never called/);
  });

  it('a fetch handler alone, or handle alone: no warning', async (t) => {
    const alone = await serve(t, { fetch: () => new Response('ok') });
    const handle = await serve(t, { handle: () => 'ok' });
    await request(alone.url);
    await request(handle.url);
    assert.deepEqual(warnings(alone.log.entries()), []);
    assert.deepEqual(warnings(handle.log.entries()), []);
  });

  it('served by the funcrun command: an ES module with a default { fetch } and a named handle says it in its start log, once', async (t) => {
    const folder = project(BOTH_SHAPES_ESM);
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = await runServing([folder]);
    t.after(() => proc.stop());
    const line = await proc.waitFor((l) => l.level === 40 && /both handle and fetch/.test(l.msg), 'the warning');
    assert.match(line.file, /index\.js$/);
    assert.equal((await request(proc.url)).text, 'from handle');
    assert.equal(warnings(proc.lines()).length, 1);
  });

  it('served by funcrun/testing from a folder: the same warning, naming the file, once, in the log it is given', async (t) => {
    const folder = project(BOTH_SHAPES_ESM);
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const sink = testing.createLogSink();
    const running = await testing.startFunction(folder, { logDestination: sink });
    t.after(() => running.close());
    assert.equal((await request(running.url)).text, 'from handle');
    const lines = warnings(sink.entries());
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.match(lines[0].msg, /^the module exports both handle and fetch: handle is served, and fetch is never called/);
    assert.match(lines[0].file, /index\.js$/);
  });

  it('served by funcrun/testing from a module file: named functions beside fetch are named in one warning', async (t) => {
    const folder = project({
      'index.js': `
module.exports = { functions: { hello: () => 'from a named function' }, fetch: () => new Response('from fetch') };
`,
    });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const sink = testing.createLogSink();
    const running = await testing.serve(t, `${folder}/index.js`, { logDestination: sink });
    assert.equal((await request(`${running.url}/hello`)).json, 'from a named function');
    const lines = warnings(sink.entries());
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.match(lines[0].msg, /both functions and fetch: functions is served/);
  });
});
