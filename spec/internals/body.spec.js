'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { parseForm } = require('../../lib/body/body.js');
const { findJsonError } = require('../../lib/body/json.js');

describe('findJsonError', () => {
  const cases = [
    ['{"a":1,}', 7],
    ['[1,2', 4],
    ['{"a" 1}', 5],
    ['tru', 3],
    ['"unterminated', 13],
    ['{"a":"\\x"}', 7],
    ['[1] x', 4],
    ['', 0],
    ['-', 1],
    ['01', 1],
    ['{"a":[}', 6],
    ['[{]', 2],
    ['{"a":1}}', 7],
  ];
  for (const [text, position] of cases) {
    it(`finds the error in ${JSON.stringify(text)} at ${position}`, () => {
      assert.throws(() => JSON.parse(text));
      assert.equal(findJsonError(text), position);
    });
  }
  it('agrees with V8 on where the error is, for every case above', () => {
    for (const [text, position] of cases) {
      if (text === '') continue;
      const at = /position (\d+)/.exec(
        (() => {
          try {
            JSON.parse(text);
          } catch (e) {
            return e.message;
          }
        })(),
      );
      if (at) assert.equal(position, Number(at[1]), text);
    }
  });
  it('does not overflow the stack on malformed JSON nested 200,000 deep', () => {
    const text = '['.repeat(200_000) + '}';
    assert.equal(findJsonError(text), 200_000);
    const object = '{"a":'.repeat(100_000) + 'x';
    assert.equal(findJsonError(object), object.length - 1);
  });
});

describe('parseForm', () => {
  it('a long form reads the same fields as a short one: a name alone has the value "", empty fields are none', () => {
    const fields = 'a&b=1&&c&a=2&d=x%3Dy&e+f&';
    const expected = { a: ['', '2'], b: '1', c: '', d: 'x=y', 'e f': '' };
    assert.deepEqual({ ...parseForm(fields) }, expected);
    const pad = 'x'.repeat(5000);
    assert.deepEqual({ ...parseForm(`${fields}&pad=${pad}`) }, { ...expected, pad });
    assert.deepEqual({ ...parseForm(`pad&${fields}${pad}`) }, { ...expected, pad: '', [`${pad}`]: '' });
  });
});
