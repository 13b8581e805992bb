'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { violationsOf, quoteName, MAX_VIOLATIONS } = require('../../lib/routing/schema.js');

const error = (keyword, params, instancePath = '') => ({ keyword, instancePath, params, message: `ajv's message for ${keyword}` });

describe('violationsOf', () => {
  it("names the key of each kind whose key ajv knows, in 2019 and 2020 dialects' keywords too", () => {
    assert.deepEqual(
      violationsOf([
        error('additionalProperties', { additionalProperty: 'extra' }, '/order'),
        error('unevaluatedProperties', { unevaluatedProperty: 'later' }),
        error('dependentRequired', { property: 'card', missingProperty: 'cvc', depsCount: 1, deps: 'cvc' }),
        error('required', { missingProperty: 'id' }, '/lines/0'),
        error('propertyNames', { propertyName: 'Bad' }),
        error('minimum', { comparison: '>=', limit: 0 }, '/total'),
      ]),
      [
        { field: 'order', description: "must NOT have additional property 'extra'" },
        { field: '(input)', description: "must NOT have unevaluated property 'later'" },
        { field: '(input)', description: "'cvc' is required when 'card' is present" },
        { field: 'lines.0', description: "'id' is required" },
        { field: '(input)', description: "property name 'Bad' is invalid" },
        { field: 'total', description: "ajv's message for minimum" },
      ],
    );
  });

  it('lists at most MAX_VIOLATIONS, and at most ten allowed values of an enum', () => {
    const many = Array.from({ length: 200 }, (_, i) => error('additionalProperties', { additionalProperty: `k${i}` }));
    assert.equal(violationsOf(many).length, MAX_VIOLATIONS);
    const [listed] = violationsOf([error('enum', { allowedValues: Array.from({ length: 30 }, (_, i) => i) })]);
    assert.equal(listed.description, 'must be equal to one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, …');
  });
});

describe('quoteName', () => {
  it('escapes quotes, backslashes, control characters, line separators and half surrogate pairs', () => {
    assert.equal(quoteName(`it's`), `'it\\'s'`);
    assert.equal(quoteName('a\\b\n\r\t\u0000\u001b\u007f\u2028\u2029'), `'a\\\\b\\n\\r\\t\\u0000\\u001b\\u007f\\u2028\\u2029'`);
    assert.equal(quoteName('x\ud800y\udc00'), `'x\\ud800y\\udc00'`);
    assert.equal(quoteName('\ud83d\ude00 ok'), `'\ud83d\ude00 ok'`);
  });

  it('cuts a long key at 40 characters, never inside a surrogate pair', () => {
    assert.equal(quoteName('k'.repeat(1_000_000)), `'${'k'.repeat(40)}…'`);
    assert.equal(quoteName('k'.repeat(39) + '\ud83d\ude00'), `'${'k'.repeat(39)}…'`);
    assert.equal(quoteName('k'.repeat(40)), `'${'k'.repeat(40)}'`);
  });
});
