'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { parseMediaType, bodyKind } = require('../../lib/body/media-type.js');

describe('parseMediaType', () => {
  it('lowercases the type and splits off parameters', () => {
    const media = parseMediaType('Application/JSON; Charset=UTF-8');
    assert.equal(media.type, 'application/json');
    assert.equal(media.charset, 'utf-8');
    assert.deepEqual({ ...media.params }, { charset: 'UTF-8' });
  });

  it('reads parameters without a space after the semicolon', () => {
    assert.equal(parseMediaType('application/json;charset=utf-8').type, 'application/json');
    assert.equal(parseMediaType('application/json;charset=utf-8').charset, 'utf-8');
  });

  it('unquotes quoted parameter values', () => {
    const media = parseMediaType('multipart/form-data; boundary="a;b=c"; charset=latin1');
    assert.equal(media.params.boundary, 'a;b=c');
    assert.equal(media.charset, 'latin1');
  });

  it('answers each value for itself when values alternate, repeat or are long (the last value is remembered)', () => {
    const long = `application/json; name="${'x'.repeat(300)}"`;
    for (let round = 0; round < 3; round++) {
      assert.equal(parseMediaType('application/json').type, 'application/json');
      assert.equal(parseMediaType('application/json').charset, undefined);
      assert.equal(parseMediaType('text/plain; charset=latin1').charset, 'latin1');
      assert.equal(parseMediaType('not a type'), undefined);
      assert.equal(parseMediaType(long).params.name, 'x'.repeat(300));
      assert.equal(parseMediaType('Text/XML').type, 'text/xml');
    }
  });

  it('gives undefined for a missing or malformed value', () => {
    assert.equal(parseMediaType(undefined), undefined);
    assert.equal(parseMediaType(''), undefined);
    assert.equal(parseMediaType('json'), undefined);
    assert.equal(parseMediaType('application/json extra'), undefined);
  });
});

describe('bodyKind', () => {
  const kinds = {
    'application/json': 'json',
    'application/ld+json': 'json',
    'application/cloudevents+json': 'json',
    'application/xml': 'xml',
    'text/xml': 'xml',
    'application/atom+xml': 'xml',
    'text/plain': 'text',
    'text/csv': 'text',
    'text/html': 'text',
    'application/x-www-form-urlencoded': 'form',
    'application/octet-stream': 'binary',
    'image/png': 'binary',
    'multipart/form-data; boundary=x': 'binary',
  };
  for (const [type, kind] of Object.entries(kinds)) {
    it(`${type} is parsed as ${kind}`, () => assert.equal(bodyKind(parseMediaType(type)), kind));
  }
  it('no content type is binary', () => assert.equal(bodyKind(undefined), 'binary'));
});
