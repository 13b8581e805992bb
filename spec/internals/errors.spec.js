'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { statusOf, errorBody } = require('../../lib/errors.js');

describe('statusOf and errorBody', () => {
  it('takes statusCode, then code, within 400 to 599', () => {
    assert.equal(statusOf({ statusCode: 400 }), 400);
    assert.equal(statusOf({ statusCode: 599 }), 599);
    assert.equal(statusOf({ statusCode: 600 }), 500);
    assert.equal(statusOf({ statusCode: 404.5 }), 500);
    assert.equal(statusOf({ statusCode: '404' }), 500);
    assert.equal(statusOf({ code: 401 }), 401);
    assert.equal(statusOf({ statusCode: 'x', code: 403 }), 403);
    assert.equal(statusOf('x'), 500);
    assert.equal(statusOf(undefined), 500);
  });

  it('a 4xx body carries the message, a 5xx body never does', () => {
    assert.deepEqual(errorBody(400, new Error('bad')), { statusCode: 400, error: 'Bad Request', message: 'bad' });
    assert.deepEqual(errorBody(500, new Error('secret')), { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
    assert.deepEqual(errorBody(404, 'a string'), { statusCode: 404, error: 'Not Found', message: 'Not Found' });
  });
});
