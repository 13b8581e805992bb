'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { Router } = require('../../lib/routing/router.js');

describe('Router.find', () => {
  const router = new Router()
    .add('GET', '/items', 'list')
    .add('POST', '/items', 'create')
    .add('GET', '/items/:id', 'show')
    .add('DELETE', '/items/:id', 'remove')
    .add('GET', '/files/*', 'file')
    .add('*', '/any', 'any')
    .add('GET', '/opt/:name?', 'optional');

  it('finds a static route by method', () => {
    assert.deepEqual(router.find('GET', '/items'), { kind: 'found', handler: 'list', params: {} });
    assert.deepEqual(router.find('POST', '/items'), { kind: 'found', handler: 'create', params: {} });
  });

  it('gives path parameters, percent-decoded', () => {
    assert.deepEqual(router.find('GET', '/items/a%20b'), { kind: 'found', handler: 'show', params: { id: 'a b' } });
  });

  it('a trailing slash matches the same route', () => {
    assert.equal(router.find('GET', '/items/').handler, 'list');
    assert.equal(router.find('GET', '/items/7/').handler, 'show');
  });

  it('HEAD falls back to GET', () => {
    assert.equal(router.find('HEAD', '/items/7').handler, 'show');
  });

  it('a path that matches with another method lists the allowed methods', () => {
    assert.deepEqual(router.find('PUT', '/items'), { kind: 'method', allow: ['GET', 'HEAD', 'POST'] });
    assert.deepEqual(router.find('POST', '/items/7'), { kind: 'method', allow: ['GET', 'HEAD', 'DELETE'] });
  });

  it('no match is none', () => {
    assert.deepEqual(router.find('GET', '/nothing'), { kind: 'none' });
    assert.deepEqual(router.find('GET', '/items/7/extra'), { kind: 'none' });
  });

  it('a wildcard takes the rest of the path; * as method takes every method', () => {
    assert.deepEqual(router.find('GET', '/files/a/b.txt').params, { '*': 'a/b.txt' });
    assert.equal(router.find('PATCH', '/any').handler, 'any');
  });

  it('an optional parameter may be absent', () => {
    assert.deepEqual(router.find('GET', '/opt').params, {});
    assert.deepEqual(router.find('GET', '/opt/x').params, { name: 'x' });
  });

  it('does not treat regular expression characters in a path as patterns', () => {
    const r = new Router().add('GET', '/a.b', 1);
    assert.equal(r.find('GET', '/axb').kind, 'none');
    assert.equal(r.find('GET', '/a.b').kind, 'found');
  });
});
