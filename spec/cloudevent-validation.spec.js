'use strict';
// Received CloudEvents are checked as the CloudEvents spec defines them, never repaired: a bad
// attribute is a 400 naming it, data_base64 is strict base64, times are real times, integers
// 32-bit; what is valid (a leap second, 0.3 attributes) goes back out as it came.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { serve, startServer, request } = require('./helpers');

const structured = (event) => ({ method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
const event = (extra) => ({ specversion: '1.0', id: '1', source: '/spec', type: 'spec.test', ...extra });

describe('CloudEvent attributes as the spec defines them', () => {
  let server;
  before(async () => {
    server = await startServer((ctx, data) => ({
      data: Buffer.isBuffer(data) ? { bytes: data.toString('utf8') } : data,
      attributes: { ...ctx.cloudevent, data: undefined },
    }));
  });
  after(() => server.close());

  it('a ce-data header is not data: 400 naming it', async () => {
    const answer = await request(server.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-data': 'forged', 'content-type': 'application/json' },
      body: '{"real":true}',
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.attribute, 'data');
  });

  it("a ce-__proto__ header is an attribute refused by its name, a structured event's __proto__ member as any JSON's is, and ce-constructor as reserved", async () => {
    const binary = (name) =>
      request(server.url, {
        method: 'POST',
        headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', [name]: 'x', 'content-type': 'application/json' },
        body: '{"real":true}',
      });
    const byHeader = await binary('ce-__proto__');
    assert.equal(byHeader.status, 400);
    assert.match(byHeader.json.message, /invalid attribute name '__proto__'/);
    const byMember = await request(server.url, structured({ ...event(), ['__proto__']: 'x' }));
    assert.equal(byMember.status, 400);
    assert.equal(byMember.json.message, 'Object contains forbidden prototype property');
    // constructor is a valid name (a-z), but it names a method of the event.
    const reserved = await binary('ce-constructor');
    assert.equal(reserved.status, 400);
    assert.match(reserved.json.message, /'constructor' is reserved/);
    const valid = await binary('ce-tenant');
    assert.equal(valid.status, 200);
    assert.equal(valid.json.attributes.tenant, 'x');
  });

  for (const [text, why] of [
    ['abcde', 'a length no bytes have'],
    ['a===', 'three padding characters'],
    ['ab=c', 'padding in the middle'],
    ['ab-_', 'the URL alphabet'],
    ['YWJj!', 'a character outside the alphabet'],
  ]) {
    it(`data_base64 with ${why} (${JSON.stringify(text)}) is a 400`, async () => {
      const answer = await request(server.url, structured(event({ data_base64: text })));
      assert.equal(answer.status, 400);
      assert.equal(answer.json.attribute, 'data_base64');
    });
  }

  for (const text of ['aGVsbG8=', 'aGVsbG8', 'aGVs\nbG8=']) {
    it(`data_base64 ${JSON.stringify(text)} decodes to the bytes it encodes`, async () => {
      const answer = await request(server.url, structured(event({ data_base64: text })));
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.json.data, { bytes: 'hello' });
    });
  }

  for (const time of [
    '2020-02-30T00:00:00Z',
    '2021-02-29T00:00:00Z',
    '2020-01-01T24:00:00Z',
    '2020-13-01T00:00:00Z',
    '2020-01-01T00:00:00+24:00',
    '2020-00-10T00:00:00Z',
  ]) {
    it(`time ${time} is not a time: 400`, async () => {
      const answer = await request(server.url, structured(event({ time })));
      assert.equal(answer.status, 400);
      assert.equal(answer.json.attribute, 'time');
    });
  }

  it('a leap day and a leap second are times', async () => {
    for (const time of ['2020-02-29T12:00:00Z', '2016-12-31T23:59:60Z', '2020-01-01T00:00:00.123+05:30']) {
      assert.equal((await request(server.url, structured(event({ time })))).status, 200, time);
    }
  });

  it('an invalid attribute name is quoted in the 400 cut at 40 characters and escaped, in the message and the attribute', async () => {
    const long = await request(server.url, structured(event({ [`Bad${'x'.repeat(500_000)}`]: 'v' })));
    assert.equal(long.status, 400);
    assert.ok(long.text.length < 1000, `${long.text.length} characters`);
    assert.equal(long.json.attribute, `Bad${'x'.repeat(37)}…`);
    assert.match(long.json.message, /invalid attribute name 'Badx{37}…': only a-z and 0-9 are allowed/);
    const hostile = await request(server.url, structured(event({ 'bad\nname\u001b[2J\u0085\u202e': 'v' })));
    assert.equal(hostile.status, 400);
    assert.equal(hostile.json.attribute, 'bad\\nname\\u001b[2J\\u0085\\u202e');
    assert.ok(hostile.json.message.includes("'bad\\nname\\u001b[2J\\u0085\\u202e'"), hostile.json.message);
    assert.ok(!/[\n\u001b\u0085\u202e]/.test(hostile.text), hostile.text);
  });

  it('a long extension attribute name of a wrong type is quoted cut in the 400', async () => {
    const answer = await request(server.url, structured(event({ [`e${'x'.repeat(100_000)}`]: 1.5 })));
    assert.equal(answer.status, 400);
    assert.ok(answer.text.length < 1000, `${answer.text.length} characters`);
    assert.equal(answer.json.attribute, `e${'x'.repeat(39)}…`);
  });

  it('integer extensions are 32-bit: 2^31 is a 400, 2^31 - 1 and -2^31 pass', async () => {
    assert.equal((await request(server.url, structured(event({ big: 2 ** 31 })))).status, 400);
    assert.equal((await request(server.url, structured(event({ big: 2 ** 31 - 1, small: -(2 ** 31) })))).status, 200);
  });

  it('specversion 0.3 data with datacontentencoding base64 is decoded', async () => {
    const answer = await request(
      server.url,
      structured({
        specversion: '0.3',
        id: '1',
        source: '/s',
        type: 't',
        datacontenttype: 'application/octet-stream',
        datacontentencoding: 'base64',
        data: 'aGVsbG8=',
      }),
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json.data, { bytes: 'hello' });
  });

  it('specversion 0.3 base64 data that is not base64 is a 400', async () => {
    const answer = await request(server.url, structured({ specversion: '0.3', id: '1', source: '/s', type: 't', datacontentencoding: 'base64', data: '!!!' }));
    assert.equal(answer.status, 400);
  });

  it('ce-datacontenttype in binary mode is a 400 (it is the Content-Type header there)', async (t) => {
    const own = await serve(t, (ctx) => ctx.cloudevent);
    const answer = await request(own.url, {
      method: 'POST',
      headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't', 'ce-datacontenttype': 'text/html%0D%0ASet-Cookie:%20x=1' },
      body: 'x',
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.attribute, 'datacontenttype');
  });

  it('an extension attribute named like a method of the event is a 400', async (t) => {
    const own = await serve(t, () => 'ok');
    for (const name of ['validate', 'emit', 'constructor']) {
      const answer = await request(own.url, structured(event({ [name]: 'x' })));
      assert.equal(answer.status, 400, name);
      assert.equal(answer.json.attribute, name);
    }
  });

  it('an echoed structured event with data_base64 and a leap second, or 0.3 attributes, is sent back as it came', async (t) => {
    const own = await serve(t, (ctx) => ctx.cloudevent);
    for (const event of [
      { specversion: '1.0', id: '1', source: '/s', type: 't', time: '2016-12-31T23:59:60Z', data_base64: 'aGk=' },
      { specversion: '0.3', id: '1', source: '/s', type: 't', schemaurl: 'https://example.test/s', data_base64: 'aGk=' },
      { specversion: '1.0', id: '1', source: '/s', type: 't', data: { a: 1 } },
    ]) {
      const answer = await request(own.url, structured(event));
      assert.equal(answer.status, 200, JSON.stringify(event));
      assert.deepEqual(answer.json, event, 'nothing invented, nothing reformatted');
    }
  });

  it('a unique 512 KiB datacontenttype per event is not kept: memory stays flat', async (t) => {
    const v8 = require('node:v8');
    v8.setFlagsFromString('--expose-gc');
    const gc = require('node:vm').runInNewContext('gc');
    const own = await serve(t, () => 'ok', { bodyLimit: 2_000_000 });
    const send = (i) => request(own.url, structured(event({ datacontenttype: `text/plain; x=${String(i).padEnd(512 * 1024, 'y')}`, data: 'd' })));
    await send(-1);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 40; i++) assert.equal((await send(i)).status, 200);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.ok(grown < 10 * 1024 * 1024, `heap grew by ${(grown / 1048576).toFixed(1)} MB`);
  });
});
