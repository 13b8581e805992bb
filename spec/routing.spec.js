'use strict';
// Routing over real HTTP: routes and their parameters, 405 with Allow, 404, HEAD, and handle for
// what no route matches.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { serve, request } = require('./helpers');

describe('routing over HTTP', () => {
  it('without routes, every path and method goes to the handler, which is told the path', async (t) => {
    const { url } = await serve(t, (ctx) => ({ method: ctx.method, path: ctx.path }));
    for (const [method, path] of [
      ['GET', '/'],
      ['POST', '/a/b'],
      ['DELETE', '/x?y=1'],
      ['PATCH', '/deep/er/path'],
      ['OPTIONS', '/o'],
      ['PUT', '/'],
    ]) {
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
    assert.deepEqual(res.json, { statusCode: 404, code: 'FUNCRUN_NOT_FOUND', error: 'Not Found', message: 'no route for POST /nowhere' });
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

  it('routes with optional parameters match a long path at once', async (t) => {
    const server = await serve(t, { routes: { 'GET /a/:x?/:y?/:z?': (ctx) => ctx.params } });
    const started = performance.now();
    const answer = await request(`${server.url}/a/${'x'.repeat(8000)}/`);
    assert.ok(performance.now() - started < 1000);
    assert.equal(answer.json.x.length, 8000);
    const miss = await request(`${server.url}/a/${'x'.repeat(8000)}/1/2/3/4`);
    assert.equal(miss.status, 404);
  });
});
