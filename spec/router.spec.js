'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { Router } = require('../lib/router.js');
const { serve, request } = require('./helpers');

describe('Router.find (pure)', () => {
  const router = new Router()
    .add('GET', '/items', 'list')
    .add('POST', '/items', 'create')
    .add('GET', '/items/:id', 'show')
    .add('DELETE', '/items/:id', 'remove')
    .add('GET', '/files/*', 'file')
    .add('*', '/any', 'any')
    .add('GET', '/opt/:name?', 'optional');

  it('finds a static route by method', () => {
    assert.deepEqual(router.find('GET', '/items'), { kind: 'found', handler: 'list', params: {} });
    assert.deepEqual(router.find('POST', '/items'), { kind: 'found', handler: 'create', params: {} });
  });

  it('gives path parameters, percent-decoded', () => {
    assert.deepEqual(router.find('GET', '/items/a%20b'), { kind: 'found', handler: 'show', params: { id: 'a b' } });
  });

  it('a trailing slash matches the same route', () => {
    assert.equal(router.find('GET', '/items/').handler, 'list');
    assert.equal(router.find('GET', '/items/7/').handler, 'show');
  });

  it('HEAD falls back to GET', () => {
    assert.equal(router.find('HEAD', '/items/7').handler, 'show');
  });

  it('a path that matches with another method lists the allowed methods', () => {
    assert.deepEqual(router.find('PUT', '/items'), { kind: 'method', allow: ['GET', 'HEAD', 'POST'] });
    assert.deepEqual(router.find('POST', '/items/7'), { kind: 'method', allow: ['GET', 'HEAD', 'DELETE'] });
  });

  it('no match is none', () => {
    assert.deepEqual(router.find('GET', '/nothing'), { kind: 'none' });
    assert.deepEqual(router.find('GET', '/items/7/extra'), { kind: 'none' });
  });

  it('a wildcard takes the rest of the path; * as method takes every method', () => {
    assert.deepEqual(router.find('GET', '/files/a/b.txt').params, { '*': 'a/b.txt' });
    assert.equal(router.find('PATCH', '/any').handler, 'any');
  });

  it('an optional parameter may be absent', () => {
    assert.deepEqual(router.find('GET', '/opt').params, {});
    assert.deepEqual(router.find('GET', '/opt/x').params, { name: 'x' });
  });

  it('does not treat regular expression characters in a path as patterns', () => {
    const r = new Router().add('GET', '/a.b', 1);
    assert.equal(r.find('GET', '/axb').kind, 'none');
    assert.equal(r.find('GET', '/a.b').kind, 'found');
  });
});

describe('routing over HTTP', () => {
  it('without routes, every path and method goes to the handler, which is told the path', async (t) => {
    const { url } = await serve(t, (ctx) => ({ method: ctx.method, path: ctx.path }));
    for (const [method, path] of [['GET', '/'], ['POST', '/a/b'], ['DELETE', '/x?y=1'], ['PATCH', '/deep/er/path'], ['OPTIONS', '/o'], ['PUT', '/']]) {
      const res = await request(url + path, { method });
      assert.equal(res.status, 200, `${method} ${path}`);
      assert.deepEqual(res.json, { method, path: path.split('?')[0] });
    }
  });

  const module = {
    routes: {
      'GET /items/:id': (ctx) => ({ id: ctx.params.id, from: 'show' }),
      'POST /items': (ctx, body) => ({ statusCode: 201, body: { created: body } }),
      'GET /health-ish': () => 'route',
    },
  };

  it('routes get their path parameters in context.params', async (t) => {
    const { url } = await serve(t, module);
    assert.deepEqual((await request(url + '/items/42')).json, { id: '42', from: 'show' });
    const created = await request(url + '/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    assert.equal(created.status, 201);
    assert.deepEqual(created.json, { created: { n: 1 } });
  });

  it('a path that matches with the wrong method is a 405 with Allow', async (t) => {
    const { url } = await serve(t, module);
    const res = await request(url + '/items/42', { method: 'DELETE' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
    assert.equal(res.json.statusCode, 405);
    assert.match(res.json.message, /DELETE/);
  });

  it('no match and no handle is a 404 with a JSON body', async (t) => {
    const { url } = await serve(t, module);
    const res = await request(url + '/nowhere', { method: 'POST' });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(res.json, { statusCode: 404, error: 'Not Found', message: 'no route for POST /nowhere' });
  });

  it('handle takes what no route matches', async (t) => {
    const { url } = await serve(t, { ...module, handle: (ctx) => `fallback ${ctx.path}` });
    assert.equal((await request(url + '/nowhere')).text, 'fallback /nowhere');
    assert.equal((await request(url + '/items/1')).json.from, 'show');
  });

  it('HEAD on a GET route answers without a body', async (t) => {
    const { url } = await serve(t, module);
    const res = await request(url + '/health-ish', { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), '5');
    assert.equal(res.text, '');
  });

  it('a route key that is not METHOD /path stops the start', async (t) => {
    await assert.rejects(serve(t, { routes: { 'GET items': () => 1 } }), /routes\['GET items'\]/);
    await assert.rejects(serve(t, { routes: { 'GET /x': 'not a function' } }), /must be a function/);
  });
});
