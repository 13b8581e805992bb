'use strict';
// The requests in flight (lifecycle/in-flight.ts): what the drain waits for and the grace period names.
const { it } = require('node:test');
const assert = require('node:assert/strict');
const { InFlight } = require('../../lib/lifecycle/in-flight.js');

const response = (name) => ({ name });
const names = (inFlight) => [...inFlight].map(([res, reqId]) => `${res.name}:${reqId}`);

it('keeps requests in arrival order, whichever leaves first, and a second leave changes nothing', () => {
  const inFlight = new InFlight();
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(response);
  inFlight.add(a, 1);
  inFlight.add(b, 2);
  inFlight.add(c, 3);
  inFlight.delete(b);
  assert.deepEqual(names(inFlight), ['a:1', 'c:3']);
  inFlight.delete(b);
  inFlight.delete(d);
  assert.equal(inFlight.size, 2);
  inFlight.delete(a);
  inFlight.delete(c);
  assert.equal(inFlight.size, 0);
  assert.deepEqual(names(inFlight), []);
  inFlight.add(d, 4);
  assert.deepEqual(names(inFlight), ['d:4']);
});

it('a walk goes on past requests that leave during it (as the grace period aborts each)', () => {
  const inFlight = new InFlight();
  const all = ['a', 'b', 'c', 'd'].map(response);
  all.forEach((res, i) => inFlight.add(res, i + 1));
  const seen = [];
  for (const [res] of inFlight) {
    seen.push(res.name);
    // The one walked leaves, and so does the one after it.
    inFlight.delete(res);
    if (res.name === 'a') inFlight.delete(all[1]);
  }
  assert.deepEqual(seen, ['a', 'c', 'd']);
  assert.equal(inFlight.size, 0);
});
