'use strict';
// Every event funcrun answers with is made one way (CloudEventResponse): a handler's
// cloudEventResponse() and a named function's output alike; bytes in any view are binary data.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { serve } = require('./helpers');

const EVENT = { 'ce-id': '1', 'ce-source': '/test', 'ce-specversion': '1.0', 'content-type': 'application/json' };

describe('outgoing events', () => {
  it('cloudEventResponse() with a Uint8Array answers its bytes as application/octet-stream', async (t) => {
    const { url } = await serve(t, (context) =>
      context
        .cloudEventResponse(new Uint8Array([104, 105]))
        .type('dev.test.bytes')
        .response(),
    );
    const res = await fetch(url, { method: 'POST', headers: { ...EVENT, 'ce-type': 'dev.test.in' }, body: '{}' });
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.equal(res.headers.get('ce-type'), 'dev.test.bytes');
    assert.equal(await res.text(), 'hi');
  });

  it("a named function's output answers an event as the same kind of event: fresh id, time, <name>.output", async (t) => {
    const { url } = await serve(t, { functions: { bytes: () => new Uint8Array([104, 105]), json: () => ({ ok: true }) } });
    const bytes = await fetch(url, { method: 'POST', headers: { ...EVENT, 'ce-type': 'bytes' }, body: '{}' });
    assert.equal(bytes.status, 200);
    assert.equal(bytes.headers.get('content-type'), 'application/octet-stream');
    assert.equal(bytes.headers.get('ce-type'), 'bytes.output');
    assert.equal(bytes.headers.get('ce-source'), 'bytes');
    assert.match(bytes.headers.get('ce-id'), /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(bytes.headers.get('ce-time'))));
    assert.equal(await bytes.text(), 'hi');
    const json = await fetch(url, { method: 'POST', headers: { ...EVENT, 'ce-type': 'json', 'ce-specversion': '0.3' }, body: '{}' });
    assert.equal(json.headers.get('content-type'), 'application/json');
    assert.equal(json.headers.get('ce-specversion'), '0.3');
    assert.deepEqual(await json.json(), { ok: true });
  });
});
