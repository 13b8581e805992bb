'use strict';
// The loader's toFunction(): which shape a module's exports are, read without loading a file.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { toFunction } = require('../../lib/start/loader.js');
const { buildRoutes } = require('../../lib/routing/routes.js');

const PATHS = { livenessPath: '/health/liveness', readinessPath: '/health/readiness' };

describe('toFunction: fetch handlers', () => {
  it('an object with fetch is a fetch handler, bound to its object, and its routes array is not read', () => {
    const app = {
      routes: [{ method: 'GET', path: '/x' }],
      name: 'app',
      fetch() {
        return this.name;
      },
    };
    const module = toFunction(app);
    assert.deepEqual(Object.keys(module), ['fetch']);
    assert.equal(module.fetch(), 'app');
    const table = buildRoutes(module, PATHS, { A: '1' });
    assert.equal(table.fallback.kind, 'fetch');
    assert.deepEqual(table.fallback.env, { A: '1' });
  });

  it('an ES module: the default export is the handler, the named exports its lifecycle, over the object’s own', () => {
    const init = () => 'named';
    const module = toFunction({ default: { fetch: () => 'f', init: () => 'own', readiness: () => true }, init });
    assert.equal(module.init, init);
    assert.equal(typeof module.readiness, 'function');
    assert.equal(module.fetch(), 'f');
    assert.equal(module.handle, undefined);
  });

  it('a named handle or functions export makes it a handle module, whatever the default export has', () => {
    const handle = () => 'h';
    const module = toFunction({ default: { fetch: () => 'f' }, handle });
    assert.equal(module.handle, handle);
    assert.equal(module.fetch, undefined);
    assert.equal(toFunction({ fetch: () => 'f', handle }).fetch, undefined);
  });

  it('a named fetch export (export function fetch) is a fetch handler', () => {
    const module = toFunction({ fetch: () => 'f', shutdown: () => undefined });
    assert.equal(module.fetch(), 'f');
    assert.equal(typeof module.shutdown, 'function');
  });
});
