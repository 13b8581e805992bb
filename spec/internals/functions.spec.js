'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { queryInput } = require('../../lib/routing/functions.js');

describe('queryInput', () => {
  it('nests by dots, lists by repeats, lists of objects by index order', () => {
    assert.deepEqual(queryInput({ 'a.b.c': '1', l: ['x', 'y'], 'k.10.n': 'ten', 'k.2.n': 'two' }), {
      a: { b: { c: '1' } },
      l: ['x', 'y'],
      k: [{ n: 'two' }, { n: 'ten' }],
    });
  });

  it('a schema that declares an object keeps numeric keys as a map', () => {
    const schema = { type: 'object', properties: { m: { type: 'object' } } };
    assert.deepEqual(queryInput({ 'm.1': 'a', 'm.2': 'b' }, schema), { m: { 1: 'a', 2: 'b' } });
  });

  it('conflicting and dangerous keys are a 400', () => {
    assert.throws(
      () => queryInput({ a: '1', 'a.b': '2' }),
      (e) => e.statusCode === 400,
    );
    assert.throws(
      () => queryInput({ '__proto__.x': '1' }),
      (e) => e.statusCode === 400,
    );
    assert.throws(
      () => queryInput({ 'a..b': '1' }),
      (e) => e.statusCode === 400,
    );
    assert.equal({}.x, undefined);
  });
});
