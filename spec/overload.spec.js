'use strict';
// Overload: readiness answers 503 while the event loop runs late, so the platform sends the
// requests elsewhere; liveness is not affected.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { serve, request } = require('./helpers');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('overload', () => {
  it('readiness answers 503 while the event loop runs late, and 200 again after', async (t) => {
    const { url, log } = await serve(
      t,
      (ctx) => {
        const until = Date.now() + Number(ctx.query.ms);
        while (Date.now() < until); // a handler that hogs the CPU
        return 'done';
      },
      { maxEventLoopDelay: 200 },
    );
    assert.equal((await request(url + '/health/readiness')).status, 200);
    const blocking = request(url + '/?ms=900');
    await sleep(50);
    const during = await request(url + '/health/readiness');
    await blocking;
    assert.equal(during.status, 503);
    assert.ok(log.entries().some((e) => e.msg === 'not ready: the event loop is running late' && e.eventLoopDelay > 200));
    let after = 503;
    for (let i = 0; i < 20 && after !== 200; i++) {
      await sleep(100);
      after = (await request(url + '/health/readiness')).status;
    }
    assert.equal(after, 200);
    assert.equal((await request(url + '/health/liveness')).status, 200, 'liveness is not affected');
  });
});
