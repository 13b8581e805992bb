'use strict';
// funcrun's own errors carry a stable code: the table in src/error-codes.ts, docs/errors.md listing
// the same, and the codes on the wire (faas-js-runtime compatibility leaves them out).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { ERROR_CODES } = require('../lib/error-codes.js');
const { HttpError } = require('../lib/index.js');
const { serve } = require('./helpers');

const ROOT = path.join(__dirname, '..');

describe('error codes', () => {
  it('docs/errors.md lists every code with its status and when it is answered, and no other', () => {
    const rows = fs
      .readFileSync(path.join(ROOT, 'docs', 'errors.md'), 'utf8')
      .split('\n')
      .map((line) => /^\| `(FUNCRUN_\w+)` \| (\d{3}) \| (.*) \|$/.exec(line))
      .filter(Boolean)
      .map((m) => [m[1], Number(m[2]), m[3]]);
    assert.deepEqual(
      rows,
      Object.entries(ERROR_CODES).map(([code, { status, when }]) => [code, status, when]),
    );
  });

  it('each code names a client or server error status, once', () => {
    for (const [code, { status, when }] of Object.entries(ERROR_CODES)) {
      assert.match(code, /^FUNCRUN_[A-Z_]+$/);
      assert.ok(status >= 400 && status <= 599, `${code}: ${status}`);
      assert.ok(when.length > 10, `${code} says when`);
    }
  });

  it("funcrun's errors answer with their code: a 404, a 405, a 413, invalid JSON, a timeout", async (t) => {
    const { url } = await serve(t, { routes: { 'POST /orders': () => new Promise(() => {}) }, handle: undefined }, { bodyLimit: 16, timeout: 50 });
    const answers = await Promise.all([
      fetch(`${url}/nowhere`),
      fetch(`${url}/orders`),
      fetch(`${url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ much: 'more than sixteen bytes' }) }),
      fetch(`${url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' }),
      fetch(`${url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
    ]);
    const bodies = await Promise.all(answers.map((res) => res.json()));
    assert.deepEqual(
      bodies.map((b) => [b.statusCode, b.code]),
      [
        [404, 'FUNCRUN_NOT_FOUND'],
        [405, 'FUNCRUN_METHOD_NOT_ALLOWED'],
        [413, 'FUNCRUN_BODY_TOO_LARGE'],
        [400, 'FUNCRUN_INVALID_JSON'],
        [504, 'FUNCRUN_TIMEOUT'],
      ],
    );
  });

  it("a function's errors carry no code of funcrun's; its own HttpError code is sent", async (t) => {
    const { url } = await serve(t, (context) => {
      if (context.query.own) throw new HttpError(409, 'taken', { code: 'ORDER_TAKEN' });
      throw Object.assign(new Error('no'), { statusCode: 400 });
    });
    const plain = await (await fetch(`${url}/`)).json();
    assert.deepEqual(plain, { statusCode: 400, error: 'Bad Request', message: 'no' });
    const own = await (await fetch(`${url}/?own=1`)).json();
    assert.deepEqual(own, { statusCode: 409, code: 'ORDER_TAKEN', error: 'Conflict', message: 'taken' });
  });

  it('in faas-js-runtime compatibility the bodies are as faas-js-runtime has them: no code', async (t) => {
    const { url } = await serve(t, () => 'ok', { compat: 'faas-js-runtime' });
    const res = await fetch(`${url}/nowhere`);
    assert.equal(res.status, 404);
    assert.equal((await res.json()).code, undefined);
  });
});
