'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { serve, request } = require('./helpers');

// Wrapped in `seen`: an object with a `body` or `headers` key would be a structured response.
function describeContext(ctx) {
  return {
    seen: {
      method: ctx.method,
      path: ctx.path,
      query: { ...ctx.query },
      queryOnContext: { a: ctx.a, list: ctx.list },
      headers: { custom: ctx.headers['x-custom'] },
      httpVersion: ctx.httpVersion,
      httpVersionMajor: ctx.httpVersionMajor,
      httpVersionMinor: ctx.httpVersionMinor,
      reqIsRaw: typeof ctx.req.on === 'function' && ctx.req.url === ctx.path + (ctx.req.url.includes('?') ? ctx.req.url.slice(ctx.req.url.indexOf('?')) : ''),
      contentType: ctx.contentType,
      body: ctx.body,
      cloudevent: ctx.cloudevent ?? null,
      logMethods: ['trace', 'debug', 'info', 'warn', 'error', 'fatal'].every((m) => typeof ctx.log[m] === 'function'),
      hasCloudEventResponse: typeof ctx.cloudEventResponse === 'function',
      rawBody: ctx.rawBody === undefined ? null : typeof ctx.rawBody === 'string' ? ctx.rawBody : 'bytes:' + ctx.rawBody.toString('hex'),
    },
  };
}

describe('context', () => {
  it('carries the function contract fields and path, contentType', async (t) => {
    const { url } = await serve(t, describeContext);
    const res = await request(url + '/some/path?a=1&list=x&list=y', {
      method: 'POST',
      headers: { 'x-custom': 'yes', 'content-type': 'Application/JSON; charset=utf-8' },
      body: '{"k":"v"}',
    });
    assert.deepEqual(res.json.seen, {
      method: 'POST',
      path: '/some/path',
      query: { a: '1', list: ['x', 'y'] },
      queryOnContext: { a: '1', list: ['x', 'y'] },
      headers: { custom: 'yes' },
      httpVersion: '1.1',
      httpVersionMajor: 1,
      httpVersionMinor: 1,
      reqIsRaw: true,
      contentType: 'application/json',
      body: { k: 'v' },
      cloudevent: null,
      logMethods: true,
      hasCloudEventResponse: true,
      rawBody: null,
    });
  });

  it('a query key never replaces a field or method of the context', async (t) => {
    const { url } = await serve(t, (ctx) => ({
      seen: {
        method: ctx.method,
        log: typeof ctx.log.info,
        body: ctx.body ?? null,
        path: ctx.path,
        cloudEventResponse: typeof ctx.cloudEventResponse,
        constructor: typeof ctx.constructor,
        query: { ...ctx.query },
      },
    }));
    const res = await request(url + '/p?method=DELETE&log=x&body=b&path=/q&cloudEventResponse=1&constructor=c&__proto__=z');
    assert.deepEqual(res.json.seen, {
      method: 'GET',
      log: 'function',
      body: null,
      path: '/p',
      cloudEventResponse: 'function',
      constructor: 'function',
      query: { method: 'DELETE', log: 'x', body: 'b', path: '/q', cloudEventResponse: '1', constructor: 'c', ['__proto__']: 'z' },
    });
  });

  it('leads to none of the runtime behind it: no symbol-keyed member, own or inherited, and no getter shows the response or the runtime', async (t) => {
    const { url } = await serve(t, (ctx) => {
      const symbols = [];
      for (let o = ctx; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) symbols.push(...Object.getOwnPropertySymbols(o).map(String));
      const shown = require('node:util').inspect({ ...ctx, req: undefined }, { showHidden: true, getters: true, depth: 3 });
      const getters = Object.entries(Object.getOwnPropertyDescriptors(Object.getPrototypeOf(ctx)))
        .filter(([, d]) => d.get !== undefined)
        .map(([name]) => name);
      const read = getters.filter((name) => name !== 'req').map((name) => require('node:util').inspect(ctx[name], { depth: 3 }));
      return { symbols, shown: /ServerResponse|inFlight/.test(shown), read: read.some((text) => /ServerResponse|inFlight|IncomingMessage/.test(text)) };
    });
    assert.deepEqual((await request(url)).json, { symbols: [], shown: false, read: false });
  });

  it('rawBody is the exact text of a textual body and the exact bytes of any other when includeRaw is on', async (t) => {
    const { url } = await serve(t, describeContext, { includeRaw: true });
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{ "k" : 1 }' });
    assert.equal(res.json.seen.rawBody, '{ "k" : 1 }');
    assert.deepEqual(res.json.seen.body, { k: 1 });
    const form = await request(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'lunch=tacos' });
    assert.equal(form.json.seen.rawBody, 'lunch=tacos');
    const latin1 = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=iso-8859-1' },
      body: Buffer.from([0x63, 0x61, 0x66, 0xe9]),
    });
    assert.equal(latin1.json.seen.rawBody, 'café');
    // Binary data stays bytes: as text, 0xff 0xfe would come back as U+FFFD.
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x41]);
    const bytes = await request(url, { method: 'POST', headers: { 'content-type': 'image/png' }, body: binary });
    assert.equal(bytes.json.seen.rawBody, 'bytes:' + binary.toString('hex'));
    const empty = await request(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '' });
    assert.equal(empty.json.seen.rawBody, '');
    assert.equal((await request(url)).json.seen.rawBody, null);
  });

  it('a query without a body leaves body undefined and query empty when there is none', async (t) => {
    const { url } = await serve(t, (ctx, data) => ({ data: data === undefined, query: Object.keys(ctx.query).length }));
    assert.deepEqual((await request(url)).json, { data: true, query: 0 });
  });

  it("context.req of a request without a body still ends, for a function that reads node's stream itself", { timeout: 10_000 }, async (t) => {
    const { url } = await serve(t, (ctx) => {
      let bytes = 0;
      return new Promise((resolve) => {
        ctx.req.on('data', (chunk) => (bytes += chunk.length));
        ctx.req.on('end', () => resolve({ ended: true, bytes }));
      });
    });
    assert.deepEqual((await request(url)).json, { ended: true, bytes: 0 });
    assert.deepEqual((await request(url, { method: 'DELETE' })).json, { ended: true, bytes: 0 });
  });
});
