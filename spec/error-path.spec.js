'use strict';
// The error path cannot throw: whatever a function throws, the request gets a well-formed JSON
// answer and the server keeps serving.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Readable } = require('node:stream');
const { serve, startServer, request } = require('./helpers');

const throwing = {
  'a statusCode getter that throws': () =>
    Object.defineProperty(new Error('x'), 'statusCode', {
      get: () => {
        throw new Error('getter');
      },
    }),
  'a code getter that throws': () =>
    Object.defineProperty(new Error('x'), 'code', {
      get: () => {
        throw new Error('getter');
      },
    }),
  'a message getter that throws, with a 4xx status': () =>
    Object.defineProperty({ statusCode: 400 }, 'message', {
      get: () => {
        throw new Error('getter');
      },
    }),
  'a Proxy whose every trap throws': () =>
    new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap');
        },
        has: () => {
          throw new Error('trap');
        },
        getPrototypeOf: () => {
          throw new Error('trap');
        },
        ownKeys: () => {
          throw new Error('trap');
        },
      },
    ),
  'a cyclic null-prototype object': () => {
    const value = Object.create(null);
    value.self = value;
    value.statusCode = 500;
    return value;
  },
  'a cyclic null-prototype object with a 4xx status and headers': () => {
    const value = Object.create(null);
    value.self = value;
    value.statusCode = 422;
    value.headers = value;
    return value;
  },
  'a string': () => 'plain string',
  undefined: () => undefined,
  'a Symbol': () => Symbol('s'),
  'a BigInt': () => 10n,
  'an HttpError whose details are cyclic': () => {
    const { HttpError } = require('../lib/index.js');
    const details = {};
    details.self = details;
    return new HttpError(409, 'conflict', { details });
  },
  'an error with a huge message': () => Object.assign(new Error('m'.repeat(1_000_000)), { statusCode: 400 }),
};

describe('the error path cannot throw', () => {
  let server;
  let current;
  before(async () => {
    server = await startServer(
      () => {
        throw current();
      },
      { logLevel: 'trace' },
    );
  });
  after(() => server.close());

  for (const [name, make] of Object.entries(throwing)) {
    it(`a thrown value with ${name} gets a JSON answer`, async () => {
      current = make;
      const answer = await request(server.url);
      assert.ok(answer.status >= 400 && answer.status <= 599, `status ${answer.status}`);
      assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(answer.json.statusCode, answer.status);
      assert.ok(answer.text.length < 2000, 'the message is cut short');
      current = () => Object.assign(new Error('fine'), { statusCode: 418 });
      assert.equal((await request(server.url)).status, 418, 'and the server keeps serving');
    });
  }

  it('every log line written meanwhile is JSON', () => {
    for (const line of server.log.lines) JSON.parse(line);
  });
});

describe('headers on a thrown error that node would refuse', () => {
  let server;
  before(async () => {
    server = await startServer((ctx) => {
      const error = Object.assign(new Error('not found'), { statusCode: 404, headers: { 'x-id': ctx.query.id, 'x-ok': 'yes' } });
      if (ctx.query.name) error.headers[ctx.query.name] = 'v';
      throw error;
    });
  });
  after(() => server.close());

  it("a value out of the client's query that node refuses (€) is left out; the answer still comes", async () => {
    const answer = await request(server.url + '/?id=%E2%82%AC');
    assert.equal(answer.status, 404);
    assert.equal(answer.headers.get('x-id'), null);
    assert.equal(answer.headers.get('x-ok'), 'yes');
    assert.equal(answer.json.message, 'not found');
  });

  it('a value with CR LF cannot add a header', async () => {
    const answer = await request(server.url + '/?id=a%0D%0Aset-cookie:%20x=1');
    assert.equal(answer.status, 404);
    assert.equal(answer.headers.get('set-cookie'), null);
  });

  it('a header name that is not a token is left out', async () => {
    const answer = await request(server.url + '/?id=1&name=bad%20name');
    assert.equal(answer.status, 404);
    assert.equal(answer.headers.get('x-id'), '1');
  });

  it('left-out headers are logged as a warning', () => {
    const warnings = server.log.entries().filter((e) => e.level === 40 && /headers left out/.test(e.msg));
    assert.ok(warnings.length >= 2);
  });
});

describe('an errorBody() that misbehaves', () => {
  it('one that throws, or returns what JSON cannot hold, falls back to the plain body', async (t) => {
    let mode = 'throw';
    const server = await serve(t, {
      handle: () => {
        throw Object.assign(new Error('nope'), { statusCode: 400 });
      },
      errorBody: (_body) => {
        if (mode === 'throw') throw new Error('formatter');
        if (mode === 'bigint') return { n: 1n };
        const cyclic = {};
        cyclic.self = cyclic;
        return cyclic;
      },
    });
    for (mode of ['throw', 'bigint', 'cyclic']) {
      const answer = await request(server.url);
      assert.equal(answer.status, 400, mode);
      assert.equal(answer.json.message, 'nope', mode);
    }
  });

  it('an errorBody() returning a stream: the plain JSON body, and the stream is closed', async (t) => {
    let closed = 0;
    const server = await serve(t, {
      routes: { 'GET /a': () => 'a' },
      errorBody: () => {
        const s = new Readable({ read() {} });
        s.once('close', () => closed++);
        return s;
      },
    });
    for (let i = 0; i < 20; i++) {
      const answer = await request(server.url + '/x');
      assert.equal(answer.json.statusCode, 404);
      assert.doesNotMatch(answer.text, /_readableState/);
    }
    for (let i = 0; i < 50 && closed < 20; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, 20);
  });
});

// Values that fight back when read: funcrun asking them anything (their class, their `then`) must
// not turn what they throw into an error of funcrun's own, with funcrun's stack.
const unreadable = {
  'a revoked Proxy': () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  },
  'an object whose message and stack getters throw': () => ({
    get message() {
      throw 1;
    },
    get stack() {
      throw 2;
    },
  }),
  'an Error subclass whose name getter throws': () => {
    class Unnamed extends Error {
      get name() {
        throw 3;
      }
    }
    return new Unnamed('unnamed');
  },
  'a Proxy whose getPrototypeOf trap throws': () =>
    new Proxy(
      {},
      {
        getPrototypeOf() {
          throw 4;
        },
      },
    ),
};

// Which of them are also returned: an Error or a plain object returned is data, answered by the return rules.
const returnedToo = new Set(['a revoked Proxy', 'a Proxy whose getPrototypeOf trap throws']);

describe('a value that cannot be read, thrown, rejected with or returned', () => {
  let current;
  let how;
  const answerWith = () => {
    const value = current();
    if (how === 'return') return value;
    if (how === 'reject') return Promise.reject(value);
    throw value;
  };
  for (const [shape, module] of [
    ['a fetch handler', { fetch: answerWith }],
    ['a handle function', { handle: answerWith }],
  ]) {
    describe(shape, () => {
      let server;
      before(async () => {
        server = await startServer(module, { logLevel: 'debug' });
      });
      after(() => server.close());

      for (const [name, make] of Object.entries(unreadable)) {
        for (const way of returnedToo.has(name) ? ['throw', 'reject', 'return'] : ['throw', 'reject']) {
          it(`${name} (${way}): a JSON 500, one error line without funcrun's stack, and the server keeps serving`, async () => {
            current = make;
            how = way;
            const before = server.log.entries().length;
            const answer = await request(server.url);
            assert.equal(answer.status, 500);
            assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
            assert.deepEqual(answer.json, { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
            const errors = server.log
              .entries()
              .slice(before)
              .filter((line) => line.level >= 50);
            assert.equal(errors.length, 1, JSON.stringify(errors));
            const [line] = errors;
            assert.equal(line.msg, 'request failed');
            assert.equal(line.statusCode, 500);
            // funcrun's own frames (its TypeScript or its bundle) would say funcrun failed.
            assert.doesNotMatch(JSON.stringify(line), /\/(src|lib)\/|TypeError/, JSON.stringify(line));
            if (name === 'a revoked Proxy') assert.equal(way === 'return' ? line.returned : line.thrown, '[unreadable value]');
            // The value thrown is described, not what its trap threw when funcrun asked it its class.
            if (name === 'a Proxy whose getPrototypeOf trap throws')
              assert.equal(way === 'return' ? line.returned : line.thrown, way === 'return' ? '[unreadable value]' : '{}');
            current = () => new Response('fine');
            how = 'return';
            if (shape === 'a handle function') current = () => 'fine';
            assert.equal((await request(server.url)).text, 'fine', 'and the server keeps serving');
          });
        }
      }
    });
  }
});

/** A revoked Proxy: a value that answers nothing it is asked. */
function revokedProxy() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

describe('a value that cannot be read, inside what the function returned', () => {
  const batch = {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents-batch+json' },
    body: JSON.stringify([{ specversion: '1.0', id: '1', source: '/batch', type: 'test.event', data: {} }]),
  };
  for (const [what, handle, init] of [
    ['a batch event returning a revoked Proxy', () => revokedProxy(), batch],
    ['{ statusCode, body: a revoked Proxy }', () => ({ statusCode: 200, body: revokedProxy() }), undefined],
  ]) {
    it(`${what}: a JSON 500, one error line without funcrun stack, saying what was returned`, async (t) => {
      const server = await startServer(handle, { logLevel: 'debug' });
      t.after(() => server.close());
      const answer = await request(server.url, init);
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.json, { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
      const errors = server.log.entries().filter((line) => line.level >= 50);
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.doesNotMatch(JSON.stringify(errors[0]), /\/(src|lib)\/|TypeError/, JSON.stringify(errors[0]));
      assert.equal(errors[0].returned, '[unreadable value]');
    });
  }
});
