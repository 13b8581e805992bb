'use strict';
// XML bodies over real HTTP: a Document for the function, and hostile documents a short 400 while
// the server keeps answering.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { startServer, request, fill, grow } = require('./helpers');

describe('XML bodies over HTTP', () => {
  let server;
  before(async () => {
    server = await startServer((context, body) => ({ type: typeof body, root: body?.documentElement?.nodeName ?? null }), { bodyLimit: 2_000_000 });
  });
  after(() => server.close());

  const post = (body) => request(server.url + '/', { method: 'POST', headers: { 'content-type': 'application/xml' }, body });

  it('well-formed XML reaches the function as a Document', async () => {
    const res = await post('<?xml version="1.0"?><s:Envelope xmlns:s="urn:s"><s:Body><![CDATA[x]]>&amp;&#x41;</s:Body></s:Envelope>');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { type: 'object', root: 's:Envelope' });
  });

  it('a document without a charset parameter is read in the encoding its byte order mark or declaration names; the parameter wins', async (t) => {
    const own = await startServer((context, body) => ({ text: body?.documentElement?.textContent ?? null }));
    t.after(() => own.close());
    const send = (bytes, type = 'application/xml') => request(own.url + '/', { method: 'POST', headers: { 'content-type': type }, body: bytes });
    const latin1 = Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?><a>caf\u00e9</a>', 'latin1');
    assert.deepEqual((await send(latin1)).json, { text: 'caf\u00e9' });
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<?xml version="1.0" encoding="UTF-16"?><a>caf\u00e9</a>', 'utf16le')]);
    assert.deepEqual((await send(utf16)).json, { text: 'caf\u00e9' });
    // The parameter says UTF-8, and the declaration's Latin-1 byte is no UTF-8: the parameter wins.
    assert.equal((await send(latin1, 'application/xml; charset=utf-8')).status, 400);
    const unknown = await send(Buffer.from('<?xml version="1.0" encoding="x-unknown-9"?><a/>'));
    assert.equal(unknown.status, 415);
    assert.equal(unknown.json.code, 'FUNCRUN_UNSUPPORTED_CHARSET');
    // Without a declaration or a mark, UTF-8.
    assert.deepEqual((await send(Buffer.from('<a>caf\u00e9</a>'))).json, { text: 'caf\u00e9' });
  });

  const bodies = {
    'nested namespace declarations': () => grow((n) => `<a xmlns:p${n}="u">`),
    'all <': () => fill('<'),
    'all <a>': () => fill('<a>'),
    'a long run of &': () => '<a>' + fill('&') + '</a>',
  };
  for (const [title, make] of Object.entries(bodies)) {
    it(`1 MB of ${title}: a short 400 JSON, and liveness is answered within 1 s meanwhile`, async () => {
      let done = false;
      const answer = post(make()).finally(() => {
        done = true;
      });
      // Probe until the hostile body is answered, so that some probe lands while it is parsed.
      const latencies = [];
      do {
        const started = performance.now();
        const probe = await request(server.url + '/health/liveness');
        latencies.push(performance.now() - started);
        assert.equal(probe.status, 200);
        await new Promise((resolve) => setTimeout(resolve, 10));
      } while (!done);
      const res = await answer;
      assert.ok(Math.max(...latencies) < 1000, `liveness took ${latencies.map(Math.round).join(', ')} ms`);
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(res.json.statusCode, 400);
      assert.ok(res.text.length < 400, `${res.text.length} characters`);
      assert.ok(res.json.message.length < 300);
      assert.match(res.json.message, /^invalid XML at line \d+, column \d+: /);
      assert.equal(typeof res.json.line, 'number');
      assert.equal(typeof res.json.column, 'number');
    });
  }
});
