'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { serve, request } = require('./helpers');
const { exchange, firstResponse } = require('./raw');
const { stop } = require('../lib/index.js');

function funcYamlFolder(text) {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-probes-'));
  fs.writeFileSync(path.join(folder, 'func.yaml'), text);
  return folder;
}

async function withEnv(vars, fn) {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('health probes', () => {
  it('answer 200 OK on /health/liveness and /health/readiness by default, without calling the handler', async (t) => {
    let calls = 0;
    const { url } = await serve(t, () => calls++);
    for (const probe of ['/health/liveness', '/health/readiness']) {
      const res = await request(url + probe);
      assert.equal(res.status, 200);
      assert.equal(res.text, 'OK');
      assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    }
    assert.equal(calls, 0);
  });

  it("call the module's liveness and readiness: false or a throw gives 503 with a JSON body", async (t) => {
    let ready = true;
    const { url } = await serve(t, {
      handle: () => 'ok',
      liveness: () => {
        throw new Error('wedged');
      },
      readiness: async () => ready,
    });
    const live = await request(url + '/health/liveness');
    assert.equal(live.status, 503);
    assert.equal(live.json.statusCode, 503);
    assert.equal((await request(url + '/health/readiness')).status, 200);
    ready = false;
    assert.equal((await request(url + '/health/readiness')).status, 503);
  });

  it("the function's path property moves a probe; the old path goes to the handler", async (t) => {
    const liveness = () => true;
    liveness.path = '/alive';
    const readiness = () => true;
    readiness.path = '/ready';
    const { url } = await serve(t, { handle: (ctx) => `handler ${ctx.path}`, liveness, readiness });
    assert.equal((await request(url + '/alive')).text, 'OK');
    assert.equal((await request(url + '/ready')).text, 'OK');
    assert.equal((await request(url + '/health/liveness')).text, 'handler /health/liveness');
  });

  it("func.yaml's deploy.healthEndpoints set the paths", async (t) => {
    const folder = funcYamlFolder('name: probes\ndeploy:\n  healthEndpoints:\n    liveness: /yaml/live\n    readiness: /yaml/ready\n');
    const { url } = await serve(t, () => 'handler', { config: folder });
    assert.equal((await request(url + '/yaml/live')).text, 'OK');
    assert.equal((await request(url + '/yaml/ready')).text, 'OK');
    assert.equal((await request(url + '/health/liveness')).text, 'handler');
  });

  it('precedence: LIVENESS_URL / READINESS_URL, then the path property, then func.yaml, then the default', async (t) => {
    const folder = funcYamlFolder('deploy:\n  healthEndpoints:\n    liveness: /yaml/live\n    readiness: /yaml/ready\n');
    const liveness = () => true;
    liveness.path = '/prop/live';
    await withEnv({ READINESS_URL: '/env/ready' }, async () => {
      const { url } = await serve(t, { handle: () => 'handler', liveness }, { config: folder });
      assert.equal((await request(url + '/env/ready')).text, 'OK');
      assert.equal((await request(url + '/prop/live')).text, 'OK');
      assert.equal((await request(url + '/yaml/ready')).text, 'handler');
      assert.equal((await request(url + '/yaml/live')).text, 'handler');
    });
    await withEnv({ LIVENESS_URL: '/env/live' }, async () => {
      const { url } = await serve(t, { handle: () => 'handler', liveness }, { config: folder });
      assert.equal((await request(url + '/env/live')).text, 'OK');
      assert.equal((await request(url + '/prop/live')).text, 'handler');
      assert.equal((await request(url + '/yaml/ready')).text, 'OK');
    });
  });

  it("a check written as faas-js-runtime's fastify handler answers through (request, reply): its status, headers and what it sends", async (t) => {
    const server = await serve(t, {
      handle: () => 'main',
      liveness: (request, reply) => reply.header('x-probe', request.query.who ?? 'none').send(`alive at ${request.path}`),
      readiness: (request, reply) => {
        if (request.headers['x-warm'] === undefined) {
          reply.code(503);
          return 'warming up';
        }
        return { ready: true, method: request.method, raw: typeof request.raw.on };
      },
    });
    const alive = await request(`${server.url}/health/liveness?who=kubelet`);
    assert.deepEqual([alive.status, alive.text, alive.headers.get('x-probe')], [200, 'alive at /health/liveness', 'kubelet']);
    const cold = await request(`${server.url}/health/readiness`);
    assert.deepEqual([cold.status, cold.text], [503, 'warming up']);
    assert.match(cold.headers.get('content-type'), /^text\/plain/);
    const warm = await request(`${server.url}/health/readiness`, { headers: { 'x-warm': '1' } });
    assert.equal(warm.status, 200);
    assert.deepEqual(warm.json, { ready: true, method: 'GET', raw: 'function' });
  });

  it("a check that fails (false, or a status that is none) is funcrun's JSON 503", async (t) => {
    const server = await serve(t, {
      handle: () => 'main',
      liveness: (request, reply) => reply.code(42).send('what'),
      readiness: () => false,
    });
    const bad = await request(`${server.url}/health/liveness`);
    assert.equal(bad.status, 503);
    assert.equal(bad.json.statusCode, 503);
    const no = await request(`${server.url}/health/readiness`);
    assert.equal(no.status, 503);
  });

  it("faas-js-runtime's METRICS_URL moves the metrics, before FUNC_METRICS_PATH", async (t) => {
    await withEnv({ METRICS_URL: '/m' }, async () => {
      const { url } = await serve(t, () => 'handler');
      const res = await request(url + '/m');
      assert.match(res.text, /^# HELP faas_invocations /m);
      assert.equal((await request(url + '/metrics')).text, 'handler');
    });
    await withEnv({ METRICS_URL: '/m', FUNC_METRICS_PATH: '/other' }, async () => {
      const { url } = await serve(t, () => 'handler');
      assert.match((await request(url + '/m')).text, /^# TYPE faas_invocations counter$/m);
      assert.equal((await request(url + '/other')).text, 'handler');
    });
  });

  it('FUNC_HEALTH_ROOT_PATH, FUNC_HEALTH_LIVENESS_PATH and FUNC_HEALTH_READINESS_PATH, as the Java properties do', async (t) => {
    const cases = [
      [{ FUNC_HEALTH_ROOT_PATH: '/q/health' }, '/q/health/liveness', '/q/health/readiness'],
      [{ FUNC_HEALTH_ROOT_PATH: '/q', FUNC_HEALTH_LIVENESS_PATH: 'alive', FUNC_HEALTH_READINESS_PATH: 'ready' }, '/q/alive', '/q/ready'],
      [{ FUNC_HEALTH_LIVENESS_PATH: 'up' }, '/health/up', '/health/readiness'],
      [{ FUNC_HEALTH_ROOT_PATH: '/q', LIVENESS_URL: '/full/live' }, '/full/live', '/q/readiness'],
    ];
    for (const [env, live, ready] of cases) {
      await withEnv(env, async () => {
        // A named-functions project and a handle project read them the same way.
        for (const module of [{ handle: () => 'handler' }, { functions: { f: () => 1 } }]) {
          const { url } = await serve(t, module);
          assert.equal((await request(url + live)).text, 'OK', `${JSON.stringify(env)} ${live}`);
          assert.equal((await request(url + ready)).text, 'OK', `${JSON.stringify(env)} ${ready}`);
        }
      });
    }
    await withEnv({ FUNC_HEALTH_LIVENESS_PATH: 'has space' }, () =>
      assert.rejects(
        serve(t, () => 1),
        /invalid FUNC_HEALTH_LIVENESS_PATH/,
      ),
    );
  });

  it('a probe path with dot or empty segments, or one another runtime path already has, stops the start', async (t) => {
    for (const [env, message] of [
      [{ FUNC_HEALTH_LIVENESS_PATH: '../x' }, /invalid FUNC_HEALTH_LIVENESS_PATH "\/health\/\.\.\/x": expected a path without '\.' or '\.\.' segments/],
      [{ LIVENESS_URL: '/a/./b' }, /invalid LIVENESS_URL/],
      [{ READINESS_URL: '/a//b' }, /empty segments/],
      [{ LIVENESS_URL: '/same', READINESS_URL: '/same' }, /the liveness probe and the readiness probe are both at "\/same"/],
      [{ LIVENESS_URL: '/metrics' }, /the liveness probe and the metrics are both at "\/metrics"/],
      [{ FUNC_METRICS_PATH: '/health/readiness' }, /the readiness probe and the metrics are both at/],
    ]) {
      await withEnv(env, () =>
        assert.rejects(
          serve(t, () => 1),
          message,
        ),
      );
    }
    // With metrics off, /metrics is free for a probe.
    await withEnv({ LIVENESS_URL: '/metrics', FUNC_METRICS: 'off' }, async () => {
      const { url } = await serve(t, () => 1);
      assert.equal((await request(url + '/metrics')).status, 200);
    });
  });

  it('a probe path answers GET and HEAD; another method is a 405', async (t) => {
    const { url } = await serve(t, () => 'handler');
    assert.equal((await request(url + '/health/liveness', { method: 'HEAD' })).status, 200);
    const res = await request(url + '/health/liveness', { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
  });

  it("a probe's or the metrics' path spelled otherwise (a dot segment, %2E, an escape, a backslash, a fragment) is a 404: neither the probe nor the function", async (t) => {
    const get = async (port, target, method = 'GET') =>
      firstResponse((await exchange(port, `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)).text);
    const spellings = [
      ['/health/./liveness', '/health/liveness'],
      ['/health/%2E/liveness', '/health/liveness'],
      ['/health/x/%2e%2E/readiness', '/health/readiness'],
      ['/health/%6Civeness', '/health/liveness'],
      ['/health\\liveness', '/health/liveness'],
      ['/health/liveness#top', '/health/liveness'],
      ['/./metrics', '/metrics'],
      ['/%6Detrics', '/metrics'],
      // A first segment of any spelling that a later `..` removes; an escaped first character.
      ['/users/../health/liveness', '/health/liveness'],
      ['/api\\..\\metrics', '/metrics'],
      ['/users/.%2E/health/readiness', '/health/readiness'],
      ['/./health/liveness', '/health/liveness'],
      ['/%68ealth/liveness', '/health/liveness'],
    ];
    let calls = 0;
    for (const module of [{ fetch: (req) => (calls++, Response.json({ app: new URL(req.url).pathname })) }, (context) => (calls++, { app: context.path })]) {
      const { port } = await serve(t, module);
      for (const [target, resolved] of spellings) {
        for (const method of ['GET', 'POST']) {
          const res = await get(port, target, method);
          assert.equal(res.status, 404, `${method} ${target}`);
          const body = JSON.parse(res.body);
          assert.equal(body.code, 'FUNCRUN_NOT_FOUND');
          assert.ok(body.message.includes(`the runtime's ${resolved}`), body.message);
        }
      }
      assert.equal(calls, 0, 'the function never got them');
      // As spelled, each is the runtime's; a path of the function's with an escape or a dot is still the function's.
      assert.equal((await get(port, '/health/liveness')).status, 200);
      assert.equal((await get(port, '/health/liveness/')).body, 'OK');
      assert.equal((await get(port, '/metrics')).status, 200);
      // An empty first segment stays one (`//health/liveness` is not the probe's), and an escaped `/` is no segment's end.
      for (const target of ['/users/a%20b', '/files/./a.txt', '/health/%2E%2E', '//health/liveness', '/users%2F..%2Fmetrics']) {
        const res = await get(port, target);
        assert.equal(res.status, 200, target);
        assert.ok(JSON.parse(res.body).app !== undefined, target);
      }
      calls = 0;
    }
  });

  it("configured runtime paths spelled otherwise are a 404 too, an escape first among them; other paths are the function's", async (t) => {
    const get = async (port, target) => firstResponse((await exchange(port, `GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)).text);
    await withEnv({ LIVENESS_URL: '/probe/live', FUNC_METRICS_PATH: '/%22m' }, async () => {
      const { port } = await serve(t, { fetch: (req) => Response.json({ app: new URL(req.url).pathname }) });
      const spellings = [
        ['/x/../probe/live', '/probe/live'],
        ['/p%72obe/live', '/probe/live'],
        // WHATWG URL escapes `"`: the metrics path begins with an escape, which may be any character's.
        ['/"m#top', '/%22m'],
        ['/x/../%22m', '/%22m'],
      ];
      for (const [target, resolved] of spellings) {
        const res = await get(port, target);
        assert.equal(res.status, 404, target);
        assert.ok(JSON.parse(res.body).message.includes(`the runtime's ${resolved}`), res.body);
      }
      assert.equal((await get(port, '/probe/live')).body, 'OK');
      for (const target of ['/"m', '/health/./liveness', '/users/a%20b']) {
        const res = await get(port, target);
        assert.equal(res.status, 200, target);
        assert.ok(JSON.parse(res.body).app !== undefined, target);
      }
    });
  });

  it('readiness turns 503 once the server drains, while the request in flight still completes', async (t) => {
    const gates = {};
    const gate = (name) => {
      let open;
      const entered = new Promise((resolve) => {
        gates[name] = { resolve, promise: new Promise((release) => (open = release)) };
      });
      return { entered, open: () => open() };
    };
    const slow = gate('slow');
    const ready = gate('ready');
    const { url, server } = await serve(t, {
      handle: async () => {
        gates.slow.resolve();
        await gates.slow.promise;
        return 'slow done';
      },
      readiness: async () => {
        gates.ready.resolve();
        await gates.ready.promise;
        return true;
      },
    });
    const slowResponse = request(url + '/work');
    const readyResponse = request(url + '/health/readiness');
    await Promise.all([slow.entered, ready.entered]);
    const stopped = stop(server, 5000);
    ready.open();
    const during = await readyResponse;
    assert.equal(during.status, 503);
    assert.equal(during.headers.get('connection'), 'close');
    await assert.rejects(request(url + '/health/liveness'), 'new connections are refused');
    slow.open();
    const res = await slowResponse;
    assert.equal(res.status, 200);
    assert.equal(res.text, 'slow done');
    assert.equal(res.headers.get('connection'), 'close');
    await stopped;
  });
});
