'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { serve, startServer, request } = require('./helpers');

const SECRET = 'db-password-Zq81';

// Each path throws something different.
const throwers = {
  '/status': () => {
    throw Object.assign(new Error('no such order'), { statusCode: 404 });
  },
  '/status-teapot': () => {
    throw Object.assign(new Error('short and stout'), { statusCode: 418 });
  },
  '/code': () => {
    throw Object.assign(new Error('conflict'), { code: 409 });
  },
  '/code-string': () => {
    throw Object.assign(new Error(`ENOENT ${SECRET}`), { code: 'ENOENT' });
  },
  '/error': () => {
    throw new Error(`connection to postgres://admin:${SECRET}@db failed`);
  },
  '/string': () => {
    throw `a string with ${SECRET}`;
  },
  '/undefined': () => {
    throw undefined;
  },
  '/null': () => {
    throw null;
  },
  '/number': () => {
    throw 42;
  },
  '/rejected': () => Promise.reject(new TypeError(`rejected ${SECRET}`)),
  '/async-throw': async () => {
    await new Promise((r) => setImmediate(r));
    throw new RangeError(`async ${SECRET}`);
  },
  '/status-5xx': () => {
    throw Object.assign(new Error(`upstream ${SECRET} down`), { statusCode: 503 });
  },
  '/status-out-of-range': () => {
    throw Object.assign(new Error('not an error status'), { statusCode: 302 });
  },
  '/plain-object': () => {
    throw { statusCode: 422, message: 'unprocessable thing' };
  },
  '/ok': () => 'still serving',
};

describe('errors over HTTP', () => {
  let server;
  before(async () => {
    server = await startServer((ctx) => throwers[ctx.path]());
  });
  after(() => server.close());

  const get = (path) => request(server.url + path);

  it('a numeric statusCode gives that status and the message', async () => {
    const res = await get('/status');
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(res.json, { statusCode: 404, error: 'Not Found', message: 'no such order' });
    assert.equal((await get('/status-teapot')).status, 418);
  });

  it("faas-js-runtime's numeric code is honoured too", async () => {
    const res = await get('/code');
    assert.equal(res.status, 409);
    assert.equal(res.json.message, 'conflict');
  });

  it('a thrown plain object with statusCode and message works like an error', async () => {
    const res = await get('/plain-object');
    assert.equal(res.status, 422);
    assert.equal(res.json.message, 'unprocessable thing');
  });

  for (const path of ['/error', '/string', '/undefined', '/null', '/number', '/rejected', '/async-throw', '/code-string', '/status-out-of-range']) {
    it(`${path}: anything else thrown is a generic 500`, async () => {
      const res = await get(path);
      assert.equal(res.status, 500);
      assert.deepEqual(res.json, { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
    });
  }

  it('a 5xx with its own statusCode keeps the status but not the message', async () => {
    const res = await get('/status-5xx');
    assert.equal(res.status, 503);
    assert.deepEqual(res.json, { statusCode: 503, error: 'Service Unavailable', message: 'Service Unavailable' });
  });

  it('no 5xx body carries the detail; the log does, with the stack', async () => {
    for (const path of ['/error', '/rejected', '/status-5xx', '/string']) {
      const res = await get(path);
      assert.ok(!res.text.includes(SECRET), path);
    }
    const errors = server.log.entries().filter((e) => e.level === 50);
    const error = errors.find((e) => e.err && e.err.message.includes('postgres://'));
    assert.ok(error, 'the thrown Error is logged');
    assert.equal(error.err.type, 'Error');
    assert.match(error.err.stack, /errors\.spec\.js/);
    assert.equal(typeof error.reqId, 'number');
    assert.ok(
      errors.some((e) => e.thrown === `a string with ${SECRET}`),
      'a thrown string is logged',
    );
  });

  it('keeps serving after every throw', async () => {
    const res = await get('/ok');
    assert.equal(res.status, 200);
    assert.equal(res.text, 'still serving');
  });
});

describe('malformed HTTP', () => {
  const net = require('node:net');
  const raw = (port, data) =>
    new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(data));
      let out = '';
      socket.on('data', (chunk) => (out += chunk));
      socket.on('close', () => resolve(out));
      socket.on('error', reject);
    });

  it('a request that is not HTTP, or has conflicting framing, gets a 400 JSON body and the server keeps serving', async (t) => {
    const { url } = await serve(t, () => 'fine');
    const port = Number(new URL(url).port);
    for (const data of ['GARBAGE\r\n\r\n', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n']) {
      const answer = await raw(port, data);
      assert.match(answer, /^HTTP\/1\.1 400 /);
      assert.match(answer, /content-type: application\/json/);
      assert.match(answer, /"statusCode":400/);
    }
    assert.equal((await request(url)).text, 'fine');
  });

  it('headers past the size limit get a 431 JSON body', async (t) => {
    const { url } = await serve(t, () => 'fine');
    const answer = await raw(Number(new URL(url).port), `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`);
    assert.match(answer, /^HTTP\/1\.1 431 /);
    assert.match(answer, /"statusCode":431/);
  });
});

describe("a module's errorBody", () => {
  it('shapes every error body of the function: thrown, 404, 405, 413 and malformed JSON', async (t) => {
    const { url } = await serve(
      t,
      {
        routes: {
          'POST /things': (ctx, body) => {
            if (body?.bad) throw Object.assign(new Error('bad thing'), { statusCode: 422 });
            throw new Error(`internal ${SECRET}`);
          },
        },
        errorBody: (body, thrown) => ({ code: body.statusCode, text: body.message, thrownIsError: thrown instanceof Error }),
      },
      { bodyLimit: 64 },
    );
    const post = (body, path = '/things') => request(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.deepEqual((await post('{"bad":true}')).json, { code: 422, text: 'bad thing', thrownIsError: true });
    const internal = await post('{}');
    assert.equal(internal.status, 500);
    assert.deepEqual(internal.json, { code: 500, text: 'Internal Server Error', thrownIsError: true });
    assert.equal((await post('{}', '/nothing')).json.code, 404);
    assert.equal((await request(url + '/things')).json.code, 405);
    assert.equal((await post('x'.repeat(100))).json.code, 413);
    assert.match((await post('{')).json.text, /invalid JSON/);
  });

  it('an errorBody that throws falls back to the standard body and is logged', async (t) => {
    const { url, log } = await serve(t, {
      handle: () => {
        throw Object.assign(new Error('nope'), { statusCode: 400 });
      },
      errorBody: () => {
        throw new Error('formatter broke');
      },
    });
    const res = await request(url);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { statusCode: 400, error: 'Bad Request', message: 'nope' });
    assert.ok(log.entries().some((e) => e.err?.message === 'formatter broke'));
  });
});

describe('headers of a thrown error', () => {
  it('a thrown 4xx with headers sends them (numbers as text); a 5xx does not', async (t) => {
    const { url } = await serve(t, (ctx) => {
      const status = Number(ctx.query.status);
      throw Object.assign(new Error('x'), { statusCode: status, headers: { 'WWW-Authenticate': 'Bearer', 'x-count': 3 } });
    });
    const unauthorized = await request(url + '/?status=401');
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers.get('www-authenticate'), 'Bearer');
    assert.equal(unauthorized.headers.get('x-count'), '3', 'numbers sent as text');
    const failed = await request(url + '/?status=503');
    assert.equal(failed.headers.get('www-authenticate'), null);
  });
});
