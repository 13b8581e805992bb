'use strict';
// The path users deploy, `node lib/serve.js`, runs the same copy of funcrun that
// `require('funcrun')` gives a function; and funcrun's own classes from another copy (a second
// version in the function's node_modules) are still recognised.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { project, runServing, request } = require('./helpers');

const checkout = path.join(__dirname, '..');

describe('one copy of funcrun at run time', () => {
  const running = [];
  after(() =>
    Promise.all(
      running.map(async (proc) => {
        proc.child.kill('SIGTERM');
        await proc.exited;
      }),
    ),
  );

  it("under node lib/serve.js, require('funcrun') is the serving copy: an HttpError keeps its details", async () => {
    const folder = project({
      'index.js': `const { HttpError } = require('funcrun');
module.exports = {
  routes: {
    'POST /names': () => { throw new HttpError(409, 'name taken', { details: { field: 'name' }, headers: { 'retry-after': '5' } }); },
    // The context serve.js made is an instance of the Context class require('funcrun') gives:
    // a second copy of funcrun would have a class of its own (Context carries no brand).
    'GET /copies': (context) => ({ same: context instanceof require('funcrun').Context }),
  },
};`,
    });
    fs.mkdirSync(path.join(folder, 'node_modules'));
    fs.symlinkSync(checkout, path.join(folder, 'node_modules', 'funcrun'), 'dir');
    const proc = await runServing([folder]);
    running.push(proc);
    const taken = await request(proc.url + '/names', { method: 'POST' });
    assert.equal(taken.status, 409);
    assert.deepEqual(taken.json, { statusCode: 409, error: 'Conflict', message: 'name taken', field: 'name' });
    assert.equal(taken.headers.get('retry-after'), '5');
    assert.deepEqual((await request(proc.url + '/copies')).json, { same: true });
  });

  it("another copy's HttpError and CloudEventResponse are recognised by their brand", async () => {
    const folder = project({
      'node_modules/other-funcrun/package.json': JSON.stringify({ name: 'other-funcrun', main: 'lib/index.js' }),
      'index.js': `const other = require('other-funcrun');
module.exports = {
  routes: {
    'POST /names': () => { throw new other.HttpError(422, 'too short', { details: { min: 3 } }); },
    'POST /event': () => new other.CloudEventResponse({ ok: true }, { source: '/other', type: 'other.reply' }).id('e1'),
  },
};`,
    });
    // A real second copy of funcrun's compiled files, as npm would install another version.
    const lib = path.join(folder, 'node_modules', 'other-funcrun', 'lib');
    fs.cpSync(path.join(checkout, 'lib'), lib, {
      recursive: true,
      filter: (from) => !from.includes(`${path.sep}.cache`) && !from.endsWith('.d.ts') && !from.endsWith('.map'),
    });
    const proc = await runServing([folder], { env: { NODE_PATH: path.join(checkout, 'node_modules') } });
    running.push(proc);
    const short = await request(proc.url + '/names', { method: 'POST' });
    assert.deepEqual([short.status, short.json.min, short.json.message], [422, 3, 'too short']);
    const event = await request(proc.url + '/event', { method: 'POST' });
    assert.equal(event.status, 200);
    assert.equal(event.headers.get('ce-id'), 'e1');
    assert.equal(event.headers.get('ce-source'), '/other');
    assert.deepEqual(event.json, { ok: true });
  });

  it('a subclass keeps ordinary instanceof', () => {
    const { HttpError } = require('../lib/index.js');
    class NotFound extends HttpError {}
    assert.ok(new NotFound(404, 'x') instanceof HttpError);
    assert.ok(!(new HttpError(404, 'x') instanceof NotFound));
    assert.ok(!(Object.assign(new Error('x'), { statusCode: 404 }) instanceof HttpError));
    assert.ok(!(JSON.parse('{"statusCode":404}') instanceof HttpError));
    const trap = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
        getPrototypeOf() {
          throw new Error('trap');
        },
      },
    );
    assert.equal(trap instanceof HttpError, false);
  });
});

describe('lib/runtime.js, the one bundled copy', () => {
  it('the bundles hold every module of src/ but those in the folders the build names as outside them, each module in one', () => {
    const { OUTSIDE, ON_DEMAND, bundleOf, fileOf } = require('../scripts/bundle.js');
    const sources = fs
      .readdirSync(path.join(checkout, 'src'), { recursive: true })
      .map((f) => f.split(path.sep).join('/'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      .map((f) => f.slice(0, -3));
    const folderOf = (name) => (name.includes('/') ? name.slice(0, name.indexOf('/')) : undefined);
    // A folder named that holds no module would be a typo hiding nothing.
    for (const folder of [...Object.keys(OUTSIDE), ...Object.keys(ON_DEMAND)])
      assert.ok(
        sources.some((name) => folderOf(name) === folder),
        `${folder}/ is named by the build but holds no module`,
      );
    for (const name of ['tools/cli', 'tools/create-command', 'tools/invoke-command', 'tools/config-command', 'tools/watch', 'tools/testing', 'boot/code-cache'])
      assert.equal(bundleOf(name), undefined, `${name} is bundled`);
    const held = [];
    for (const bundle of ['', ...Object.keys(ON_DEMAND)]) {
      const { modules } = require(path.join(checkout, 'lib', fileOf(bundle)));
      for (const name of Object.keys(modules)) {
        assert.equal(bundleOf(name), bundle, `${name} is in ${fileOf(bundle)}`);
        held.push(name);
      }
    }
    assert.deepEqual(held.sort(), sources.filter((name) => !Object.hasOwn(OUTSIDE, folderOf(name) ?? '')).sort());
  });

  it('each listed module file re-exports its part of the bundle, and ESM importers find the names', async () => {
    const { modules } = require('../lib/runtime.js');
    assert.equal(require('../lib/context.js'), modules.context);
    // A part loaded on demand: its module file re-exports its part of that part's bundle.
    assert.equal(require('../lib/events/idempotency/memory-store.js'), require('../lib/runtime-events.js').modules['events/idempotency/memory-store']);
    assert.equal(require('../lib/index.js'), modules.index);
    const esm = await import(path.join(checkout, 'lib', 'index.js'));
    assert.equal(esm.start, modules.index.start);
    assert.equal(typeof esm.HttpError, 'function');
  });
});
