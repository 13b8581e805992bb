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

  it('an object declared through a local $ref, a type list or a branch keeps numeric keys as a map', () => {
    const map = { type: 'object', additionalProperties: { type: 'integer' } };
    const schemas = {
      $ref: { type: 'object', properties: { m: { $ref: '#/$defs/scores' } }, $defs: { scores: map } },
      'escaped pointer': { type: 'object', properties: { m: { $ref: '#/$defs/a~1b%20c' } }, $defs: { 'a/b c': map } },
      'type list': { type: 'object', properties: { m: { type: ['object', 'null'] } } },
      anyOf: { type: 'object', properties: { m: { anyOf: [{ type: 'null' }, map] } } },
      allOf: { type: 'object', properties: { m: { allOf: [{ $ref: '#/definitions/scores' }] } }, definitions: { scores: map } },
    };
    for (const [how, schema] of Object.entries(schemas)) assert.deepEqual(queryInput({ 'm.1': '5', 'm.2': '6' }, schema), { m: { 1: '5', 2: '6' } }, how);
    // A list's items found through a $ref too: each index is an object with its own keys.
    const listed = {
      type: 'object',
      properties: { k: { $ref: '#/$defs/kids' } },
      $defs: { kids: { type: 'array', items: { $ref: '#/$defs/kid' } }, kid: { type: 'object', properties: { 1: { type: 'string' } } } },
    };
    assert.deepEqual(queryInput({ 'k.1.1': 'x', 'k.2.1': 'y' }, listed), { k: [{ 1: 'x' }, { 1: 'y' }] });
  });

  it('a $ref cycle, or one to nothing, reads the value without it', () => {
    const cycle = { type: 'object', properties: { m: { $ref: '#/$defs/a' } }, $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } };
    assert.deepEqual(queryInput({ 'm.1': 'a' }, cycle), { m: ['a'] });
    const dangling = { type: 'object', properties: { m: { $ref: '#/$defs/none' } } };
    assert.deepEqual(queryInput({ 'm.1': 'a' }, dangling), { m: ['a'] });
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
