'use strict';
// Event contracts: the module's `events.types` declares each CloudEvent type's data schema (a JSON
// Schema or a Standard Schema validator). An event that breaks its contract, or of a type not
// declared, is refused with a 400 naming why, and never reaches the function.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { CloudEvent, HTTP } = require('cloudevents');
const { serve, request } = require('./helpers');
const { start } = require('../lib/index.js');

const ORDER = {
  type: 'object',
  properties: { id: { type: 'string' }, total: { type: 'number', minimum: 0 }, items: { type: 'array', items: { type: 'string' } } },
  required: ['id', 'total'],
};

// A Standard Schema validator written out, as Zod, Valibot or ArkType make one: text in, a number out.
const amount = {
  '~standard': {
    version: 1,
    vendor: 'spec',
    async validate(value) {
      if (value === null || typeof value !== 'object' || typeof value.amount !== 'string' || !/^\d+$/.test(value.amount)) {
        return { issues: [{ message: 'amount must be digits', path: [{ key: 'amount' }] }] };
      }
      return { value: { amount: Number(value.amount) } };
    },
  },
};

function event(type, data, extra = {}) {
  return new CloudEvent({ type, source: '/spec', data, ...extra });
}

async function post(url, ce, mode = 'binary') {
  const { headers, body } = mode === 'binary' ? HTTP.binary(ce) : HTTP.structured(ce);
  return request(url, { method: 'POST', headers, body });
}

function contractFunction(seen, options = {}) {
  return {
    events: { types: { 'order.created': ORDER, 'payment.received': amount }, ...options },
    handle(context, data) {
      seen.push({ type: context.cloudevent.type, data });
      return { ok: true };
    },
  };
}

describe('event contracts', () => {
  it('an event whose data matches its type reaches the function, in binary and structured mode', async (t) => {
    const seen = [];
    const { url } = await serve(t, contractFunction(seen));
    const data = { id: 'o1', total: 3, items: ['a'] };
    assert.equal((await post(url, event('order.created', data))).status, 200);
    assert.equal((await post(url, event('order.created', data), 'structured')).status, 200);
    assert.deepEqual(seen, [
      { type: 'order.created', data },
      { type: 'order.created', data },
    ]);
  });

  it("a JSON Schema's defaults fill in what the data leaves out, nested ones too; what the data gives stays", async (t) => {
    const seen = [];
    const WITH_DEFAULTS = {
      type: 'object',
      properties: {
        n: { type: 'number' },
        currency: { type: 'string', default: 'EUR' },
        ship: { type: 'object', properties: { by: { type: 'string', default: 'post' } }, default: {} },
      },
      required: ['n'],
    };
    const { url } = await serve(t, { events: { types: { 'order.priced': WITH_DEFAULTS } }, handle: (context, data) => (seen.push(data), 'ok') });
    assert.equal((await post(url, event('order.priced', { n: 1 }))).status, 200);
    assert.equal((await post(url, event('order.priced', { n: 2, currency: 'USD', ship: { by: 'air' } }), 'structured')).status, 200);
    assert.deepEqual(seen, [
      { n: 1, currency: 'EUR', ship: { by: 'post' } },
      { n: 2, currency: 'USD', ship: { by: 'air' } },
    ]);
  });

  it('data that breaks the contract is a 400 naming every violation, and the function does not run', async (t) => {
    const seen = [];
    const { url, log } = await serve(t, contractFunction(seen));
    const res = await post(url, event('order.created', { total: -1, items: ['a', 7] }));
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'FUNCRUN_INVALID_EVENT_DATA');
    assert.equal(res.json.type, 'order.created');
    assert.deepEqual(res.json.violations.map((v) => v.field).sort(), ['(data)', 'items.1', 'total']);
    assert.match(res.json.message, /'id' is required/);
    assert.deepEqual(seen, []);
    const line = log.entries().find((e) => e.msg === 'event refused by its contract');
    assert.equal(line.event.type, 'order.created');
    assert.equal(typeof line.event.id, 'string');
  });

  it('a violation names the key at fault: an extra property, a bad property name, a missing dependency; allowed values are listed', async (t) => {
    const seen = [];
    const strict = {
      type: 'object',
      properties: { id: { type: 'string' }, state: { enum: ['open', 'paid'] }, kind: { const: 'order' }, card: {}, cvc: {} },
      additionalProperties: false,
      dependencies: { card: ['cvc'] },
    };
    const names = { type: 'object', propertyNames: { pattern: '^[a-z]+$' } };
    const { url } = await serve(t, { events: { types: { strict, names } }, handle: (context, data) => (seen.push(data), 'ok') });

    const extra = await post(url, event('strict', { id: 'o1', extraField: 1 }));
    assert.equal(extra.status, 400);
    assert.equal(extra.json.message, "invalid data for event type 'strict': (data) must NOT have additional property 'extraField'");
    assert.deepEqual(extra.json.violations, [{ field: '(data)', description: "must NOT have additional property 'extraField'" }]);

    const others = await post(url, event('strict', { card: '4111', state: 'lost', kind: 'refund' }), 'structured');
    assert.equal(others.status, 400);
    assert.deepEqual(others.json.violations.map((v) => `${v.field} ${v.description}`).sort(), [
      "(data) 'cvc' is required when 'card' is present",
      'kind must be equal to "order"',
      'state must be equal to one of "open", "paid"',
    ]);

    const badName = await post(url, event('names', { good: 1, Bad: 2 }));
    assert.equal(badName.status, 400);
    // One violation for the key, not ajv's two (the subschema's, then propertyNames' own).
    assert.deepEqual(badName.json.violations, [{ field: '(data)', description: 'property name \'Bad\' must match pattern "^[a-z]+$"' }]);
    assert.deepEqual(seen, []);
  });

  it("a key named in a violation is the sender's: escaped, and cut short however long it is", async (t) => {
    const strict = { type: 'object', properties: {}, additionalProperties: false };
    const { url, log } = await serve(t, { events: { types: { strict } }, handle: () => 'ok' }, { bodyLimit: 4 * 1024 * 1024 });

    const long = 'k'.repeat(1024 * 1024);
    const res = await post(url, event('strict', { [long]: 1 }), 'structured');
    assert.equal(res.status, 400);
    assert.equal(res.json.violations[0].description, `must NOT have additional property '${'k'.repeat(40)}…'`);
    assert.ok(res.text.length < 2000, `the answer is ${res.text.length} characters`);
    for (const line of log.lines) assert.ok(line.length < 4000, `a log line of ${line.length} characters`);

    const hostile = await post(url, event('strict', { 'it\'s\n"\\\u0000\u2028': 1 }));
    assert.equal(hostile.status, 400);
    assert.equal(hostile.json.violations[0].description, "must NOT have additional property 'it\\'s\\n\"\\\\\\u0000\\u2028'");
    assert.doesNotMatch(hostile.json.message, /[\u0000-\u001f\u2028]/);
  });

  it("a field (the path of the sender's keys) and a quoted key escape control, C1 and bidi characters, in the field and the message", async (t) => {
    const numbers = { type: 'object', additionalProperties: { type: 'number' } };
    const strict = { type: 'object', properties: {}, additionalProperties: false };
    const { url } = await serve(t, { events: { types: { numbers, strict } }, handle: () => 'ok' });
    const byPath = await post(url, event('numbers', { 'a\nb"c\'d\u001b\u0085\u202e\u200b\u2066': 'x' }));
    assert.equal(byPath.status, 400);
    assert.equal(byPath.json.violations[0].field, 'a\\nb"c\'d\\u001b\\u0085\\u202e\\u200b\\u2066');
    assert.ok(byPath.json.message.includes('a\\nb"c\'d\\u001b\\u0085\\u202e\\u200b\\u2066 must be number'), byPath.json.message);
    assert.doesNotMatch(byPath.text, /[\u0000-\u001f\u0085\u202e\u200b\u2066]/);
    const byName = await post(url, event('strict', { 'x\u009b\u2069\u200f': 1 }));
    assert.equal(byName.json.violations[0].description, "must NOT have additional property 'x\\u009b\\u2069\\u200f'");
    const long = await post(url, event('numbers', { [`${'p'.repeat(200)}\n`]: 'x' }));
    assert.equal(long.json.violations[0].field, `${'p'.repeat(80)}…`);
  });

  it("a Standard Schema validator's issues name their paths, and its output is the data the function gets", async (t) => {
    const seen = [];
    const { url } = await serve(t, contractFunction(seen));
    const bad = await post(url, event('payment.received', { amount: 'ten' }));
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.json.violations, [{ field: 'amount', description: 'amount must be digits' }]);
    const good = await post(url, event('payment.received', { amount: '10' }), 'structured');
    assert.equal(good.status, 200);
    assert.deepEqual(seen, [{ type: 'payment.received', data: { amount: 10 } }]);
  });

  it('a real Zod schema is a Standard Schema: its issues are the violations, its output (coerced) the data', async (t) => {
    const { z } = require('zod');
    const seen = [];
    const schema = z.object({ order: z.string().min(1), paidAt: z.coerce.date(), lines: z.array(z.object({ qty: z.number().int() })) });
    const { url } = await serve(t, { events: { types: { paid: schema } }, handle: (context, data) => (seen.push(data), 'ok') });
    const bad = await post(url, event('paid', { order: '', paidAt: 'not a date', lines: [{ qty: 1.5 }] }));
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.json.violations.map((v) => v.field).sort(), ['lines.0.qty', 'order', 'paidAt']);
    assert.equal((await post(url, event('paid', { order: 'o1', paidAt: '2026-01-02T03:04:05Z', lines: [] }))).status, 200);
    assert.ok(seen[0].paidAt instanceof Date);
    assert.equal(seen[0].paidAt.toISOString(), '2026-01-02T03:04:05.000Z');
  });

  it('an event of an undeclared type is a 400 naming it, unless undeclared types pass through', async (t) => {
    const seen = [];
    const { url } = await serve(t, contractFunction(seen));
    const res = await post(url, event('order.shipped', { id: 'o1' }));
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'FUNCRUN_UNDECLARED_EVENT_TYPE');
    assert.equal(res.json.type, 'order.shipped');
    assert.match(res.json.message, /order\.created, payment\.received/);
    assert.deepEqual(seen, []);

    const passing = await serve(t, contractFunction(seen, { passthrough: true }));
    assert.equal((await post(passing.url, event('order.shipped', { id: 'o1' }))).status, 200);
    // Declared types are still checked.
    assert.equal((await post(passing.url, event('order.created', { id: 'o1' }))).status, 400);
    assert.deepEqual(seen, [{ type: 'order.shipped', data: { id: 'o1' } }]);
  });

  it("a batch with one event that breaks its contract is a 400 naming the event's index, and no event runs", async (t) => {
    const seen = [];
    const { url } = await serve(t, contractFunction(seen));
    const events = [event('order.created', { id: 'a', total: 1 }), event('payment.received', { amount: '5' }), event('order.created', { id: 'c' })];
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
    assert.equal(res.status, 400);
    assert.equal(res.json.index, 2);
    assert.deepEqual(seen, []);
    const ok = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json' },
      body: JSON.stringify(events.slice(0, 2)),
    });
    assert.equal(ok.status, 204);
    assert.deepEqual(
      seen.map((s) => s.data),
      [{ id: 'a', total: 1 }, { amount: 5 }],
    );
  });

  it('contracts hold for named functions: their events are checked before they are routed by type', async (t) => {
    const calls = [];
    const created = (input) => (calls.push(input), { seen: input.id });
    created.trigger = 'order.created';
    const { url } = await serve(t, { events: { types: { 'order.created': ORDER } }, functions: { created } });
    assert.equal((await post(url, event('order.created', { id: 'x' }))).status, 400);
    assert.equal((await post(url, event('created', { id: 'x', total: 1 }))).status, 400);
    const ok = await post(url, event('order.created', { id: 'x', total: 1 }));
    assert.equal(ok.status, 200);
    assert.deepEqual(calls, [{ id: 'x', total: 1 }]);
  });

  it('bytes are not JSON: binary data for a JSON Schema type is a 400', async (t) => {
    const { url } = await serve(t, contractFunction([]));
    const res = await request(url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/spec', 'ce-type': 'order.created', 'content-type': 'application/octet-stream' },
      body: Buffer.from([1, 2, 3]),
    });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json.violations, [{ field: '(data)', description: 'is bytes, not JSON' }]);
  });

  it('a validated event echoed back is still data: its statusCode and headers do not shape the answer', async (t) => {
    const echo = {
      '~standard': { version: 1, vendor: 'spec', validate: (value) => ({ value: { ...value } }) },
    };
    const { url } = await serve(t, { events: { types: { echo } }, handle: (context, data) => data });
    const res = await post(url, event('echo', { statusCode: 302, headers: { location: 'https://evil.example' }, body: 'x' }));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('location'), null);
    assert.equal(res.json.statusCode, 302);
  });

  it('violations are bounded: data with thousands of them is answered with at most 50, quickly', async (t) => {
    const { url } = await serve(t, { events: { types: { list: { type: 'array', items: { type: 'number' } } } }, handle: () => 'ok' });
    const started = performance.now();
    const res = await post(
      url,
      event(
        'list',
        Array.from({ length: 100_000 }, () => 'x'),
      ),
    );
    assert.equal(res.status, 400);
    assert.ok(res.json.violations.length <= 50);
    assert.ok(res.text.length < 20_000, `${res.text.length} bytes`);
    // A wide bound: it catches a blow-up, not a slow machine.
    assert.ok(performance.now() - started < 10_000);
  });

  it("a validator that never answers is held to the request's timeout; one that returns no result is the module's failure", async (t) => {
    const hangs = { '~standard': { version: 1, vendor: 'spec', validate: () => new Promise(() => {}) } };
    const broken = { '~standard': { version: 1, vendor: 'spec', validate: () => 42 } };
    const listless = { '~standard': { version: 1, vendor: 'spec', validate: () => ({ issues: [] }) } };
    let runs = 0;
    const { url } = await serve(t, { events: { types: { hangs, broken, listless } }, handle: () => void runs++ }, { timeout: 300 });
    const slow = await post(url, event('hangs', {}));
    assert.equal(slow.status, 504);
    assert.equal(slow.json.code, 'FUNCRUN_TIMEOUT');
    const wrong = await post(url, event('broken', {}));
    assert.equal(wrong.status, 500);
    assert.doesNotMatch(wrong.text, /Standard Schema|42/);
    const refused = await post(url, event('listless', {}));
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.json.violations, [{ field: '(data)', description: 'is invalid' }]);
    assert.equal(runs, 0);
  });

  it('invalid and undeclared events are counted in the metrics', async (t) => {
    const { url } = await serve(t, contractFunction([]));
    await post(url, event('order.created', {}));
    await post(url, event('nope', {}));
    await post(url, event('nope', {}));
    const metrics = await request(new URL('/metrics', url));
    assert.match(metrics.text, /funcrun_events_total\{outcome="invalid",[^}]*\} 1\n/);
    assert.match(metrics.text, /funcrun_events_total\{outcome="undeclared",[^}]*\} 2\n/);
  });

  it('a declaration that is not one stops the start, naming what is wrong', async () => {
    const handle = () => undefined;
    await assert.rejects(
      start({ handle, events: { types: { a: 'string' } } }, { port: 0 }),
      /events\.types\['a'\] must be a JSON Schema object or a Standard Schema/,
    );
    await assert.rejects(start({ handle, events: { passthru: true } }, { port: 0 }), /events\.passthru is not an option/);
    await assert.rejects(start({ handle, events: { idempotency: { key: 'id' } } }, { port: 0 }), /events\.idempotency must be/);
  });
});
